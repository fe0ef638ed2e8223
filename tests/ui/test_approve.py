"""The session's yes/no questions in the terminal layer (``approve.confirmer``): --yes answers
at once, without a terminal the question is refused with the reason and the way round it."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from rollchat.ui.approve import confirmer
from rollchat.ui.render import Renderer

QUESTION = "Session 3 is open in another rollchat process. Continue? (y/n) "


def _renderer() -> tuple[Renderer, io.StringIO]:
    buf = io.StringIO()
    console = Console(file=buf, force_terminal=False, color_system=None, width=200)
    return Renderer(console, interactive=False), buf


@pytest.mark.parametrize("interactive", [True, False])
def test_yes_answers_without_asking(interactive: bool) -> None:
    out, buf = _renderer()
    assert confirmer(out, yes=True, interactive=interactive)(QUESTION) is True
    assert buf.getvalue() == ""


def test_without_a_terminal_the_question_is_refused_with_the_way_round() -> None:
    out, buf = _renderer()
    assert confirmer(out, yes=False, interactive=False)(QUESTION) is False
    said = buf.getvalue()
    assert "Session 3 is open in another rollchat process." in said
    assert "Refused without a terminal; pass --yes to continue anyway." in said
    assert "(y/n)" not in said


def test_without_a_terminal_a_yes_by_default_question_is_answered_yes_and_says_so() -> None:
    out, buf = _renderer()
    asked = "Session 4 (x) was continued in session 1 (y). Resume 1 instead? (Y/n) "
    assert confirmer(out, yes=False, interactive=False)(asked) is True
    said = buf.getvalue()
    assert "Resume 1 instead? Yes (the default without a terminal)." in said
    assert "(Y/n)" not in said and "Refused" not in said
