"""Render a session (header, turns, summary block) to markdown and parse it back; pure, no I/O.

Format rules (the design's session file, made reversible):

* Content lines (user text, answers, tool results, context, summary text) that could look
  like structure get one extra leading backslash: any line matching ``\\\\*`` followed by
  ``#``, ``**``, ``*`` + a non-space, ``---`` or ``<!--``. The parser removes one. So a raw
  structural line only ever comes from the renderer: no message can forge a turn or a summary.
  Summary text lines also escape leading whitespace, section-like labels, a bare ``None`` and
  code fences, and get a trailing ``\\`` when they are empty or end in a space, tab, ``\\r``
  or ``\\`` (so a tolerant parser may strip trailing spaces).
* Single-line values (header fields, tool names and ids, errors, the agent name in labels)
  escape ``\\``, newline and CR as ``\\\\``, ``\\n``, ``\\r`` (and ``(``, ``)``, ``*``, ``:``
  where they would be ambiguous).
* Time: the heading shows ``HH:MM:SS`` for people; the footer ends with ``| at <ISO 8601>``,
  the full aware start time, which is what the parser reads. ``elapsed`` is kept to 0.1 s.
* Truncation: a last block with no closing ``---`` (a crash mid-append) is ignored by
  :func:`parse`, which returns the complete turns before it. The number of a "restored"
  turn is not stored (it is always 0).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime

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

SUMMARY_START = "<!-- SESSION_SUMMARY_START -->"
SUMMARY_END = "<!-- SESSION_SUMMARY_END -->"
FALLBACK_NOTE = (
    "*[summary written by the local extractive summarizer because the model's summary failed]*"
)
_STATUSES: dict[str, TurnStatus] = {
    "ok": "ok", "interrupted": "interrupted", "unanswered": "unanswered", "error": "error"}
_RESERVED_LABELS = frozenset({"You", "Context", "Previous Session"})
_RAW_STRUCT = re.compile(r"#|\*\*|\*[^ *\t]|---|<!--")
_SECTIONS = ("Background Context", "Current Session Summary", "Topics Discussed",
             "Decisions Made", "Pending")
_SECTION_RE = re.compile(
    r"(#{1,6}[ \t]*)?(\*\*)?[ \t]*(background context|current session summary|topics discussed"
    r"|decisions made|pending)[ \t]*(:?)[ \t]*(\*\*)?[ \t]*(:?)(.*)$", re.IGNORECASE)
_NONE_WORDS = frozenset({"none", "none.", "n/a", "-"})
_HEADING_Q = re.compile(r"## Query ([0-9]+) \(([0-9]{2}:[0-9]{2}:[0-9]{2})\)$")
_HEADING_R = re.compile(r"## Session Restored \(([0-9]{2}:[0-9]{2}:[0-9]{2})\)$")
_HEADING_C = re.compile(r"## Carried Over ([0-9]+) \(([0-9]{2}:[0-9]{2}:[0-9]{2})\)$")
_FOOTER = re.compile(
    r"\*Time: ([0-9]+(?:\.[0-9]+)?)s \| Tokens: ([0-9]+) \(in: ([0-9]+), out: ([0-9]+)"
    r"(?:, cache read: ([0-9]+))?(?:, cache write: ([0-9]+))?\)"
    r"(?: \| (interrupted|unanswered|error))? \| at ([^ ]+)\*$")
_LABEL = re.compile(r"\*\*((?:[^\\:]|\\.|:(?!\*\*))*):\*\*(?: (.*))?$", re.DOTALL)
_HEADER_LINE = re.compile(r"\*\*([A-Za-z ]+):\*\*(?: (.*))?$", re.DOTALL)
_MODEL_VALUE = re.compile(r"((?:[^\\(]|\\.)*) \(((?:[^\\)]|\\.)*)\)$", re.DOTALL)


# ---------------------------------------------------------------- escaping


def _make_escaper(needs: Callable[[str], bool]) -> tuple[Callable[[str], str],
                                                        Callable[[str], str]]:
    """A reversible line escaper: one backslash is added when ``needs(line without \\s)``."""

    def esc(line: str) -> str:
        return "\\" + line if needs(line.lstrip("\\")) else line

    def unesc(line: str) -> str:
        return line[1:] if line.startswith("\\") and needs(line.lstrip("\\")) else line

    return esc, unesc


def _needs_turn(s: str) -> bool:
    return _RAW_STRUCT.match(s) is not None


def _needs_summary(s: str) -> bool:
    return (_needs_turn(s) or s[:1] in (" ", "\t", ":") or s.lower() in _NONE_WORDS
            or s.startswith("```") or _section(s) is not None)


_esc_line, _unesc_line = _make_escaper(_needs_turn)
_esc_sum, _unesc_sum = _make_escaper(_needs_summary)


def _protect(line: str) -> str:
    return line + "\\" if line == "" or line[-1] in " \t\r\\" else line


def _unprotect(line: str) -> str:
    return line[:-1] if line.endswith("\\") else line


def _sum_line(line: str) -> str:
    return _protect(_esc_sum(line))


def _sum_unline(line: str) -> str:
    return _unesc_sum(_unprotect(line))


def _inline(s: str, extra: str = "") -> str:
    s = s.replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r")
    for ch in extra:
        s = s.replace(ch, "\\" + ch)
    return s


def _uninline(s: str) -> str:
    if "\\" not in s:
        return s
    return re.sub(r"\\(.)", lambda m: {"n": "\n", "r": "\r"}.get(m[1], m[1]), s,
                  flags=re.DOTALL)


def _agent_label(name: str) -> str:
    enc = _inline(name, "*:")
    return "\\" + enc if enc in _RESERVED_LABELS else enc


def _content(text: str) -> list[str]:
    return [_esc_line(x) for x in text.split("\n")]


def _field(label: str, text: str) -> list[str]:
    lines = _content(text)
    return [label + lines[0], *lines[1:], ""]


def _aware(d: datetime, what: str) -> str:
    if d.tzinfo is None or d.utcoffset() is None:
        raise TranscriptError(f"{what} must be a timezone-aware datetime, got {d.isoformat()}")
    return d.isoformat()


# ---------------------------------------------------------------- rendering


def render_header(h: SessionHeader) -> str:
    """The header block, ending with ``---`` and a blank line."""
    lines = [f"# {_inline(h.agent)} Conversation", "",
             f"**Session ID:** {_inline(h.session_id)}",
             f"**Date:** {_aware(h.date, 'Date')}",
             f"**Agent:** {_inline(h.agent)}",
             f"**Agent Path:** {_inline(h.agent_path)}",
             f"**Model:** {_inline(h.model, '()')} ({_inline(h.provider, '()')})"]
    if h.resumed_from is not None:
        lines.append(f"**Resumed From:** {_inline(h.resumed_from)}")
    if h.previous_session is not None:
        lines.append(f"**Previous Session:** {_inline(h.previous_session)}")
    lines += [f"**Total Queries:** {h.total_queries}", f"**Total Tokens:** {h.total_tokens}",
              "", "---", "", ""]
    return "\n".join(lines)


def _footer(t: Turn) -> str:
    u = t.usage
    parts = f"in: {u.input_tokens}, out: {u.output_tokens}"
    if u.cache_read_tokens:
        parts += f", cache read: {u.cache_read_tokens}"
    if u.cache_write_tokens:
        parts += f", cache write: {u.cache_write_tokens}"
    status = "" if t.status == "ok" else f" | {t.status}"
    return (f"*Time: {t.elapsed:.1f}s | Tokens: {u.total} ({parts}){status}"
            f" | at {_aware(t.started, 'Turn.started')}*")


def _markers(t: Turn) -> list[str]:
    err = None if t.error is None else _inline(t.error)
    out: list[str] = []
    if t.status == "interrupted":
        out.append("*[interrupted by user]*")
    if t.status == "unanswered":
        out.append("*[not answered]*" if err is None else f"*[not answered: {err}]*")
    elif t.status == "error" or err is not None:
        out.append("*[error]*" if err is None else f"*[error: {err}]*")
    return [x for m in out for x in (m, "")]


def _tool_lines(ex: ToolExchange) -> list[str]:
    args = json.dumps(dict(ex.call.arguments), ensure_ascii=False, default=str)
    return [f"*Tool call:* {_inline(ex.call.name)}", "", f"*Call ID:* {_inline(ex.call.id)}",
            "", f"*Arguments:* {args}", "", *_field("*Result:* ", ex.result)]


def render_turn(t: Turn, agent_name: str) -> str:
    """One turn block, ending with ``---`` and a blank line."""
    clock = t.started.strftime("%H:%M:%S")
    lines: list[str] = []
    if t.kind in ("query", "carried"):
        title = "Query" if t.kind == "query" else "Carried Over"
        lines += [f"## {title} {t.number} ({clock})", *_field("**You:** ", t.user)]
    if t.kind == "restored" or t.context:
        if t.kind == "restored":
            lines.append(f"## Session Restored ({clock})")
        lines += _field("**Context:** ", t.context)
    if t.previous_session is not None:
        lines += [f"**Previous Session:** {_inline(t.previous_session)}", ""]
    if t.kind == "restored" and t.user:
        lines += _field("**You:** ", t.user)
    for ex in t.tools:
        lines += _tool_lines(ex)
    if not (t.status == "unanswered" and t.assistant == ""):
        lines += _field(f"**{_agent_label(agent_name)}:** ", t.assistant)
    lines += [*_markers(t), _footer(t), "", "---", "", ""]
    return "\n".join(lines)


def _bullets(items: Sequence[str]) -> list[str]:
    if not items:
        return ["- None"]
    out: list[str] = []
    for item in items:
        first, *rest = item.split("\n")
        out.append("- " + _sum_line(first))
        out += ["  " + _sum_line(x) for x in rest]
    return out


def render_summary_block(s: Summary) -> str:
    """The summary block, markers included, ending with a newline."""
    first, *rest = s.background.split("\n")
    lines = [SUMMARY_START]
    if s.fallback:
        lines += [FALLBACK_NOTE, ""]
    lines += ["**Background Context:** " + _sum_line(first), *[_sum_line(x) for x in rest], "",
              "**Current Session Summary:**", "**Topics Discussed:**", *_bullets(s.topics), "",
              "**Decisions Made:**", *_bullets(s.decisions), "",
              "**Pending:**", *_bullets(s.pending), SUMMARY_END, ""]
    return "\n".join(lines)


def render(t: Transcript) -> str:
    """The whole session file."""
    parts = [render_header(t.header)]
    parts += [render_turn(turn, t.header.agent) for turn in t.turns]
    if t.summary is not None:
        parts.append(render_summary_block(t.summary))
    return "".join(parts)


# ---------------------------------------------------------------- summary parsing


def _section(line: str) -> tuple[str, str] | None:
    m = _SECTION_RE.match(line)
    if m is None or not (m[1] or m[2] or m[4] or m[6]):
        return None
    name = next(s for s in _SECTIONS if s.lower() == m[3].lower())
    return name, m[7].strip(" \t")


def _split_sections(lines: list[str]) -> dict[str, list[str]]:
    sections: dict[str, list[str]] = {}
    current: list[str] | None = None
    fallback = False
    for raw in lines:
        line = raw.rstrip(" \t\r")
        if line in (SUMMARY_START, SUMMARY_END):
            raise TranscriptError("summary body contains a summary marker line")
        if line == FALLBACK_NOTE:
            fallback = True
            continue
        sec = _section(line)
        if sec is not None:
            if sec[0] in sections:
                raise TranscriptError(f"summary section '{sec[0]}' appears twice")
            current = sections[sec[0]] = [sec[1]] if sec[1] else []
        elif current is not None and line and not line.startswith("```"):
            current.append(line)
    sections["\0fallback"] = ["yes"] if fallback else []
    return sections


def _parse_bullets(name: str, lines: list[str]) -> tuple[str, ...]:
    items: list[list[str]] = []
    for line in lines:
        m = re.match(r"[-*+•](?:[ \t]+|$)", line)
        if m is not None:
            items.append([line[m.end():]])
        elif line[:1] in (" ", "\t") and items:
            items[-1].append(line.lstrip(" \t"))
        else:
            items.append([line.lstrip(" \t")])
    if not items:
        raise TranscriptError(f"summary section '{name}' is empty (write '- None' if so)")
    if len(items) == 1 and len(items[0]) == 1 and items[0][0].lower() in _NONE_WORDS:
        return ()
    return tuple("\n".join(_sum_unline(x) for x in item) for item in items)


def parse_summary_body(text: str) -> Summary:
    """Parse the text between the summary markers (as a model writes it)."""
    sections = _split_sections(text.split("\n"))
    missing = [s for s in _SECTIONS if s not in sections and s != "Current Session Summary"]
    if missing:
        raise TranscriptError(f"summary is missing the section(s): {', '.join(missing)}")
    background = sections["Background Context"]
    if not background:
        raise TranscriptError("summary section 'Background Context' is empty")
    return Summary(background="\n".join(_sum_unline(x) for x in background),
                   topics=_parse_bullets("Topics Discussed", sections["Topics Discussed"]),
                   decisions=_parse_bullets("Decisions Made", sections["Decisions Made"]),
                   pending=_parse_bullets("Pending", sections["Pending"]),
                   fallback=bool(sections["\0fallback"]))


# ---------------------------------------------------------------- header parsing


@dataclass(frozen=True)
class Head:
    """What the start of a session file tells: its header and its first query's first line."""

    header: SessionHeader
    body_start: int
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
    value = fields.get(name, "0")
    if not re.fullmatch(r"[0-9]{1,18}", value):
        raise TranscriptError(f"header field '{name}' is not a number: {value[:40]!r}")
    return int(value)


def _parse_date(value: str, what: str) -> datetime:
    try:
        d = datetime.fromisoformat(value)
    except ValueError:
        raise TranscriptError(f"{what} is not an ISO 8601 date: {value[:40]!r}") from None
    if d.tzinfo is None:
        raise TranscriptError(f"{what} has no UTC offset: {value[:40]!r}")
    return d


def _header(fields: dict[str, str]) -> SessionHeader:
    for name in ("Session ID", "Date", "Agent", "Agent Path", "Model", "Total Queries"):
        if name not in fields:
            raise TranscriptError(f"the header has no '{name}' field")
    m = _MODEL_VALUE.match(fields["Model"])
    if m is None:
        raise TranscriptError("header field 'Model' is not '<model> (<provider>)'")
    opt = {k: _uninline(fields[k]) if k in fields else None
           for k in ("Resumed From", "Previous Session")}
    return SessionHeader(
        session_id=_uninline(fields["Session ID"]), date=_parse_date(fields["Date"], "Date"),
        agent=_uninline(fields["Agent"]), agent_path=_uninline(fields["Agent Path"]),
        model=_uninline(m[1]), provider=_uninline(m[2]),
        resumed_from=opt["Resumed From"], previous_session=opt["Previous Session"],
        total_queries=_int_field(fields, "Total Queries"),
        total_tokens=_int_field(fields, "Total Tokens"))


def _first_query(lines: list[str], start: int) -> str | None:
    for i in range(start, len(lines) - 1):
        if _HEADING_Q.match(lines[i]) and lines[i + 1].startswith("**You:**"):
            return _unesc_line(lines[i + 1][len("**You:** "):])
    return None


def parse_head(text: str) -> Head:
    """Parse the start of a session file: the header and the first query's first line."""
    lines = text.split("\n")
    try:
        fields, body = _header_fields(lines)
        return Head(_header(fields), body, _first_query(lines, body))
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


def _text(first: str, rest: list[str]) -> str:
    lines = [first, *rest]
    if len(lines) > 1 and lines[-1] == "":
        lines.pop()
    return "\n".join(_unesc_line(x) for x in lines)


def _single(first: str, rest: list[str], lineno: int) -> str:
    if any(x != "" for x in rest):
        raise TranscriptError(f"line {lineno}: unexpected text after a one-line field")
    return _uninline(first)


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
    elif f.answer is None and name not in _RESERVED_LABELS:
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
    elif marker is not None and all(x == "" for x in rest):
        if marker[2] is not None:
            f.error = _uninline(marker[2])
    elif _FOOTER.match(line) and all(x == "" for x in rest) and f.footer is None:
        f.footer = _FOOTER.match(line)
    else:
        raise TranscriptError(f"line {lineno}: unexpected line in a turn: {line[:60]!r}")


def _collect(lines: list[str], start: int, end: int) -> _Fields:
    f = _Fields()
    k = start
    while k < end:
        n = k + 1
        while n < end and not _RAW_STRUCT.match(lines[n]):
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
    f = _collect(lines, start + 1, end)
    m = f.footer
    if m is None or f.pending_tool is not None:
        raise TranscriptError(f"line {start + 1}: turn block has no footer or a broken tool call")
    if (q is not None and f.user is None) or (r is not None and f.context is None):
        raise TranscriptError(f"line {start + 1}: turn block lacks its user/context line")
    usage = Usage(int(m[3]), int(m[4]), int(m[5] or 0), int(m[6] or 0))
    kind: TurnKind = ("query" if head.startswith("## Query") else "carried") if q else "restored"
    return Turn(kind=kind, number=int(q[1]) if q else 0,
                started=_parse_date(m[8], f"line {start + 1}: turn time"),
                user=f.user or "", assistant=f.answer or "", status=_STATUSES[m[7] or "ok"],
                elapsed=float(m[1]), usage=usage, tools=tuple(f.tools or ()),
                context=f.context or "", previous_session=f.previous, error=f.error)


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
        elif _HEADING_Q.match(line) or _HEADING_R.match(line) or _HEADING_C.match(line):
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
