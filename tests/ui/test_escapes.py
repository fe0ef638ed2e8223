"""Escape sequences (issue 10, point 3): strings read from session files and configs reach the
terminal only through the one sanitizer (rollchat.ui.sanitize), whatever shows them: the
``sessions`` command, the in-chat listing and resume, the banner, errors. ``--json`` stays
exact."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from rollchat.domain import SessionHeader, Summary, Transcript, Turn, Usage, answer_blocks
from rollchat.storage.transcript import render
from rollchat.ui.sanitize import _CARRIAGE_RETURN, _UNSAFE, _visible, harmless, one_line
from tests.e2e import clean_env, run_piped, write_config
from tests.examples_budget import examples

T0 = datetime(2026, 11, 22, 14, 30, 0, tzinfo=timezone.utc)
SID = "assistant_20261122_143000_abcd"
TITLE = "\x1b]0;pwned title\x07"  # OSC: sets the terminal's title
CLEAR = "\x1b[2J\x1b[H"  # CSI: clears the screen
C1 = "\x9b31m\x9d0;c1 title\x9c"  # the same as C1 controls (CSI, OSC, ST)
BIDI = "\u202eevil\u202c"  # right-to-left override: the line reads in another order
FORGED = "x\n  9. forged_20260101_000000_0000 · Assistant"  # a newline forging a listing row
# What must never reach the terminal, as bytes.
FORBIDDEN = [b"\x1b", b"\x07", b"\xc2\x9b", b"\xc2\x9d", b"\xc2\x9c", "\u202e".encode()]


def _crafted(sessions: Path) -> Transcript:
    header = SessionHeader(SID, T0, f"Agent{CLEAR}{BIDI}", "config:assistant",
                           f"model{C1}", "offline", resumed_from=f"{TITLE}parent{FORGED}",
                           previous_session=f"{TITLE}.md", total_queries=1, total_tokens=30)
    turn = Turn("query", 1, T0, f"question {TITLE}{CLEAR}{C1}{BIDI}", answer_blocks("answer"),
                elapsed=1.0,
                usage=Usage(10, 20))
    summary = Summary(f"background {CLEAR}", (f"topic {TITLE}",), ("decided",), ("pending",))
    t = Transcript(header, (turn,), summary)
    sessions.mkdir(parents=True, exist_ok=True)
    (sessions / f"{SID}.md").write_text(render(t), encoding="utf-8")
    (sessions / f"{CLEAR}notes.md").write_text("not a session")
    return t


def _no_escapes(raw: bytes) -> None:
    for sequence in FORBIDDEN:
        assert sequence not in raw, (sequence, raw[:2000])


def test_sanitizer_shows_every_kind_of_control() -> None:
    shown = harmless(f"{TITLE}{CLEAR}{C1}{BIDI}\ud800\x00\x7f ok\ttab\nnext")
    assert shown == ("^[]0;pwned title^G^[[2J^[[H\\x9b31m\\x9d0;c1 title\\x9c<U+202E>evil"
                     "<U+202C>\ufffd^@^? ok\ttab\nnext")
    assert harmless(shown) == shown  # drawing twice changes nothing
    assert one_line("a\nb\r\nc") == "a\\nb\\nc"


def test_sessions_command_draws_crafted_fields_harmlessly_and_json_stays_exact(
        tmp_path: Path) -> None:
    sessions = tmp_path / "sessions"
    t = _crafted(sessions)
    env = clean_env(tmp_path / "home", PYTHONIOENCODING="utf-8:strict")
    done = subprocess.run([sys.executable, "-m", "rollchat", "sessions", "--sessions-dir",
                           str(sessions)], capture_output=True, env=env, timeout=60)
    assert done.returncode == 0, done.stderr
    _no_escapes(done.stdout + done.stderr)
    out = done.stdout.decode("utf-8")
    assert "Agent^[[2J^[[H<U+202E>evil<U+202C>" in out
    assert "parent: ^[]0;pwned title^Gparentx\\n  9. forged" in out
    assert "question ^[]0;pwned title^G" in out
    assert "^[[2J^[[Hnotes.md: file name is not a session id" in out
    assert [x.lstrip()[:2] for x in out.splitlines() if x.lstrip()[:1].isdigit()] == ["1."]

    exact = subprocess.run([sys.executable, "-m", "rollchat", "sessions", "--json",
                            "--sessions-dir", str(sessions)], capture_output=True, env=env,
                           timeout=60)
    assert exact.returncode == 0, exact.stderr
    listing = json.loads(exact.stdout)
    [info] = listing["sessions"]
    assert info["agent"] == t.header.agent and info["parent"] == t.header.resumed_from
    assert info["first_query"] == t.turns[0].user
    assert listing["problems"][0]["file"] == f"{CLEAR}notes.md"


def test_a_file_name_that_is_not_utf8_is_listed_as_a_problem_in_both_forms(
        tmp_path: Path) -> None:
    sessions = tmp_path / "sessions"
    sessions.mkdir()
    os.close(os.open(bytes(sessions) + b"/\xff\x1b[2J.md", os.O_CREAT | os.O_WRONLY, 0o600))
    env = clean_env(tmp_path / "home", PYTHONIOENCODING="utf-8:strict")
    plain = subprocess.run([sys.executable, "-m", "rollchat", "sessions", "--sessions-dir",
                            str(sessions)], capture_output=True, env=env, timeout=60)
    assert plain.returncode == 0, plain.stderr
    _no_escapes(plain.stdout)
    assert "\ufffd^[[2J.md: file name is not a session id" in plain.stdout.decode("utf-8")
    exact = subprocess.run([sys.executable, "-m", "rollchat", "sessions", "--json",
                            "--sessions-dir", str(sessions)], capture_output=True, env=env,
                           timeout=60)
    assert exact.returncode == 0, exact.stderr
    [problem] = json.loads(exact.stdout)["problems"]
    assert problem["file"] == "\udcff\x1b[2J.md"  # os.fsdecode of the name: exact


def test_in_chat_listing_resume_and_refusal_draw_crafted_fields_harmlessly(
        tmp_path: Path) -> None:
    sessions = tmp_path / "sessions"
    _crafted(sessions)
    env = clean_env(tmp_path / "home")
    refused = run_piped(tmp_path, "sessions\nresume 1\nexit\n", env=env)
    assert refused.returncode == 0, refused.stderr
    _no_escapes(refused.stdout.encode("utf-8", "surrogateescape"))
    assert "was with agent 'Agent\\x1b[2J\\x1b[H\\u202eevil\\u202c'" in refused.stdout
    assert "pass --yes" in refused.stdout
    resumed = run_piped(tmp_path, "resume 1\nexit\n", "--yes", env=env)
    assert resumed.returncode == 0, resumed.stderr
    _no_escapes(resumed.stdout.encode("utf-8", "surrogateescape"))
    assert f"Found: {SID} · Agent^[[2J^[[H<U+202E>evil<U+202C>" in resumed.stdout
    assert "its parent ^[]0;pwned title^G.md is missing" in " ".join(resumed.stdout.split())


def test_config_strings_and_errors_reach_the_terminal_harmlessly(tmp_path: Path) -> None:
    cfg = write_config(tmp_path / "rollchat.yml", 'agents:\n  assistant:\n'
                       '    name: "Bot\\e]0;pwned\\a\\u202e"\n')
    env = clean_env(tmp_path / "home")
    done = run_piped(tmp_path, "hello\nexit\n", "--config", str(cfg), env=env)
    assert done.returncode == 0, done.stderr
    _no_escapes(done.stdout.encode("utf-8"))
    assert "rollchat · Bot^[]0;pwned^G<U+202E> · offline model" in done.stdout
    bad = write_config(tmp_path / "bad.yml", 'session:\n  "\\e[2Jkey": 1\n')
    failed = run_piped(tmp_path, "", "--config", str(bad), env=env)
    assert failed.returncode == 2
    _no_escapes(failed.stderr.encode("utf-8"))
    assert failed.stderr.startswith("rollchat: error:") and "^[[2Jkey" in failed.stderr
    assert failed.stderr.count("\n") == 1


@settings(max_examples=examples(150), deadline=None)
@given(st.text(st.sampled_from(["a", " ", "\t", "\n", "\r", "\x1b", "\x00", "\x7f", "\x85",
                                "\u202e", "\ud800", "é"])))
def test_a_text_is_passed_unchanged_only_when_the_patterns_change_nothing(text: str) -> None:
    """harmless passes ASCII text with nothing to change at C speed (a tool's 35 MB result in
    ``rollchat show``): it gives what the patterns alone give."""
    assert harmless(text) == _UNSAFE.sub(_visible, _CARRIAGE_RETURN.sub("\n", text))
