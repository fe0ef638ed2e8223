"""Read a session file in bounded windows, whatever its size: decode bytes, and learn from the
head and the tail alone what a listing shows and where the summary block is."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from rollchat.domain import SessionHeader, Summary
from rollchat.errors import TranscriptError
from rollchat.storage.transcript.parse import Head, parse_head
from rollchat.storage.transcript.signed import after_block, read_after
from rollchat.storage.transcript.summary import parse_summary_body
from rollchat.storage.transcript.syntax import SUMMARY_END, SUMMARY_START, marker_lines

HEAD_BYTES = 8 * 1024
HEAD_MAX_BYTES = 64 * 1024
TAIL_BYTES = 64 * 1024
TAIL_MAX_BYTES = 1024 * 1024
# ``read_at(offset, size)``: the file's bytes there (fewer at its end), e.g. ``os.pread``.
ReadAt = Callable[[int, int], bytes]
_QUERY_RE = re.compile(r"## Query ([0-9]{1,12}) \(")
# Turn headings and footers, to add up the tokens of the query turns a tail holds.
_TURN_MARK_RE = re.compile(r"^(?:(## Query [0-9]{1,12} \(|## Session Restored \()"
                           r"|\*Time: [0-9]+(?:\.[0-9]+)?s \| Tokens: ([0-9][0-9,]{0,24}) \()",
                           re.MULTILINE)


def decode(data: bytes, *, binary_check: bool = True) -> str:
    """A session file's bytes (or a window of them) as text; TranscriptError when they are not
    UTF-8, or (``binary_check``, for windows of files not known to be sessions) hold a NUL."""
    if binary_check and b"\0" in data:
        raise TranscriptError("binary file, not a session")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise TranscriptError("not UTF-8 text, not a session") from None


@dataclass(frozen=True)
class Glance:
    """What a session file's head and tail tell (a listing's line), read in bounded windows."""

    header: SessionHeader
    first_query: str | None
    has_summary: bool  # a well-formed summary block ends the file
    summary_problem: str | None  # why the summary markers are corrupted, if they are
    last_query: int  # the number of the last query turn whose heading is in the tail
    query_tokens: int  # tokens of the query turns whose heading and footer are in the tail
    whole: bool  # the tail window is the whole file


@dataclass(frozen=True)
class _Tail:
    has_summary: bool
    summary: Summary | None
    problem: str | None
    last_query: int
    query_tokens: int
    whole: bool


def glance(read_at: ReadAt, size: int) -> Glance:
    """The head and tail of a file of ``size`` bytes: at most HEAD_MAX_BYTES + TAIL_MAX_BYTES
    read, usually TAIL_BYTES. TranscriptError when it is not a session file."""
    if size == 0:
        raise TranscriptError("empty file")
    text, whole = _tail_text(read_at, size, TAIL_BYTES)
    head = _head_of(text) if whole else _read_head(read_at, size)
    tail = _scan_tail(text, whole, read_at, size, parse_body=False)
    return Glance(head.header, head.first_query, tail.has_summary, tail.problem,
                  tail.last_query, tail.query_tokens, tail.whole)


def tail_summary(read_at: ReadAt, size: int) -> Summary | None:
    """The summary block ending the file, parsed; None if there is none, or it is corrupted."""
    text, whole = _tail_text(read_at, size, TAIL_BYTES)
    return _scan_tail(text, whole, read_at, size, parse_body=True).summary


def _read_head(read_at: ReadAt, size: int) -> Head:
    data = read_at(0, HEAD_BYTES)
    if len(data) < size and b"\n---\n" not in data:
        data = read_at(0, HEAD_MAX_BYTES)
    cut = ""
    if len(data) < size:  # drop a last line cut in the middle (maybe mid-character)
        at = data.rfind(b"\n") + 1
        data, rest = data[:at], data[at:]
        if rest.startswith(b"**You:** "):  # the first question, longer than the window:
            cut = _whole_characters(rest)  # its start is enough to list and match it
            cut = "" if "\0" in cut else cut
    return _head_of(decode(data) + cut)


def _whole_characters(data: bytes) -> str:
    """``data`` cut anywhere, as text: an incomplete last character dropped."""
    for end in range(len(data), max(len(data) - 4, 0), -1):
        try:
            return data[:end].decode("utf-8")
        except UnicodeDecodeError:
            continue
    return ""


def _head_of(text: str) -> Head:
    try:
        return parse_head(text)
    except TranscriptError as e:
        why = str(e)  # the parser may already say it ("line 1: not a session file (...)")
        raise TranscriptError(why if "not a session file" in why
                              else f"not a session file: {why}") from None


def _tail_text(read_at: ReadAt, size: int, window: int) -> tuple[str, bool]:
    """The last ``window`` bytes, starting at a line start; True when it is the whole file."""
    if size <= window:
        return decode(read_at(0, size)), True
    data = read_at(size - window - 1, window + 1)  # one byte more: is it a line start?
    return decode(data[data.find(b"\n") + 1:]), False


def _summary_state(text: str, parse_body: bool) -> tuple[bool, Summary | None, str | None]:
    """(has a well-formed block, its parsed summary when asked, the problem if corrupted)."""
    marks = marker_lines(text)
    starts = [pos for pos, start in marks if start]
    ends = [pos for pos, start in marks if not start]
    if not marks:
        return False, None, None
    if len(starts) > 1:
        return False, None, "corrupted summary markers: two SESSION_SUMMARY_START lines"
    if not ends:
        return False, None, "corrupted summary markers: SESSION_SUMMARY_START without END"
    if len(ends) > 1 or not starts or ends[0] < starts[0]:
        return False, None, "corrupted summary markers: SESSION_SUMMARY_END before START"
    try:
        after = after_block(text[ends[0] + len(SUMMARY_END):], 0)
    except TranscriptError:
        return False, None, "corrupted summary: text after SESSION_SUMMARY_END"
    if not parse_body:
        return True, None, None
    try:
        body = text[starts[0] + len(SUMMARY_START) + 1:ends[0]].removesuffix("\n")
        return True, read_after(parse_summary_body(body), after), None
    except TranscriptError as e:
        return False, None, f"unreadable summary block: {e}"


def _scan_tail(text: str, whole: bool, read_at: ReadAt, size: int, parse_body: bool) -> _Tail:
    if not whole and SUMMARY_START not in text and (SUMMARY_END in text or not text.strip()):
        # a summary block (with its signed line) longer than a window, or a last line that is
        text, whole = _tail_text(read_at, size, TAIL_MAX_BYTES)
    has, summary, problem = _summary_state(text, parse_body)
    last = 0
    pos = text.rfind("\n## Query ")
    if pos >= 0:
        m = _QUERY_RE.match(text, pos + 1)
        last = int(m[1]) if m else 0
    tokens = 0 if has else _query_tokens(text)
    return _Tail(has, summary, problem, last, tokens, whole)


def _query_tokens(text: str) -> int:
    """The sum of the footers' token counts of the query and restoration turns in ``text``
    (the tokens billed; carried-over turns were billed in their parent). A footer counts only
    after its own heading: a block cut by the start of a tail window is skipped. Content lines
    are escaped, so cannot match."""
    total, in_query = 0, False
    for m in _TURN_MARK_RE.finditer(text):
        if m[2] is None:
            in_query = m[1] is not None
        elif in_query:
            total += int(m[2].replace(",", ""))
            in_query = False
    return total
