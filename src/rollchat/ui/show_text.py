"""The text shapes ``show`` writes without rich, piped or styled: which lines are plain words,
a turn's title, and where rich wraps a line of words."""

from __future__ import annotations

import re

from rollchat.domain import Turn

# A line of prose that rich draws as plain words wrapped at the width, markdown or not: it
# starts with a letter (no list, heading or quote), has no markup character, no tab, no run
# of spaces and only characters one cell wide. ``show`` writes such turns itself.
# (A group per word, not per character: most of a session's text is matched against these.)
_PROSE = re.compile(r"[A-Za-z][A-Za-z0-9,.;:'\"?()/-]*(?: [A-Za-z0-9,.;:'\"?()/-]+)*")
# A line of plain text (not markdown) that rich wraps word by word: printable ASCII, · and →
# (each one cell wide), words apart by one space.
_LINE = re.compile(r"[!-~·→]+(?: [!-~·→]+)*")


def is_prose(text: str) -> bool:
    return _PROSE.fullmatch(text) is not None


def is_line(text: str) -> bool:
    return _LINE.fullmatch(text) is not None


def title(turn: Turn) -> str:
    started = turn.started
    when = (started.isoformat(" ", "seconds")[:19] if started.year >= 1000  # (a tenth of
            else f"{started:%Y-%m-%d %H:%M:%S}")  # strftime's time, the same text)
    return f"{turn.title} · {when}"


def cuts(text: str, width: int) -> list[tuple[int, int]]:
    """Where rich wraps ``text`` (``_PROSE`` or ``_LINE``: words apart by one space) at
    ``width``: each line's (start, end), the space after it left out. Greedy, at spaces; a
    word wider than the line stays whole (callers decline it). One search a line."""
    lines: list[tuple[int, int]] = []
    start, size = 0, len(text)
    while size - start > width:
        cut = text.rfind(" ", start, start + width + 1)
        if cut < 0:  # the first word is wider than the line: it stays whole
            cut = text.find(" ", start)
            if cut < 0:
                break
        lines.append((start, cut))
        start = cut + 1
    lines.append((start, size))
    return lines
