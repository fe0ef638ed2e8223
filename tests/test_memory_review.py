"""A demanding user's and an attacker's review of the memory (issue 16): what the user typed
is never swallowed as a fact, secrets are never remembered, and the offline rules keep only
what the user really states about themselves."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.test_memory_chat import make_chat


@pytest.mark.parametrize("line", [
    "remember when we fixed the bug",
    "remember what the deploy script was called",
    "remember how we fixed the flaky test",
    "remember that time the build broke on Friday",
    "Remember me to run the migrations",
])
def test_a_bare_remember_that_reminisces_goes_to_the_model(tmp_path: Path, line: str) -> None:
    chat = make_chat(tmp_path)
    shown = chat.type(line)
    assert "Remembered" not in shown
    assert chat.memory.facts() == []
    turns = chat.app.session.state.turns
    assert [t.user for t in turns if t.kind == "query"] == [line]


@pytest.mark.parametrize("line", ["remember that I prefer tabs",
                                  "remember to run the linter before every commit",
                                  "/remember when the deploy happens, page Ana"])
def test_remember_still_keeps_a_fact(tmp_path: Path, line: str) -> None:
    chat = make_chat(tmp_path)
    assert "Remembered:" in chat.type(line)
    assert len(chat.memory.facts()) == 1
