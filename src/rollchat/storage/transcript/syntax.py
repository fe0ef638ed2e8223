"""The pieces of the session file's syntax that rendering, parsing and scanning share: the summary
markers, the reversible escapes of content lines and one-line values, dates, marker lines."""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import datetime

from rollchat.errors import TranscriptError

SUMMARY_START = "<!-- SESSION_SUMMARY_START -->"
SUMMARY_END = "<!-- SESSION_SUMMARY_END -->"
# Labels that are structure, never an agent's name.
RESERVED_LABELS = frozenset({"You", "Context", "Previous Session"})
# The per-turn context block sent with a query (date and time, relevant memory): a star field,
# which no older file holds (content lines starting so are escaped) and no agent name can be.
CONTEXT_BLOCK = "*Context block:*"
# The star fields of an answer's blocks (see render.block_lines), in the order they come.
TOOL_CALL, CALL_ID, ARGUMENTS = "*Tool call:*", "*Call ID:*", "*Arguments:*"
RESULT, ERROR_RESULT = "*Result:*", "*Result (error):*"
SENT = "*Sent:*"  # how a result too large for the context was sent (cut or omitted)
IMAGE, ATTACHED = "*Image:*", "*Attached image:*"  # a result's image, a user's attachment
PROVIDER_BLOCK = "*Provider block:*"  # a provider's own block, kept byte for byte
# The start of a line that could be structure: a content line starting so gets escaped.
RAW_STRUCT = re.compile(r"#|\*\*|\*[^ *\t]|---|<!--")
_MARKER_PREFIX = "\n<!-- SESSION_SUMMARY_"

Escaper = Callable[[str], str]


def make_escaper(needs: Callable[[str], bool]) -> tuple[Escaper, Escaper]:
    """A reversible line escaper: one backslash is added when ``needs(line without \\s)``."""

    def esc(line: str) -> str:
        return "\\" + line if needs(line.lstrip("\\")) else line

    def unesc(line: str) -> str:
        return line[1:] if line.startswith("\\") and needs(line.lstrip("\\")) else line

    return esc, unesc


def needs_turn(s: str) -> bool:
    """Whether a content line (its leading backslashes removed) would look like structure."""
    return RAW_STRUCT.match(s) is not None


esc_line, unesc_line = make_escaper(needs_turn)


def inline(s: str, extra: str = "") -> str:
    """A one-line value: ``\\``, newline and CR escaped, and each character of ``extra``."""
    s = s.replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r")
    for ch in extra:
        s = s.replace(ch, "\\" + ch)
    return s


def uninline(s: str) -> str:
    """The inverse of :func:`inline`."""
    if "\\" not in s:
        return s
    return re.sub(r"\\(.)", lambda m: {"n": "\n", "r": "\r"}.get(m[1], m[1]), s,
                  flags=re.DOTALL)


def aware(d: datetime, what: str) -> str:
    """``d`` in ISO 8601; TranscriptError if it has no UTC offset."""
    if d.tzinfo is None or d.utcoffset() is None:
        raise TranscriptError(f"{what} must be a timezone-aware datetime, got {d.isoformat()}")
    return d.isoformat()


def parse_date(value: str, what: str) -> datetime:
    """An aware datetime from ISO 8601 text; TranscriptError otherwise."""
    try:
        d = datetime.fromisoformat(value)
    except ValueError:
        raise TranscriptError(f"{what} is not an ISO 8601 date: {value[:40]!r}") from None
    if d.tzinfo is None:
        raise TranscriptError(f"{what} has no UTC offset: {value[:40]!r}")
    return d


def marker_lines(text: str) -> list[tuple[int, bool]]:
    """(offset in ``text`` of the line, True for START / False for END) of each raw summary
    marker line, in order. Content lines are escaped, so only the renderer writes these.
    Uses ``str.find``: fast on the tail window of a large file."""
    padded, out = "\n" + text, []
    pos = padded.find(_MARKER_PREFIX)
    while pos >= 0:
        end = padded.find("\n", pos + 1)
        line = padded[pos + 1:] if end < 0 else padded[pos + 1:end]
        if line in (SUMMARY_START, SUMMARY_END):
            out.append((pos, line == SUMMARY_START))
        pos = padded.find(_MARKER_PREFIX, pos + 1)
    return out


def first_marker(text: str) -> int | None:
    """The offset of the first raw summary marker line in ``text``, or None."""
    marks = marker_lines(text)
    return marks[0][0] if marks else None


_FIRST_QUERY = re.compile(r"## Query [0-9]+ \([0-9]{2}:[0-9]{2}:[0-9]{2}\)$")


def first_query_line(lines: list[str], start: int) -> str | None:
    """The first line of the first query at or after line index ``start`` of a session file's
    ``lines``, unescaped, or None."""
    for i in range(start, len(lines) - 1):
        if _FIRST_QUERY.match(lines[i]) and lines[i + 1].startswith("**You:**"):
            return unesc_line(lines[i + 1][len("**You:** "):])
    return None
