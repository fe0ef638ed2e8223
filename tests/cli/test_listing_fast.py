"""``rollchat sessions`` and ``rollchat search`` answered before typer is imported
(cli/listing.py): byte for byte what the typer commands print for the same sessions, any other
command line (a bad option, --help, a config to warn about, an error) left to typer."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import warnings
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rollchat.cli import listing
from rollchat.cli.app import build_cli
from tests.compact_fixtures import OFFLINE_CONFIG, T0, Sessions, make_sessions, turn
from tests.e2e import clean_env, run_piped


@pytest.fixture(scope="module")
def sessions(tmp_path_factory: pytest.TempPathFactory) -> Sessions:
    """A resumed session and its parent (a chain), six more, a file that is no session."""
    from datetime import timedelta

    from rollchat.storage.store import SessionStore

    made = make_sessions(tmp_path_factory.mktemp("listing") / "sessions")
    store = SessionStore(made.root)
    for n in range(6):
        at = T0 - timedelta(days=n + 1)
        live = store.new_session(agent_key="coder", agent="Coder", agent_path="config:coder",
                                 model="claude-sonnet-4-5", provider="anthropic", now=at,
                                 title=f"Cache plan {n}" if n % 2 else None)
        live.append_turn(turn(1, f"How big should the redis cache be, take {n}?",
                              f"About {n + 1} GB; the **limiter** keeps its own.", at), "Coder")
        live.set_totals(1, 100 * (n + 1), 1)
        live.close()
    (made.root / "notes.md").write_text("not a session\n", encoding="utf-8")
    return made


LINES = [
    [], ["--json"], ["--all"], ["--all", "--json"], ["--limit", "3"], ["--limit=2", "--json"],
    ["--json", "--limit", "1", "--limit", "20"], ["--limit", "007"],
]
SEARCHES = [
    ["redis"], ["redis", "--json"], ["limiter", "--limit", "2"], ["--json", "cache", "plan"],
    ["nothing-like-it"], ["nothing-like-it", "--json"], ["rate", "--limit=1", "limiter"],
]


def typer_way(command: str, args: list[str]) -> str:
    result = CliRunner().invoke(build_cli(), [command, *args])
    assert result.exit_code == 0, result.output
    return result.stdout


def fast_way(command: str, args: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    capsys.readouterr()
    assert listing.answered(command, args)
    return capsys.readouterr().out


@pytest.mark.parametrize(("command", "args"), [("sessions", a) for a in LINES]
                         + [("search", a) for a in SEARCHES])
def test_the_fast_way_prints_what_the_typer_way_prints(
        sessions: Sessions, command: str, args: list[str],
        capsys: pytest.CaptureFixture[str]) -> None:
    line = [*args, "--sessions-dir", str(sessions.root)]
    typer_out = typer_way(command, line)
    assert typer_out.strip()
    assert fast_way(command, line, capsys) == typer_out


def test_a_chain_s_cost_and_the_problem_file_are_listed_the_same(
        sessions: Sessions, capsys: pytest.CaptureFixture[str]) -> None:
    out = fast_way("sessions", ["--json", "--sessions-dir", str(sessions.root)], capsys)
    assert f'"parent": "{sessions.parent}"' in out and '"file": "notes.md"' in out
    assert '"chain_cost"' in out


@pytest.mark.parametrize(("command", "args"), [
    ("sessions", ["--help"]), ("sessions", ["--limit", "0"]), ("sessions", ["--limit", "x"]),
    ("sessions", ["--limit", "-3"]), ("sessions", ["--all", "--limit", "3"]),
    ("sessions", ["--bogus"]), ("sessions", ["--json=1"]), ("sessions", ["extra"]),
    ("sessions", ["--limit"]), ("sessions", ["--sessions-dir", "--json"]),
    ("sessions", ["--sessions-dir="]), ("sessions", ["--", "--json"]), ("search", []),
    ("search", ["--all", "redis"]), ("search", ["-"]), ("search", ["redis", "-h"]),
])
def test_other_command_lines_are_left_to_typer(
        sessions: Sessions, command: str, args: list[str],
        capsys: pytest.CaptureFixture[str]) -> None:
    assert not listing.answered(command, [*args, "--sessions-dir", str(sessions.root)])
    assert capsys.readouterr() == ("", "")


def test_errors_and_warnings_are_left_to_typer(
        sessions: Sessions, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    where = ["--sessions-dir", str(sessions.root)]
    bad = tmp_path / "bad.yml"
    bad.write_text("ui: [\n", encoding="utf-8")
    assert not listing.answered("sessions", [*where, "--config", str(bad)])  # ConfigError
    assert not listing.answered("search", ["!!!", *where])  # no word to look for
    not_a_dir = tmp_path / "file"
    not_a_dir.write_text("x", encoding="utf-8")
    assert not listing.answered("sessions", ["--sessions-dir", str(not_a_dir)])
    assert capsys.readouterr() == ("", "")


@pytest.mark.parametrize(("args", "says"), [
    (["sessions", "--limit", "0"], "invalid value for '--limit'"),
    (["sessions", "--all", "--limit", "3"], "use either --all or --limit n, not both"),
    (["sessions", "--bogus"], "no such option --bogus"),
    (["search", "!!!"], "search needs a word to look for"),
])
def test_the_user_sees_typer_s_own_error(tmp_path: Path, args: list[str], says: str) -> None:
    done = run_piped(tmp_path, None, *args)
    assert done.returncode in (1, 2) and done.stdout == ""
    assert done.stderr.startswith("rollchat: error: ") and says in done.stderr.lower(), \
        done.stderr


def test_a_listing_imports_neither_typer_nor_the_transcript_parser(
        sessions: Sessions, tmp_path: Path) -> None:
    # the index warm, as in daily use: a session file changed since the last listing is read
    # again, with the transcript parser (the first listing of this module's sessions, when no
    # other test of the module ran before it on this xdist worker), and so is one indexed
    # within storage/index.RACY_NS of its last change (the fixture's, just written)
    old = time.time() - 60
    for path in sessions.root.glob("*.md"):
        os.utime(path, (old, old))
    subprocess.run([sys.executable, "-m", "rollchat", "sessions", "--sessions-dir",
                    str(sessions.root)], cwd=str(tmp_path), capture_output=True, timeout=60,
                   env=clean_env(tmp_path / "home"), stdin=subprocess.DEVNULL, check=True)
    for args in (["sessions", "--json"], ["sessions"], ["search", "redis", "--json"]):
        done = subprocess.run(
            [sys.executable, "-X", "importtime", "-m", "rollchat", *args, "--sessions-dir",
             str(sessions.root)], cwd=str(tmp_path), capture_output=True, text=True,
            timeout=60, env=clean_env(tmp_path / "home"), stdin=subprocess.DEVNULL)
        assert done.returncode == 0, done.stderr
        loaded = {line.split("|")[-1].strip() for line in done.stderr.splitlines()
                  if line.startswith("import time:")}
        assert not {"typer", "click", "rollchat.storage.store", "rollchat.storage.transcript",
                    "logging"} & loaded, args
        assert sessions.child in done.stdout or "redis" in done.stdout.lower()


def test_a_warning_goes_to_the_log_file_as_on_the_typer_way(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    import logging

    from rollchat.cli import logs

    log = tmp_path / "rollchat.log"
    monkeypatch.setattr(logs, "default_log_path", lambda: log)
    monkeypatch.setattr(warnings, "showwarning", warnings.showwarning)  # (restored after)
    loggers = [logging.getLogger(n) for n in ("py.warnings", "rollchat")]
    kept = [(lg, list(lg.handlers), lg.propagate, lg.level) for lg in loggers]
    try:
        listing._warnings_to_log()
        assert not log.exists()  # nothing set up before a warning
        with warnings.catch_warnings():
            warnings.simplefilter("always")
            warnings.warn("an odd thing in a library", UserWarning, stacklevel=1)
        assert "an odd thing in a library" in log.read_text(encoding="utf-8")
        assert capsys.readouterr().err == ""
    finally:
        logging.captureWarnings(False)
        for lg, handlers, propagate, level in kept:
            for handler in lg.handlers:
                if handler not in handlers:
                    handler.close()
            lg.handlers[:] = handlers
            lg.propagate, lg.level = propagate, level


def test_the_sessions_directory_is_recalled_until_the_config_changes(tmp_path: Path) -> None:
    """The second listing recalls the directory the config named (config.recall: no loader);
    a changed config file is loaded again, never answered with the directory it named."""
    cwd = tmp_path / "work"
    first = make_sessions(cwd / "sessions")  # ./sessions: where the record is looked for
    other = make_sessions(tmp_path / "other")
    named = tmp_path / "named.yml"
    named.write_text(OFFLINE_CONFIG, encoding="utf-8")

    def listed(importtime: bool = False) -> tuple[str, set[str]]:
        done = subprocess.run(
            [sys.executable, *(["-X", "importtime"] if importtime else []), "-m", "rollchat",
             "sessions", "--json", "--config", str(named)], cwd=str(cwd), capture_output=True,
            text=True, timeout=60, env=clean_env(tmp_path / "home"), stdin=subprocess.DEVNULL)
        assert done.returncode == 0, done.stderr
        return done.stdout, {line.split("|")[-1].strip() for line in done.stderr.splitlines()
                             if line.startswith("import time:")}

    loaded, _ = listed()
    assert first.child in loaded and other.child not in loaded
    assert (first.root / ".cache" / "listing" / "config-record").is_file()
    recalled, modules = listed(importtime=True)
    assert recalled == loaded
    assert not {"rollchat.config.load", "rollchat.config.settings", "platformdirs"} & modules
    named.write_text(f"session:\n  dir: {other.root}\n", encoding="utf-8")
    changed, modules = listed(importtime=True)
    assert other.child in changed and first.child not in changed
    assert "rollchat.config.load" in modules
