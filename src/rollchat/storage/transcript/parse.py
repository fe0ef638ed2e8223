"""Parse a session file back: its head (header and first query) alone, or the whole file into
a Transcript. Only TranscriptError ever escapes, whatever the text."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from rollchat.domain import (
    SessionHeader,
    Summary,
    ToolCall,
    ToolExchange,
    Transcript,
    Turn,
    TurnKind,
    TurnStatus,
    Usage,
)
from rollchat.errors import TranscriptError
from rollchat.storage.transcript.render import amount
from rollchat.storage.transcript.summary import parse_summary_body
from rollchat.storage.transcript.syntax import (
    CONTEXT_BLOCK,
    RAW_STRUCT,
    RESERVED_LABELS,
    SUMMARY_END,
    SUMMARY_START,
    first_marker,
    first_query_line,
    parse_date,
    unesc_line,
    uninline,
)

_STATUSES: dict[str, TurnStatus] = {
    "ok": "ok", "interrupted": "interrupted", "unanswered": "unanswered", "error": "error"}
_HEADING_Q = re.compile(r"## Query ([0-9]+) \(([0-9]{2}:[0-9]{2}:[0-9]{2})\)$")
_HEADING_R = re.compile(r"## Session Restored \(([0-9]{2}:[0-9]{2}:[0-9]{2})\)$")
_HEADING_C = re.compile(r"## Carried Over ([0-9]+) \(([0-9]{2}:[0-9]{2}:[0-9]{2})\)$")
_HEADING_H = re.compile(r"## Handed Off \(([0-9]{2}:[0-9]{2}:[0-9]{2})\)$")
_FOOTER = re.compile(
    r"\*Time: ([0-9]+(?:\.[0-9]+)?)s \| Tokens: (?:([0-9]+) \(in: ([0-9]+), out: ([0-9]+)"
    r"(?:, cache read: ([0-9]+))?(?:, cache write: ([0-9]+))?\)|not reported)"
    r"(?: \| (interrupted|unanswered|error))? \| at ([^ ]+)\*$")
_LABEL = re.compile(r"\*\*((?:[^\\:]|\\.|:(?!\*\*))*):\*\*(?: (.*))?$", re.DOTALL)
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
    value = fields.get(name, "0").rstrip(" ")  # totals are padded (render_totals)
    if not re.fullmatch(r"[0-9]{1,18}", value):
        raise TranscriptError(f"header field '{name}' is not a number: {value[:40]!r}")
    return int(value)


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


# ---------------------------------------------------------------- body parsing


@dataclass
class _Fields:
    """The pieces of one turn block while it is parsed."""

    user: str | None = None
    context: str | None = None
    previous: str | None = None
    answer: str | None = None
    error: str | None = None
    footer: re.Match[str] | None = None
    tools: list[ToolExchange] | None = None
    pending_tool: list[str] | None = None
    block: str | None = None


def _text(first: str, rest: list[str]) -> str:
    lines = [first, *rest]
    if len(lines) > 1 and lines[-1] == "":
        lines.pop()
    return "\n".join(unesc_line(x) for x in lines)


def _single(first: str, rest: list[str], lineno: int) -> str:
    if any(x != "" for x in rest):
        raise TranscriptError(f"line {lineno}: unexpected text after a one-line field")
    return uninline(first)


def _label_field(f: _Fields, line: str, rest: list[str], lineno: int) -> None:
    m = _LABEL.match(line)
    if m is None:
        raise TranscriptError(f"line {lineno}: malformed label line: {line[:60]!r}")
    name, value = m[1], m[2] or ""
    if name == "You" and f.user is None:
        f.user = _text(value, rest)
    elif name == "Context" and f.context is None:
        f.context = _text(value, rest)
    elif name == "Previous Session" and f.previous is None:
        f.previous = _single(value, rest, lineno)
    elif f.answer is None and name not in RESERVED_LABELS:
        f.answer = _text(value, rest)
    else:
        raise TranscriptError(f"line {lineno}: unexpected or repeated label '{name[:40]}'")


def _tool_field(f: _Fields, key: str, value: str, rest: list[str], lineno: int) -> None:
    order = ("Tool call", "Call ID", "Arguments", "Result")
    got = f.pending_tool if f.pending_tool is not None else []
    if order[len(got)] != key:
        raise TranscriptError(f"line {lineno}: expected '*{order[len(got)]}:*', found '{key}'")
    if key == "Result":
        got.append(_text(value, rest))
    else:
        single = _single(value, rest, lineno)
        got.append(value if key == "Arguments" else single)
    f.pending_tool = got
    if len(got) < 4:
        return
    args = json.loads(got[2])
    if not isinstance(args, dict):
        raise TranscriptError(f"line {lineno}: tool arguments are not a JSON object")
    f.tools = [*(f.tools or []), ToolExchange(ToolCall(got[1], got[0], args), got[3])]
    f.pending_tool = None


def _star_field(f: _Fields, line: str, rest: list[str], lineno: int) -> None:
    tool = re.match(r"\*(Tool call|Call ID|Arguments|Result):\*(?: (.*))?$", line, re.DOTALL)
    marker = re.match(r"\*\[(interrupted by user|not answered|error)(?:: (.*))?\]\*$", line,
                      re.DOTALL)
    if tool is not None:
        _tool_field(f, tool[1], tool[2] or "", rest, lineno)
    elif line.startswith(CONTEXT_BLOCK) and f.block is None and f.user is not None:
        f.block = _text(line[len(CONTEXT_BLOCK) + 1:], rest)
    elif marker is not None and all(x == "" for x in rest):
        if marker[2] is not None:
            f.error = uninline(marker[2])
    elif _FOOTER.match(line) and all(x == "" for x in rest) and f.footer is None:
        f.footer = _FOOTER.match(line)
    else:
        raise TranscriptError(f"line {lineno}: unexpected line in a turn: {line[:60]!r}")


def _collect(lines: list[str], start: int, end: int) -> _Fields:
    f = _Fields()
    k = start
    while k < end:
        n = k + 1
        while n < end and not RAW_STRUCT.match(lines[n]):
            n += 1
        line, rest = lines[k], lines[k + 1:n]
        if line.startswith("**"):
            _label_field(f, line, rest, k + 1)
        elif line.startswith("*"):
            _star_field(f, line, rest, k + 1)
        else:
            raise TranscriptError(f"line {k + 1}: unexpected line in a turn: {line[:60]!r}")
        k = n
    return f


def _turn(lines: list[str], start: int, end: int) -> Turn:
    head = lines[start]
    q, r = _HEADING_Q.match(head) or _HEADING_C.match(head), _HEADING_R.match(head)
    h = _HEADING_H.match(head)
    f = _collect(lines, start + 1, end)
    m = f.footer
    if m is None or f.pending_tool is not None:
        raise TranscriptError(f"line {start + 1}: turn block has no footer or a broken tool call")
    if (q is not None and f.user is None) or (r is not None and f.context is None) or (
            h is not None and (f.context is None or f.answer is not None)):
        raise TranscriptError(f"line {start + 1}: turn block lacks its user/context line")
    usage = Usage(int(m[3] or 0), int(m[4] or 0), int(m[5] or 0), int(m[6] or 0))
    kind: TurnKind = (("query" if head.startswith("## Query") else "carried") if q
                      else "handoff" if h else "restored")
    return Turn(kind=kind, number=int(q[1]) if q else 0,
                started=parse_date(m[8], f"line {start + 1}: turn time"),
                user=f.user or "", assistant=f.answer or "", status=_STATUSES[m[7] or "ok"],
                elapsed=float(m[1]), usage=usage, tools=tuple(f.tools or ()),
                context=f.context or "", previous_session=f.previous, error=f.error,
                context_block=f.block or "")


def _summary(lines: list[str], start: int) -> Summary:
    for k in range(start + 1, len(lines)):
        if lines[k] == SUMMARY_START:
            raise TranscriptError(f"line {k + 1}: a second SESSION_SUMMARY_START")
        if lines[k] == SUMMARY_END:
            if any(x.strip() for x in lines[k + 1:]):
                raise TranscriptError(f"line {k + 2}: text after the summary block")
            return parse_summary_body("\n".join(lines[start + 1:k]))
    raise TranscriptError(f"line {start + 1}: summary block has no SESSION_SUMMARY_END")


def _block_end(lines: list[str], start: int) -> int | None:
    for k in range(start + 1, len(lines)):
        line = lines[k]
        if line == "---":
            return k
        if line.startswith(("---", "#", "<!--")):
            raise TranscriptError(f"line {start + 1}: turn block not closed by '---'")
    return None


def _body(lines: list[str], k: int) -> tuple[list[Turn], Summary | None]:
    turns: list[Turn] = []
    while k < len(lines):
        line = lines[k]
        if line == "":
            k += 1
        elif (_HEADING_Q.match(line) or _HEADING_R.match(line) or _HEADING_C.match(line)
              or _HEADING_H.match(line)):
            end = _block_end(lines, k)
            if end is None:  # truncated last block (crash mid-append): ignored
                break
            turns.append(_turn(lines, k, end))
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
