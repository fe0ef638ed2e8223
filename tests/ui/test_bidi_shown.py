"""Bidirectional and C1 controls from the model never reach the terminal (issue 33 item 6):
an answer with a right-to-left override, marks and a C1 CSI is drawn escaped in the chat
(piped, against the Anthropic wire server with the real SDK), by ``show`` and in ``rollchat -p``
text output, while the transcript keeps what the model said."""

from __future__ import annotations

from pathlib import Path

from rollchat.storage.transcript import parse
from rollchat.ui.sanitize import harmless
from tests.e2e import clean_env, run_piped
from tests.wire_servers import WireServer, anthropic_server, text

__all__ = ["anthropic_server"]  # the fixture, imported for pytest

# RLO, PDF, LRM, RLM, ALM, LRI/PDI, LRE and CSI (C1): each reorders or controls the terminal
ANSWER = "total: \u202e0001$\u202c, \u200eleft\u200f, \u061carabic, \u2066iso\u2069, " \
    "\u202aemb\u202c \x9b31mred"
FORBIDDEN = ["\u202e", "\u202c", "\u200e", "\u200f", "\u061c", "\u2066", "\u2069", "\u202a",
             "\x9b"]


def _clean(out: str) -> None:
    assert [c for c in FORBIDDEN if c in out] == [], out


def test_sanitizer_escapes_bidi_marks_and_c1() -> None:
    shown = harmless(ANSWER)
    _clean(shown)
    assert shown == ("total: <U+202E>0001$<U+202C>, <U+200E>left<U+200F>, <U+061C>arabic, "
                     "<U+2066>iso<U+2069>, <U+202A>emb<U+202C> \\x9b31mred")


def _args(server: WireServer) -> tuple[str, ...]:
    return ("--provider", "anthropic", "--model", "test-model", "--base-url", server.url)


def test_an_answer_in_the_chat_is_drawn_escaped_and_kept_as_said(
        anthropic_server: WireServer, tmp_path: Path) -> None:
    anthropic_server.push(text(ANSWER))
    done = run_piped(tmp_path, "what is the total?\n", *_args(anthropic_server),
                     env=clean_env(tmp_path / "home", ANTHROPIC_API_KEY="test"))
    assert done.returncode == 0, done.stdout + done.stderr
    _clean(done.stdout + done.stderr)
    assert "<U+202E>0001$<U+202C>" in done.stdout and "\\x9b31mred" in done.stdout
    [session] = (tmp_path / "sessions").glob("*.md")
    [turn] = parse(session.read_text(encoding="utf-8")).turns
    assert "\u202e0001$\u202c" in turn.assistant  # stored as said, only drawn escaped
    shown = run_piped(tmp_path, "", "show", session.stem,
                      env=clean_env(tmp_path / "home", ANTHROPIC_API_KEY="test"))
    assert shown.returncode == 0, shown.stderr
    _clean(shown.stdout + shown.stderr)
    assert "<U+200E>left<U+200F>" in shown.stdout


def test_one_shot_text_output_is_escaped(anthropic_server: WireServer, tmp_path: Path) -> None:
    anthropic_server.push(text(ANSWER))
    done = run_piped(tmp_path, "", "-p", "what is the total?", *_args(anthropic_server),
                     env=clean_env(tmp_path / "home", ANTHROPIC_API_KEY="test"))
    assert done.returncode == 0, done.stdout + done.stderr
    _clean(done.stdout + done.stderr)
    assert "\\x9b31mred" in done.stdout
