"""Parse a session file back: its head (header and first query) alone, or the whole file into
a Transcript. Only TranscriptError ever escapes, whatever the text."""

from __future__ import annotations

import re
from dataclasses import dataclass

from rollchat.domain import (
    SessionHeader,
    Summary,
    Transcript,
    Turn,
)
from rollchat.errors import TranscriptError
from rollchat.storage.transcript.render import amount
from rollchat.storage.transcript.signed import after_block, read_after
from rollchat.storage.transcript.summary import parse_summary_body
from rollchat.storage.transcript.syntax import (
    SUMMARY_END,
    SUMMARY_START,
    first_marker,
    first_query_line,
    parse_date,
    uninline,
)
from rollchat.storage.transcript.turn_block import (
    HEADING_C,
    HEADING_H,
    HEADING_Q,
    HEADING_R,
    parse_turn,
)

_HEADER_LINE = re.compile(r"\*\*([A-Za-z ]+):\*\*(?: (.*))?$", re.DOTALL)
_MODEL_VALUE = re.compile(r"((?:[^\\(]|\\.)*) \(((?:[^\\)]|\\.)*)\)$", re.DOTALL)


# ---------------------------------------------------------------- header parsing


@dataclass(frozen=True)
class Head:
    """What the start of a session file tells: its header and its first query's first line."""

    header: SessionHeader
    first_query: str | None


def _header_fields(lines: list[str]) -> tuple[dict[str, str], int]:
    if not lines or not (lines[0].startswith("# ") and lines[0].endswith(" Conversation")):
        raise TranscriptError("line 1: not a session file (expected '# <Agent> Conversation')")
    fields: dict[str, str] = {}
    for i in range(1, len(lines)):
        line = lines[i]
        if line == "---":
            return fields, i + 1
        if line == "":
            continue
        m = _HEADER_LINE.match(line)
        if m is None:
            raise TranscriptError(f"line {i + 1}: unexpected line in the header: {line[:60]!r}")
        fields[m[1]] = m[2] or ""
    raise TranscriptError("the header is not terminated by a '---' line")


def _int_field(fields: dict[str, str], name: str) -> int:
    value = fields.get(name, "0").strip(" ")  # totals are padded (render_totals)
    if not re.fullmatch(r"[0-9]{1,18}|[0-9]{1,3}(?:,[0-9]{3}){1,5}", value):
        raise TranscriptError(f"header field '{name}' is not a number: {value[:40]!r}")
    return int(value.replace(",", ""))


def _header(fields: dict[str, str]) -> SessionHeader:
    for name in ("Session ID", "Date", "Agent", "Agent Path", "Model", "Total Queries"):
        if name not in fields:
            raise TranscriptError(f"the header has no '{name}' field")
    m = _MODEL_VALUE.match(fields["Model"])
    if m is None:
        raise TranscriptError("header field 'Model' is not '<model> (<provider>)'")
    opt = {k: uninline(fields[k]) if k in fields else None
           for k in ("Resumed From", "Forked From", "Previous Session", "Handed From",
                     "Imported From")}
    children = fields.get("Continued In", "").strip()
    return SessionHeader(
        session_id=uninline(fields["Session ID"]), date=parse_date(fields["Date"], "Date"),
        agent=uninline(fields["Agent"]), agent_path=uninline(fields["Agent Path"]),
        model=uninline(m[1]), provider=uninline(m[2]),
        resumed_from=(opt["Resumed From"] if opt["Resumed From"] is not None
                      else opt["Forked From"]),
        previous_session=opt["Previous Session"],
        total_queries=_int_field(fields, "Total Queries"),
        total_tokens=_int_field(fields, "Tokens Billed" if "Tokens Billed" in fields
                                else "Total Tokens"),  # (its name in older files)
        context_tokens=_int_field(fields, "Context Tokens"),
        forked=opt["Resumed From"] is None and opt["Forked From"] is not None,
        continued_in=tuple(uninline(c) for c in children.split(", ")) if children else (),
        tools=_tools(fields.get("Tools")), handed_from=opt["Handed From"],
        imported_from=opt["Imported From"], cost=_cost(fields.get("Cost")),
        title=uninline(fields["Title"]) if "Title" in fields else None)


def _cost(value: str | None) -> float | None:
    if value is None:
        return None
    dollars = amount(value)
    if dollars is None:
        raise TranscriptError(f"header field 'Cost' is not an amount like $0.0123: "
                              f"{value.strip()[:40]!r}")
    return dollars


def _tools(value: str | None) -> tuple[str, ...] | None:
    if value is None:
        return None
    value = value.strip()
    return () if value in ("", "(none)") else tuple(uninline(t) for t in value.split(", "))


def parse_head(text: str) -> Head:
    """Parse the start of a session file: the header and the first query's first line."""
    lines = text.split("\n")
    try:
        fields, body = _header_fields(lines)
        return Head(_header(fields), first_query_line(lines, body))
    except TranscriptError:
        raise
    except Exception as e:  # any input string: only our own error type escapes
        raise TranscriptError(f"not a readable session header: {e}") from None


def _summary(lines: list[str], start: int) -> Summary:
    for k in range(start + 1, len(lines)):
        if lines[k] == SUMMARY_START:
            raise TranscriptError(f"line {k + 1}: a second SESSION_SUMMARY_START")
        if lines[k] == SUMMARY_END:
            after = after_block("\n".join(lines[k + 1:]), k + 2)
            return read_after(parse_summary_body("\n".join(lines[start + 1:k])), after)
    raise TranscriptError(f"line {start + 1}: summary block has no SESSION_SUMMARY_END")


_BREAK_FIRST = frozenset("-<#")  # the first characters of "---", the markers and headings


def _block_end(lines: list[str], start: int) -> int | None:
    for k in range(start + 1, len(lines)):
        line = lines[k]
        if line[:1] not in _BREAK_FIRST:  # (most lines: a text's, a result's)
            continue
        if line == "---":
            return k
        # content that would look like these is escaped (syntax.STRUCT): another block began
        if line in (SUMMARY_START, SUMMARY_END) or _heading(line):
            raise TranscriptError(f"line {start + 1}: turn block not closed by '---'")
    return None


def _heading(line: str) -> bool:
    return line.startswith("## ") and (HEADING_Q.match(line) or HEADING_R.match(line)
                                       or HEADING_C.match(line) or HEADING_H.match(line)
                                       ) is not None


def _body(lines: list[str], k: int) -> tuple[list[Turn], Summary | None]:
    turns: list[Turn] = []
    while k < len(lines):
        line = lines[k]
        if line == "":
            k += 1
        elif _heading(line):
            end = _block_end(lines, k)
            if end is None:  # truncated last block (crash mid-append): ignored
                break
            turns.append(parse_turn(lines, k, end))
            k = end + 1
        elif line == SUMMARY_START:
            return turns, _summary(lines, k)
        elif k == len(lines) - 1 and k > 0 and lines[k - 1] == "":
            break  # a torn last line (crash mid-append): ignored like a truncated block
        else:
            raise TranscriptError(f"line {k + 1}: unexpected line: {line[:60]!r}")
    return turns, None


def parse(text: str) -> Transcript:
    """Parse a whole session file. Raises TranscriptError (only) for anything else."""
    if not isinstance(text, str):
        raise TranscriptError("a session file must be text")
    lines = text.split("\n")
    try:
        fields, start = _header_fields(lines)
        header = _header(fields)
        turns, summary = _body(lines, start)
    except TranscriptError:
        raise
    except Exception as e:  # any input string: only our own error type escapes
        raise TranscriptError(f"not a valid session file: {e}") from None
    return Transcript(header, tuple(turns), summary)


def parse_lenient(text: str) -> Transcript:
    """:func:`parse`, except that a corrupted summary block (stray or repeated markers, an
    unreadable body) is dropped with everything after it: the turns before it remain."""
    try:
        return parse(text)
    except TranscriptError:
        cut = first_marker(text)
        if cut is None:
            raise
    return parse(text[:max(cut - 1, 0)])
