"""The simplest markdown (paragraphs, tight bullet lists, **strong** and `code` words) that
``show`` writes piped without rich is exactly what rich's Markdown draws on a console without
colours, at any width; anything else is left to rich."""

from __future__ import annotations

import io
import random

import pytest

from rollchat.ui.plain_markdown import inline_text, plain_markdown
from rollchat.ui.render import plain_console
from rollchat.ui.show import _wrapped
from rollchat.ui.stream import markdown
from tests.markdown_docs import document

WORDS = ["parser", "cache", "a", "I", "it's", "(x)", "x,", "end.", "src/m.py", "well-known",
         "42", "q?", '"hi"', "a:b"]


def _rich(markup: str, width: int) -> str:
    buffer = io.StringIO()
    console = plain_console(buffer)
    console.size = (width, 25)
    console.print(markdown(markup), soft_wrap=False)
    return buffer.getvalue()


def test_what_is_written_without_rich_is_what_rich_draws() -> None:
    rng = random.Random(33)
    written = 0
    for _ in range(800):
        markup, width = document(rng, WORDS), rng.choice([20, 31, 40, 57, 80, 120])
        text = plain_markdown(markup, width, _wrapped)
        if text is not None:
            written += 1
            assert text == _rich(markup, width), (markup, width)
    assert written > 150  # the direct path was taken, not only declined


@pytest.mark.parametrize("markup", [
    "Two things:\n\n- **first** We decided to keep it.\n- `second`",
    "- a list first\n- then\n\nA paragraph after it.",
    "A **bold** claim, and `code`: done.",
])
def test_the_cases_show_meets_most(markup: str) -> None:
    for width in (24, 50, 80):
        assert plain_markdown(markup, width, _wrapped) == _rich(markup, width)


@pytest.mark.parametrize("markup", [
    "- one\n\n- two",  # two lists apart by a blank line: one loose list
    "`a``b`", "a**b**", "**a **", "` a`", "*em*", "a_b_", "<b>x</b>", "[a](b)", "# Title",
    "1. one", "> quoted", "line one\nline two", "a  b", "x &amp; y", "caf\u00e9",
    "see \x1b[2J this", "evil \u202e", "back\\slash", "- - nested", "- ", "",
    "tab\there", "a word wider than the line: " + "x" * 90,
])
def test_anything_else_is_left_to_rich(markup: str) -> None:
    assert plain_markdown(markup, 80, _wrapped) is None


def test_inline_text_drops_only_the_markers() -> None:
    assert inline_text("**keep** the `x_y` as it is.") == "keep the x_y as it is."
    assert inline_text("**keep**the") is None and inline_text("a*b") is None
