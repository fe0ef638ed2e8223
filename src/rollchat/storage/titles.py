"""Session titles: one short line naming a session, kept in the header's ``**Title:**`` field.
A title comes from the user (``title`` in chat, ``rollchat rename``), from the model with the
summary, or else from the first line of the first query, trimmed. No I/O, nothing heavy."""

from __future__ import annotations

import re

from rollchat.text.normalize import clean

TITLE_CHARS = 80  # longer titles are cut at a word boundary, with an ellipsis
_SPACE = re.compile(r"\s+")
_WRAPPERS = "\"'`*_ "  # quotes and emphasis a model may wrap a title in


def one_line_title(text: str, limit: int = TITLE_CHARS) -> str:
    """``text`` as a title: cleaned (controls become visible pictures), every run of
    whitespace (newlines too) one space, trimmed, at most ``limit`` characters."""
    title = _SPACE.sub(" ", clean(text)).strip()
    if len(title) <= limit:
        return title
    cut = title[:limit - 1]
    space = cut.rfind(" ")
    if title[limit - 1] != " " and space >= limit // 2:  # not in the middle of a word
        cut = cut[:space]
    return cut.rstrip(" ,;:.-") + "…"


def first_line_title(text: str | None, limit: int = TITLE_CHARS) -> str:
    """The offline title: the first non-blank line of ``text`` (a first query), trimmed;
    "" when there is none."""
    for line in (text or "").split("\n"):
        if line.strip():
            return one_line_title(line, limit)
    return ""


def model_title(text: str) -> str:
    """A title as a model wrote it: one line, without wrapping quotes or emphasis."""
    return one_line_title(one_line_title(text).strip(_WRAPPERS))


def user_title(text: str) -> str:
    """A title the user typed; ValueError (with the message to show) when it is empty."""
    title = one_line_title(text)
    if not title:
        raise ValueError("a title needs some text")
    return title
