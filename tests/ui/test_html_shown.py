"""Nothing the model writes disappears from the screen: HTML-like blocks (a ``<think>`` block
before the answer, an echoed ``<context>`` block) are drawn as text, streamed and in ``show``."""

from __future__ import annotations

import io

from rich.console import Console

from rollchat.ui.stream import MarkdownStream, markdown

ANSWER = "<think>\nThe user wants a haiku.\n</think>\nHere is your haiku: *spring rain*."


def _drawn(renderable: object) -> str:
    out = io.StringIO()
    Console(file=out, width=80, color_system=None).print(renderable)
    return out.getvalue()


def test_an_html_block_and_the_answer_after_it_are_drawn() -> None:
    drawn = _drawn(markdown(ANSWER))
    assert "<think>" in drawn and "The user wants a haiku." in drawn
    assert "Here is your haiku: spring rain." in drawn  # markdown still renders
    assert "<context>Now: noon</context>" in _drawn(markdown("<context>Now: noon</context>"))


def test_a_streamed_answer_keeps_them_too() -> None:
    out = io.StringIO()
    stream = MarkdownStream(Console(file=out, width=80, color_system=None), live=False)
    for piece in (ANSWER[:10], ANSWER[10:40], ANSWER[40:], "\n\nDone."):
        stream.feed(piece)
    stream.close()
    drawn = out.getvalue()
    assert "<think>" in drawn and "Here is your haiku" in drawn and "Done." in drawn
