"""Options given before a subcommand count as if given after it: `rollchat --config X
sessions` reads X (it used to be ignored silently)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.e2e import run_piped, write_config


def _ids(done) -> list[str]:  # type: ignore[no-untyped-def]
    assert done.returncode == 0, done.stderr
    return [s["id"] for s in json.loads(done.stdout)["sessions"]]


def test_config_and_sessions_dir_before_the_subcommand(tmp_path: Path) -> None:
    cfg = write_config(tmp_path / "c.yml", "session:\n  dir: elsewhere\n")
    made = run_piped(tmp_path, "we decided to ship on monday\nexit\n", "--config", str(cfg))
    assert made.returncode == 0, made.stderr
    [sid] = [p.stem for p in (tmp_path / "elsewhere").glob("*.md")]
    assert _ids(run_piped(tmp_path, "", "--config", str(cfg), "sessions", "--json")) == [sid]
    assert _ids(run_piped(tmp_path, "", "sessions", "--config", str(cfg), "--json")) == [sid]
    assert _ids(run_piped(tmp_path, "", "--sessions-dir", str(tmp_path / "elsewhere"),
                          "sessions", "--json")) == [sid]
    assert _ids(run_piped(tmp_path, "", "sessions", "--json")) == []  # ./sessions: none
    audit = run_piped(tmp_path, "", "--config", str(cfg), "audit", "1", "--json")
    assert audit.returncode in (0, 1) and "kept" in json.loads(audit.stdout)
