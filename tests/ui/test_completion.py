"""Issue 35, smaller list: Tab after ``resume `` (and ``fork ``) offers the saved sessions by
number with their titles, the chat's own session left out; other words complete as before.
In a terminal (pty) once, in process for the rest."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from prompt_toolkit.completion import CompleteEvent
from prompt_toolkit.document import Document

from rollchat.storage.listing import SessionInfo
from rollchat.ui.completion import ChatCompleter
from tests.e2e import PROMPT, run_piped, write_config
from tests.terminal import Terminal, run_chat


def _info(number: int, session_id: str, title: str) -> SessionInfo:
    return SessionInfo(number=number, session_id=session_id, file_name=f"{session_id}.md",
                       path=None, agent="Assistant", agent_path="", model="offline",
                       provider="offline", date=datetime(2026, 12, number), queries=1,
                       tokens=10, first_query_preview=None, has_summary=True,
                       resumed_from=None, previous_session=None, title=title)


SESSIONS = [_info(1, "assistant_20261201_a", "Current chat"),
            _info(2, "assistant_20261202_b", "Billing migration"),
            _info(3, "assistant_20261203_c", "Cache ports")]


def _offered(text: str) -> list[tuple[str, str]]:
    completer = ChatCompleter(["resume", "/resume", "sessions"],
                              lambda: (SESSIONS, "assistant_20261201_a"))
    return [(c.text, c.display_meta_text) for c in
            completer.get_completions(Document(text), CompleteEvent(completion_requested=True))]


def test_tab_after_resume_offers_the_sessions_with_their_titles() -> None:
    assert _offered("resume ") == [("2", "2026-12-02 00:00 Billing migration"),
                                   ("3", "2026-12-03 00:00 Cache ports")]  # not the current
    assert [t for t, _ in _offered("/fork 3")] == ["3"]
    assert [t for t, _ in _offered("resume assistant_20261202")] == ["assistant_20261202_b"]
    assert [t for t, _ in _offered("ses")] == ["sessions"]  # commands as before


def test_tab_after_resume_inserts_the_saved_session(tmp_path: Path) -> None:
    cfg = write_config(tmp_path / "rollchat.yml", "ui:\n  offline_word_delay: 0\n")
    done = run_piped(tmp_path, "We chose postgres.\nexit\n", "--config", str(cfg))
    assert done.returncode == 0, done.stderr
    [saved] = [p.stem for p in (tmp_path / "sessions").glob("*.md")]

    def script(term: Terminal) -> None:
        term.expect_exact(PROMPT)
        term.send("hello\r")  # the chat is built (its sessions listed) once it runs
        term.expect(r"Tokens: \d+")
        term.expect_exact(PROMPT)
        term.send("resume \t")  # one session besides this one: Tab inserts its number
        term.expect(r"resume\s*2")  # (a space, or a cursor move: not in the text)
        term.send("\r")  # "resume 2" (a bare "resume" would open the picker)
        term.expect_exact(f"Found: {saved}")
        _exit(term)

    assert run_chat(tmp_path, ["--config", str(cfg)], script) == 0


def _exit(term: Terminal) -> None:
    term.expect_exact(PROMPT)
    term.sendline("exit")
    term.expect_exact("Goodbye!")
