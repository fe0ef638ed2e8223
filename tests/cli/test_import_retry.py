"""A failed or killed ``rollchat import`` leaves nothing that blocks a retry: the partial
session it left (a header with the source's digest, some turns, no summary) is not "already
imported", and the retry removes it, leaving one whole session."""

from __future__ import annotations

import hashlib
import json
import resource
import sys
from pathlib import Path

import pytest

from rollchat.storage.store import SessionStore
from rollchat.storage.transcript import parse
from tests.cli.test_import import CLAUDE, config, run
from tests.e2e import clean_env, run_piped


def source(tmp_path: Path, copies: int = 1) -> Path:
    path = tmp_path / "claude.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in CLAUDE * copies) + "\n", encoding="utf-8")
    return path


def killed_import(tmp_path: Path, path: Path) -> Path:
    """What a SIGKILL in the middle of an import leaves: the header (its Imported From with
    the source's digest) and the first turn, no summary; written by the store as the import
    writes it."""
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    store = SessionStore(tmp_path / "sessions")
    turn = parse((tmp_path / "whole.md").read_text()).turns[0]
    live = store.new_session(agent_key="assistant", agent="Assistant", agent_path="config:x",
                             model="claude-sonnet-4-5", provider="claude-code",
                             now=turn.started,
                             imported_from=f"claude-code {path.name} (sha256 {digest}, "
                                           "imported 2026-11-25 23:00)")
    live.append_turn(turn, "Assistant")
    live.close()
    return live.path


def whole_import_elsewhere(tmp_path: Path, path: Path) -> None:
    """A whole import in another directory, to copy a real imported turn from."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    assert run(elsewhere, str(path), "--local-summary")[0] == 0
    [whole] = sorted((elsewhere / "sessions").glob("*.md"))
    (tmp_path / "whole.md").write_bytes(whole.read_bytes())


def sessions(tmp_path: Path) -> list[Path]:
    return sorted((tmp_path / "sessions").glob("*.md"))


def test_a_killed_import_does_not_block_the_retry(tmp_path: Path) -> None:
    path = source(tmp_path)
    whole_import_elsewhere(tmp_path, path)
    partial = killed_import(tmp_path, path)
    assert parse(partial.read_text()).summary is None
    code, _, err = run(tmp_path, str(path), "--local-summary")
    assert code == 0, err
    assert "already imported" not in err
    assert f"removed session {partial.stem}, left unfinished by an earlier import" in err
    [kept] = sessions(tmp_path)
    assert kept != partial
    saved = parse(kept.read_text())
    assert saved.summary is not None and len(saved.turns) == 2
    # a whole import does block the next one, as before
    code, _, err = run(tmp_path, str(path), "--local-summary")
    assert code == 1 and f"already imported as {kept.stem}" in err
    assert sessions(tmp_path) == [kept]


def test_an_import_open_elsewhere_is_not_removed(tmp_path: Path) -> None:
    path = source(tmp_path)
    whole_import_elsewhere(tmp_path, path)
    partial = killed_import(tmp_path, path)
    store = SessionStore(tmp_path / "sessions")
    assert store.locks.acquire(partial.stem)  # an import of it still under way here
    held = run_piped(tmp_path, "", "import", str(path), "--local-summary", "--sessions-dir",
                     str(tmp_path / "sessions"), "--config", str(config(tmp_path)),
                     env=clean_env(tmp_path / "home"))
    assert held.returncode == 1
    assert f"left session {partial.stem} unfinished, and it cannot be removed" in held.stderr
    assert sessions(tmp_path) == [partial]


@pytest.mark.skipif(sys.platform != "linux", reason="RLIMIT_FSIZE as Linux applies it")
def test_an_import_failing_part_way_leaves_nothing(tmp_path: Path) -> None:
    """A real write error part-way (the file-size limit: EFBIG, "File too large"): the
    partial session is removed at once; the retry, without the limit, imports it whole."""
    path = source(tmp_path, copies=60)  # ~60 KB of turns: the header fits, the turns do not
    root = tmp_path / "sessions"
    args = ["import", str(path), "--local-summary", "--sessions-dir", str(root), "--config",
            str(config(tmp_path))]
    SessionStore(root).ensure()
    SessionStore(root).list_sessions()  # the index exists: only the session file grows

    def limited() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (16 * 1024, resource.RLIM_INFINITY))

    import subprocess

    # no bytecode written: importlib writes a .pyc in one write(2), and one cut short by the
    # limit would be renamed into the shared cache truncated, for every later test to trip on
    failed = subprocess.run([sys.executable, "-m", "rollchat", *args], cwd=tmp_path,
                            capture_output=True, text=True, timeout=120,
                            env=clean_env(tmp_path / "home", PYTHONDONTWRITEBYTECODE="1"),
                            preexec_fn=limited)
    assert failed.returncode == 1, failed.stderr
    assert "File too large" in failed.stderr
    assert sessions(tmp_path) == []
    retry = run_piped(tmp_path, "", *args, env=clean_env(tmp_path / "home"))
    assert retry.returncode == 0, retry.stderr
    [kept] = sessions(tmp_path)
    assert parse(kept.read_text()).summary is not None
