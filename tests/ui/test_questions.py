"""Issue 25, point 3: every question is answered one way, a letter then Enter, shown in the
prompt (``[y/N, Enter]``); what was typed before a question appeared is never its answer: it is
put aside and comes back, unsent, in the next ``You:`` prompt (sent only when the user presses
Enter there); a question is wrapped at words, never mid-word. Driven in a pseudo-terminal where
the terminal holds what was typed ahead, else as a terminal runs the chat, in process
(tests/terminal.py)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from rollchat.storage.transcript import parse
from rollchat.ui.ask import KEPT_NOTE, typed_text, wrapped
from tests.e2e import PROMPT, exit_chat, run_piped, spawn, write_config
from tests.terminal import Terminal, run_chat

AGENTS = """ui:
  offline_word_delay: 0
default_agent: one
agents:
  one:
    name: Assistant
    provider: offline
  two:
    name: Reviewer
    provider: offline
"""
_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b[()][0-9A-B]|\x1b[=>]")


def _exit(term: Terminal) -> None:
    term.expect_exact(PROMPT)
    term.sendline("exit")
    term.expect_exact("Goodbye!")


def _reviewers_session(tmp_path: Path) -> tuple[Path, str]:
    """A config whose default agent (Assistant) has no session, and the one session there is,
    Reviewer's: ``-c`` falls back to it and asks first."""
    cfg = write_config(tmp_path / "rollchat.yml", AGENTS)
    done = run_piped(tmp_path, "Review the postgres migration.\nexit\n", "--config", str(cfg),
                     "--agent", "two")
    assert done.returncode == 0, done.stderr
    [path] = (tmp_path / "sessions").glob("*.md")
    return cfg, path.stem


def test_pty_typing_ahead_of_a_question_is_neither_its_answer_nor_sent(tmp_path: Path) -> None:
    cfg, reviewers = _reviewers_session(tmp_path)
    child = spawn(tmp_path, "--config", str(cfg), "-c")
    child.setwinsize(24, 60)  # the question takes more than one line here
    try:
        # typed at once, before the question appears (starting takes far longer): a single-key
        # question took its "n" as the answer and sent the rest as a message
        child.send("no wait, first the summary")
        child.expect_exact(KEPT_NOTE.split(":")[0])
        child.expect(r"Continue\? \[y/N, Enter\]:")
        question = _ANSI.sub("", child.before + child.after)
        for word in ("Session", reviewers, "with", "agent", "'Reviewer',", "not",
                     "'Assistant'.", "Continue?"):
            assert word in question.split(), (word, question)  # whole: wrapped at words
        assert "Resume cancelled" not in question
        child.send("y\r")  # the answer buffer was empty: a bare "y" answers
        child.expect_exact(f"Found: {reviewers}")
        # the text typed ahead is back in the prompt, unsent
        child.expect_exact(f"{PROMPT} no wait, first the summary")
        child.send("\r")  # sent now, by the user
        child.expect(r"Tokens: \d+")
        exit_chat(child)
    finally:
        child.close(force=True)
    [mine] = [p for p in (tmp_path / "sessions").glob("*.md") if p.stem != reviewers]
    turns = parse(mine.read_text(encoding="utf-8")).turns
    assert [t.user for t in turns][1:] == ["no wait, first the summary"]  # whole, once, by Enter


def test_a_question_needs_enter_and_enter_alone_is_its_default(tmp_path: Path) -> None:
    cfg, _ = _reviewers_session(tmp_path)

    def script(term: Terminal) -> None:
        term.expect(r"Continue\? \[y/N, Enter\]:")
        term.send("x\r")  # not an answer: asked again, saying how to answer
        term.expect_exact("Type one of y, n, then Enter.")
        term.send("\r")  # Enter alone: the default, no
        term.expect_exact("Resume cancelled.")
        _exit(term)

    assert run_chat(tmp_path, ["--config", str(cfg), "-c"], script) == 0


def test_wrapped_at_words_only() -> None:
    question = ("Session two_20261126_020944_3ec7 was with agent 'Reviewer', not "
                "'Assistant'. Continue? [y/N, Enter]:")
    lines = wrapped(question, 40).rstrip(" ").split("\n")
    assert " ".join(lines) == question and all(len(line) <= 39 for line in lines)
    assert wrapped("a " + "x" * 50, 20).split("\n")[1].strip() == "x" * 50  # a word stays whole


def test_typed_text_keeps_the_text_and_drops_keys() -> None:
    assert typed_text("no wait\x1b[A, first\x1b[12;1R\rsecond\r") == "no wait, first\nsecond"


def test_the_tool_approval_question_says_how_it_is_answered(tmp_path: Path) -> None:
    made = run_piped(tmp_path, "", "init-agent", "helper.py")
    assert made.returncode == 0, made.stderr
    write_config(tmp_path / "rollchat.yml", "ui:\n  offline_word_delay: 0\n")

    def script(term: Terminal) -> None:
        term.expect_exact(PROMPT)
        term.sendline('use word_count on "one two three"')
        term.expect(r"Allow\? y: yes, once; a: always for this tool in this session; n: "
                    r"no \[y/a/n, Enter\]:")
        term.send("y")  # a letter alone answers nothing yet: Enter does
        with pytest.raises(AssertionError, match="not shown"):
            term.expect(r"3 words", timeout=1.5)
        term.send("\r")
        term.expect_exact("3 words")
        _exit(term)

    assert run_chat(tmp_path, ["--config", str(tmp_path / "rollchat.yml"),
                                            "helper.py"], script) == 0


def test_resuming_a_continued_session_offers_its_chains_newest(tmp_path: Path) -> None:
    cfg = write_config(tmp_path / "rollchat.yml", "ui:\n  offline_word_delay: 0\n")
    done = run_piped(tmp_path, "We chose postgres.\nexit\n", "--config", str(cfg))
    assert done.returncode == 0, done.stderr
    [old] = [p.stem for p in (tmp_path / "sessions").glob("*.md")]
    done = run_piped(tmp_path, "And the version?\nexit\n", "--config", str(cfg), "--resume", old)
    assert done.returncode == 0, done.stderr
    [newest] = [p.stem for p in (tmp_path / "sessions").glob("*.md") if p.stem != old]

    def script(term: Terminal) -> None:
        term.expect_exact(PROMPT)
        term.sendline("resume 2")  # old: 1 is its continuation, the newest
        term.expect(r"Resume 1 instead\? \[Y/n, Enter\]:")
        assert f"Session 2 ({old}) was continued in session 1 ({newest}," in " ".join(
            term.before.split())
        term.send("\r")  # Enter alone: the default, the newest
        term.expect_exact(f"Found: {newest}")
        _exit(term)

    assert run_chat(tmp_path, ["--config", str(cfg)], script) == 0
