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
from tests.e2e import clean_env, run_piped


@pytest.fixture
def sessions(tmp_path: Path) -> Sessions:
    return make_sessions(tmp_path / "sessions")


def compact(sessions: Sessions, tmp_path: Path, *args: str, importtime: bool = False,
            config: str | None = OFFLINE_CONFIG,
            **env: str) -> subprocess.CompletedProcess[str]:
    """``rollchat compact *args`` in ``tmp_path``; with ``config`` written to a file named by
    --config, or (None) with no config file at all and the sessions in ./sessions. With
    ``importtime``, a new interpreter that reports what it imports (what the test looks at);
    otherwise forked by the tests' fork server (run_piped: the same process, without paying
    the imports: the runs that fill the cache or write the record)."""
    named: list[str] = []
    if config is not None:
        path = tmp_path / "named.yml"
        if not path.exists() or path.read_text(encoding="utf-8") != config:
            path.write_text(config, encoding="utf-8")
        named = ["--sessions-dir", str(sessions.root), "--config", str(path)]
    environment = clean_env(tmp_path / "home", **env)
    if not importtime:
        return run_piped(tmp_path, None, "compact", *args, *named, env=environment)
    return subprocess.run([sys.executable, "-X", "importtime", "-m", "rollchat", "compact",
                           *args, *named], cwd=str(tmp_path), capture_output=True, text=True,
                          timeout=60, env=environment, stdin=subprocess.DEVNULL)


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


@pytest.mark.parametrize("args", [["--json", "--refresh"], [], ["--json", "--max-words", "x"]])
def test_other_command_lines_go_the_ordinary_way(sessions: Sessions, tmp_path: Path,
                                                args: list[str]) -> None:
    compact(sessions, tmp_path, sessions.parent, "--json")
    done = compact(sessions, tmp_path, sessions.parent, *args, importtime=True)
    assert "typer" in imported(done.stderr)


def test_a_session_number_or_part_of_an_id_is_answered_through_the_index(
        sessions: Sessions, tmp_path: Path) -> None:
    """Issue 36 item 7: ``compact 2 --json`` from its cache as quickly as by id: the number
    resolved through the sessions index, no typer, no parser of the whole transcript."""
    first = compact(sessions, tmp_path, sessions.parent, "--json")
    for ref in ("2", sessions.parent[-4:]):  # (the parent is the older one: number 2)
        done = compact(sessions, tmp_path, ref, "--json", importtime=True)
        assert done.stdout == first.stdout, ref
        assert not {"typer", "tiktoken"} & imported(done.stderr)
    missing = compact(sessions, tmp_path, "7", "--json", importtime=True)  # the ordinary way
    assert missing.returncode == 2 and "between 1 and 2" in missing.stderr
    assert "typer" in imported(missing.stderr)


def cached(answer: dict[str, Any]) -> dict[str, Any]:
    """A model's summary as the ordinary way answers it from its cache."""
    assert answer["method"] == "model" and answer["cached"] is False
    return {**answer, "cached": True}


@pytest.mark.parametrize("asked", [["--focus", "port"], ["--max-words", "60"],
                                   ["--focus", " port ", "--max-words=60"]],
                         ids=["focus", "size", "both"])
def test_a_focused_or_sized_summary_is_answered_from_the_cache(
        sessions: Sessions, tmp_path: Path, asked: list[str]) -> None:
    """Issue 36 item 7: ``compact ID --json --focus F`` (the child: its parent's summary is
    part of the key) from its cache, by id and by number, as the ordinary way answers it."""
    first = as_json(compact(sessions, tmp_path, sessions.child, "--json", *asked))
    recorded(sessions, tmp_path)  # (the configuration recalled from now on)
    for ref in (sessions.child, "1"):
        done = compact(sessions, tmp_path, ref, "--json", *asked, importtime=True)
        assert as_json(done) == cached(first), ref
        assert not {"typer", "tiktoken", "rollchat.config.load"} & imported(done.stderr)
    other = compact(sessions, tmp_path, sessions.child, "--json", "--focus", "syslog",
                    importtime=True)  # not in the cache: the ordinary way writes it
    assert "typer" in imported(other.stderr) and as_json(other)["focus"] == "syslog"


def test_a_focused_summary_whose_parent_is_gone_is_answered_the_ordinary_way(
        sessions: Sessions, tmp_path: Path) -> None:
    first = as_json(compact(sessions, tmp_path, sessions.child, "--json", "--focus", "port"))
    (sessions.root / f"{sessions.parent}.md").unlink()
    done = compact(sessions, tmp_path, sessions.child, "--json", "--focus", "port",
                   importtime=True)
    assert "typer" in imported(done.stderr)  # the key without the parent's block: a miss
    assert as_json(done)["notes"] and as_json(done)["summary"] != "" and first["notes"] == []


# The configuration recalled (config.recall): the loader skipped while nothing it read changed.
LOADER = {"rollchat.config.load", "dataclasses", "platformdirs"}


def recorded(sessions: Sessions, tmp_path: Path, **kwargs: Any) -> str:
    """The answer after the runs that fill the cache (the ordinary way) and write the record
    (the loader): the next run recalls the configuration."""
    first = compact(sessions, tmp_path, sessions.parent, "--json", **kwargs)
    second = compact(sessions, tmp_path, sessions.parent, "--json", importtime=True, **kwargs)
    assert "rollchat.config.load" in imported(second.stderr)
    assert as_json(second) == as_json(first)
    return second.stdout


@pytest.mark.parametrize("config", [OFFLINE_CONFIG, None], ids=["named", "none"])
def test_a_recalled_configuration_answers_byte_for_byte_without_the_loader(
        sessions: Sessions, tmp_path: Path, config: str | None) -> None:
    answer = recorded(sessions, tmp_path, config=config)
    third = compact(sessions, tmp_path, sessions.parent, "--json", importtime=True,
                    config=config)
    assert third.stdout == answer and as_json(third)["session"] == sessions.parent
    assert not LOADER & imported(third.stderr)


def test_a_changed_config_file_is_loaded_again(sessions: Sessions, tmp_path: Path) -> None:
    answer = recorded(sessions, tmp_path)
    # the summaries now written by another model: the recalled one would name the old key
    changed = OFFLINE_CONFIG + "summary:\n  model: offline-b\n"
    after = compact(sessions, tmp_path, sessions.parent, "--json", importtime=True,
                    config=changed)
    assert {"rollchat.config.load", "typer"} <= imported(after.stderr)  # a miss: ordinary way
    assert as_json(after)["session"] == sessions.parent
    same = compact(sessions, tmp_path, sessions.parent, "--json", importtime=True,
                   config=OFFLINE_CONFIG + "# a comment\n")  # same values, other bytes
    assert "rollchat.config.load" in imported(same.stderr) and same.stdout == answer


def test_a_config_file_that_appears_is_loaded(sessions: Sessions, tmp_path: Path) -> None:
    answer = recorded(sessions, tmp_path, config=None)  # ./rollchat.yml looked for, absent
    (tmp_path / "rollchat.yml").write_text(OFFLINE_CONFIG, encoding="utf-8")
    after = compact(sessions, tmp_path, sessions.parent, "--json", importtime=True, config=None)
    assert "rollchat.config.load" in imported(after.stderr)
    (tmp_path / "rollchat.yml").unlink()  # the record now names the file's bytes
    for loader in (True, False):  # loaded (and recorded again), then recalled
        done = compact(sessions, tmp_path, sessions.parent, "--json", importtime=True,
                       config=None)
        assert ("rollchat.config.load" in imported(done.stderr)) is loader
        assert done.stdout == answer
    user = tmp_path / "home" / "config" / "rollchat"
    user.mkdir(parents=True)
    (user / "config.yml").write_text("session:\n  dir: elsewhere\n", encoding="utf-8")
    moved = compact(sessions, tmp_path, sessions.parent, "--json", importtime=True, config=None)
    assert "rollchat.config.load" in imported(moved.stderr) and moved.stdout != answer


def test_a_changed_environment_is_loaded_again_and_its_values_never_written(
        sessions: Sessions, tmp_path: Path) -> None:
    answer = recorded(sessions, tmp_path, config=None)
    for loader in (True, False):  # loaded (another environment: recorded again), recalled
        done = compact(sessions, tmp_path, sessions.parent, "--json", importtime=True,
                       config=None, SERVICE_TOKEN="s3cret-value")
        assert ("rollchat.config.load" in imported(done.stderr)) is loader
        assert done.stdout == answer
    record = tmp_path / "sessions" / ".cache" / "compact" / "config-record"
    assert b"s3cret-value" not in record.read_bytes()  # only the environment's hash


def test_a_prompt_file_the_config_reads_is_checked_too(sessions: Sessions,
                                                       tmp_path: Path) -> None:
    prompt = tmp_path / "prompt.md"
    prompt.write_text("You answer briefly.\n", encoding="utf-8")
    config = OFFLINE_CONFIG + "agents:\n  assistant:\n    system_prompt_file: prompt.md\n"
    recorded(sessions, tmp_path, config=config)
    prompt.unlink()  # the loader now refuses the config: so must the recalled answer
    done = compact(sessions, tmp_path, sessions.parent, "--json", config=config)
    assert done.returncode != 0 and "prompt.md" in done.stderr


def test_a_fifo_in_place_of_the_record_is_passed_over_not_waited_on(
        sessions: Sessions, tmp_path: Path) -> None:
    """A hostile checkout may plant anything in the sessions directory: a FIFO where the
    record goes would block an ordinary open for ever (the 60 s timeout would end the test)."""
    import os

    answer = recorded(sessions, tmp_path)
    record = tmp_path / "sessions" / ".cache" / "compact" / "config-record"
    record.unlink()
    os.mkfifo(record)
    after = compact(sessions, tmp_path, sessions.parent, "--json", importtime=True)
    assert after.stdout == answer
    assert "rollchat.config.load" in imported(after.stderr)  # the ordinary way


def test_a_fifo_in_place_of_a_session_file_is_refused_not_waited_on(
        sessions: Sessions, tmp_path: Path) -> None:
    import os

    fifo = "assistant_20260101_000000_abcd"
    os.mkfifo(sessions.root / f"{fifo}.md")
    done = compact(sessions, tmp_path, fifo, "--json")  # (a blocked open: the 60 s timeout)
    assert done.returncode == 2 and "not a regular file" in done.stderr
