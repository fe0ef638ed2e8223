"""``rollchat compact ID --json`` answered from its cache before typer is imported
(cli/compact_cached.py), as a script runs it (a process): the same object as the ordinary way,
without importing typer, the tokenizer or the transcript parser, and never a stale one."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.compact_fixtures import OFFLINE_CONFIG, Sessions, make_sessions
from tests.e2e import clean_env


@pytest.fixture
def sessions(tmp_path: Path) -> Sessions:
    return make_sessions(tmp_path / "sessions")


def compact(sessions: Sessions, tmp_path: Path, *args: str,
            importtime: bool = False) -> subprocess.CompletedProcess[str]:
    config = tmp_path / "rollchat.yml"
    config.write_text(OFFLINE_CONFIG, encoding="utf-8")
    flags = ["-X", "importtime"] if importtime else []
    return subprocess.run([sys.executable, *flags, "-m", "rollchat", "compact", *args,
                           "--sessions-dir", str(sessions.root), "--config", str(config)],
                          cwd=str(tmp_path), capture_output=True, text=True, timeout=60,
                          env=clean_env(tmp_path / "home"), stdin=subprocess.DEVNULL)


def imported(stderr: str) -> set[str]:
    return {line.split("|")[-1].strip() for line in stderr.splitlines()
            if line.startswith("import time:")}


def as_json(done: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    assert done.returncode == 0, done.stderr
    data: dict[str, Any] = json.loads(done.stdout)
    return data


def test_the_second_answer_comes_from_the_cache_without_the_heavy_imports(
        sessions: Sessions, tmp_path: Path) -> None:
    first = compact(sessions, tmp_path, sessions.parent, "--json", importtime=True)
    assert {"typer", "tiktoken"} <= imported(first.stderr)  # the ordinary way fills the cache
    second = compact(sessions, tmp_path, sessions.parent, "--json", importtime=True)
    assert as_json(second) == as_json(first)
    assert second.stdout == first.stdout.replace("\r\n", "\n")  # byte for byte
    heavy = {"typer", "click", "tiktoken", "rollchat.storage.transcript", "rollchat.domain"}
    assert not heavy & imported(second.stderr)


def test_a_changed_session_is_answered_again_not_from_a_stale_entry(
        sessions: Sessions, tmp_path: Path) -> None:
    before = as_json(compact(sessions, tmp_path, sessions.parent, "--json"))
    path = sessions.root / f"{sessions.parent}.md"
    text = path.read_text(encoding="utf-8")
    old_title = before["title"]
    path.write_text(text.replace(old_title, "A new title for the limiter"), encoding="utf-8")
    after = compact(sessions, tmp_path, sessions.parent, "--json", importtime=True)
    assert as_json(after)["title"] == "A new title for the limiter"
    assert "typer" in imported(after.stderr)  # the ordinary way answered it


@pytest.mark.parametrize("args", [["--json", "--focus", "x"], ["--json", "--refresh"], []])
def test_other_command_lines_go_the_ordinary_way(sessions: Sessions, tmp_path: Path,
                                                args: list[str]) -> None:
    compact(sessions, tmp_path, sessions.parent, "--json")
    done = compact(sessions, tmp_path, sessions.parent, *args, importtime=True)
    assert "typer" in imported(done.stderr)


def test_a_session_number_goes_the_ordinary_way(sessions: Sessions, tmp_path: Path) -> None:
    compact(sessions, tmp_path, "2", "--json")
    done = compact(sessions, tmp_path, "2", "--json", importtime=True)
    assert "typer" in imported(done.stderr) and as_json(done)["session"]
