"""The simplest markdown (paragraphs of one line and tight bullet lists, with **strong** and
`code` words) written as rich draws it on a console without colours, without rich: ``show``
piped of a session whose answers are long documents of such blocks (rich: ~1 s a megabyte)."""

from __future__ import annotations

import re
from collections.abc import Callable

# Text that markdown reads as itself: one cell wide, none of * _ ` [ ] < > & \ ! # | ~ = +.
_TEXT = re.compile(r"[A-Za-z0-9,.;:'\"?()/ -]*")
_CODE = re.compile(r"[A-Za-z0-9,.;:'\"?()/_=+ -]+")  # the text of a `code` word
_SPAN = re.compile(r"\*\*([^*`]+)\*\*|`([^`]+)`")
_STOPS = ("", " ", ",", ".", ";", ":")  # what may follow a **strong** run's end
_BULLET, _HANG = " • ", "   "


# A line of inline markdown: its text and the spans of it rich styles, (start, end, style).
Inline = tuple[str, list[tuple[int, int, str]]]


def inline_text(line: str) -> str | None:
    """The text rich draws of one line of inline markdown (words apart by one space, starting
    with a letter, **strong** runs and `code` words; their markers dropped), or None for
    anything else."""
    found = inline_spans(line)
    return None if found is None else found[0]


def inline_spans(line: str) -> Inline | None:
    """``inline_text`` of ``line`` with the spans rich styles in it: ``markdown.strong`` for
    a **strong** run, ``markdown.code`` for a `code` word."""
    if (not line[:1].isalpha() and not line.startswith(("**", "`"))) or "``" in line:
        return None  # (a run of backticks opens a code span that only as long a run ends)
    out: list[str] = []
    spans: list[tuple[int, int, str]] = []
    at = size = 0
    for m in _SPAN.finditer(line):
        start, end = m.span()
        out.append(line[at:start])
        size += start - at
        strong, code = m[1], m[2]
        if strong is not None:  # opened at the start or after a space, around words
            if (start and line[start - 1] != " ") or line[end:end + 1] not in _STOPS or \
                    not (strong[0].isalnum() and strong[-1].isalnum()) or \
                    not _TEXT.fullmatch(strong):
                return None
            word, style = strong, "markdown.strong"
        else:  # markdown strips one space at each end of a code word: none there
            if code[0] == " " or code[-1] == " " or not _CODE.fullmatch(code):
                return None
            word, style = code, "markdown.code"
        out.append(word)
        spans.append((size, size + len(word), style))
        size += len(word)
        at = end
    out.append(line[at:])
    if not all(_TEXT.fullmatch(piece) for piece in out[::2]):
        return None
    text = "".join(out)
    if "  " in text or text.endswith(" ") or not text.isascii():
        return None
    return text, spans


def markdown_blocks(markup: str) -> list[tuple[bool, list[Inline]]] | None:
    """``markup`` as blocks apart by one blank line, each a paragraph of one line or a tight
    list of one-line ``- `` items (``inline_spans``): (whether it is a list, its lines); None
    for any other markdown."""
    blocks: list[tuple[bool, list[Inline]]] = []
    after_list = False
    for block in markup.split("\n\n"):
        items = block.split("\n")
        is_list = items[0].startswith("- ")
        if is_list and after_list:  # two lists apart by a blank line are one (loose) list
            return None
        after_list = is_list
        if not is_list and len(items) > 1:
            return None
        lines: list[Inline] = []
        for item in items:
            if is_list and not item.startswith("- "):
                return None
            found = inline_spans(item[2:] if is_list else item)
            if found is None:
                return None
            lines.append(found)
        blocks.append((is_list, lines))
    return blocks


def plain_markdown(markup: str, width: int,
                   wrapped: Callable[[str, int], list[str]]) -> str | None:
    """What rich's Markdown draws of ``markup`` on a console without colours ``width`` cells
    wide, when ``markup`` is blocks apart by one blank line, each a paragraph of one line or
    a tight list of one-line ``- `` items (``markdown_blocks``); None for any other markdown.
    ``wrapped``: a line's text wrapped as rich wraps it (a word wider than the line is left
    whole, and declined here)."""
    if width < 8:
        return None
    blocks = markdown_blocks(markup)
    if blocks is None:
        return None
    lines: list[str] = []
    for k, (is_list, items) in enumerate(blocks):
        if k or is_list:  # rich puts a blank line before a list, even the first block
            lines.append("")
        if not is_list:
            lines += wrapped(items[0][0], width)
            continue
        for text, _ in items:
            first, *rest = wrapped(text, width - 3)
            lines += [_BULLET + first, *(_HANG + line for line in rest)]
    if max(map(len, lines)) > width:
        return None
    return "\n".join(lines) + "\n"
