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
# The per-turn context block sent with a query (date and time, relevant memory): an HTML
# comment, hidden where the markdown is rendered and easy to skip where it is not, its lines
# as they were sent (only a line that would forge structure is escaped, and "-->" is written
# "--\\>" so the comment ends where it should). Files of 0546dd8 to 25.4 hold it as a star field.
CONTEXT_BLOCK = "*Context block:*"
# A query sent from a saved prompt: the command as the user typed it (``/review src``), one
# line after the prompt it sent (files before 26.12 have none).
TYPED = "*Typed:*"
CONTEXT_OPEN, CONTEXT_END = "<!-- context block, sent with this message:", "-->"
# The star fields of an answer's blocks (see render.block_lines), in the order they come.
TOOL_CALL, CALL_ID, ARGUMENTS = "*Tool call:*", "*Call ID:*", "*Arguments:*"
RESULT, ERROR_RESULT = "*Result:*", "*Result (error):*"
SENT = "*Sent:*"  # how a result too large for the context was sent (cut or omitted)
IMAGE, ATTACHED = "*Image:*", "*Attached image:*"  # a result's image, a user's attachment
PROVIDER_BLOCK = "*Provider block:*"  # a provider's own block, kept byte for byte
FRAMEWORK_STATE = "*Framework state:*"  # a framework agent's state after a turn (JSON)
# The start of a line that could be structure: files written before 25.4 escaped every content
# line starting so (a heading, bold, emphasis, a rule, a comment), and the parser still removes
# one backslash from such a line (see make_escaper).
RAW_STRUCT = re.compile(r"#|\*\*|\*[^ *\t]|---|<!--")
# What would forge structure inside a turn block: a label field (**X:**), a star field (*X:*),
# a status marker, a footer, a turn heading, the block's end, a summary marker or a region of
# our own. Only a content line matching it is escaped now (ordinary markdown is left as it is),
# and only such a line starts a field (every line matching it also matches RAW_STRUCT).
STRUCT = re.compile(r"\*\*(?:[^\\:]|\\.|:(?!\*\*))*:\*\*(?: |$)"
                    r"|\*[^ *\t](?:[^*\\]|\\.)*?:\*(?: |$)"
                    r"|\*\[(?:interrupted by user|not answered|error)|\*(?:Time: |at [0-9])"
                    r"|## (?:Query|Session Restored|Carried Over|Handed Off)\b|---$"
                    r"|<!-- (?:SESSION_SUMMARY_|context block|restored summary)", re.DOTALL)
_MARKER_PREFIX = "\n<!-- SESSION_SUMMARY_"

Escaper = Callable[[str], str]


def make_escaper(needs: Callable[[str], bool],
                 forges: Callable[[str], bool] | None = None) -> tuple[Escaper, Escaper]:
    """A reversible line escaper: the unescaper removes one backslash when ``needs(line
    without \\s)``; the escaper adds one when the line would ``forges`` structure (a subset of
    ``needs``; default ``needs``), or when it starts with a backslash and ``needs`` holds. So
    files escaped by ``needs`` alone (older ones) read the same, and new ones escape less."""
    must = forges or needs

    def esc(line: str) -> str:
        bare = line.lstrip("\\")
        return "\\" + line if must(bare) or (bare != line and needs(bare)) else line

    def unesc(line: str) -> str:
        return line[1:] if line.startswith("\\") and needs(line.lstrip("\\")) else line

    return esc, unesc


def needs_turn(s: str) -> bool:
    """Whether a content line (its leading backslashes removed) looked like structure to the
    files written before 25.4 (the unescaper's rule)."""
    return RAW_STRUCT.match(s) is not None


def forges_turn(s: str) -> bool:
    """Whether a content line (its leading backslashes removed) would forge structure."""
    return STRUCT.match(s) is not None


esc_line, unesc_line = make_escaper(needs_turn, forges_turn)
# The first character of every line esc_line may change: a backslash, or the first of
# RAW_STRUCT's and STRUCT's (each of their patterns starts with one of these). unesc_line
# changes only a line that starts with a backslash.
FIELD_FIRST = frozenset("*#-<")
_ESCAPED_FIRST = frozenset("\\*#-<")
_MAY_ESCAPE = re.compile(r"\n[\\*#<-]")  # after the first line (a leading "^|" is 30x slower)


def esc_lines(text: str) -> list[str]:
    """``text``'s lines, each as ``esc_line`` makes it. Most are kept as they are: only a line
    starting with one of ``_ESCAPED_FIRST`` is looked at (a tool's 35 MB of output were
    385,000 regex matches)."""
    lines = text.split("\n")
    if text[:1] not in _ESCAPED_FIRST and _MAY_ESCAPE.search(text) is None:
        return lines
    return [esc_line(x) if x[:1] in _ESCAPED_FIRST else x for x in lines]


def unesc_text(lines: list[str]) -> str:
    """``lines`` joined, each as ``unesc_line`` makes it (only those starting with a
    backslash can change)."""
    text = "\n".join(lines)
    if not text.startswith("\\") and "\n\\" not in text:
        return text
    return "\n".join(unesc_line(x) for x in lines)


def arrows(line: str) -> str:
    """``line`` with one backslash more between each ``--`` and ``>`` (see CONTEXT_OPEN)."""
    return re.sub(r"--(\\*)>", r"--\1\\>", line) if "--" in line else line


def unarrows(line: str) -> str:
    """The inverse of :func:`arrows`."""
    return re.sub(r"--(\\*)\\>", r"--\1>", line) if "--" in line else line


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


# the same, found in a text by one search (``^``/``$``: a line's start and end, as split on "\n")
_FIRST_QUERY_AT = re.compile(
    r"^## Query [0-9]+ \([0-9]{2}:[0-9]{2}:[0-9]{2}\)\n(\*\*You:\*\*[^\n]*)", re.MULTILINE)


def first_query_line_in(text: str, start: int) -> str | None:
    """``first_query_line`` from the line of ``text`` that begins at offset ``start``, without
    cutting a large ``text`` into lines."""
    found = _FIRST_QUERY_AT.search(text, start)
    return None if found is None else unesc_line(found.group(1)[len("**You:** "):])
