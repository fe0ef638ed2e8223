"""Render a session to markdown: the header, one block per turn, the whole file; and the
finalized file (header totals set, summary block appended) from a file's current text."""

from __future__ import annotations

import json
import re

from rollchat.domain import (
    Block,
    Image,
    Note,
    SessionHeader,
    Summary,
    Text,
    Thinking,
    ToolResult,
    ToolUse,
    Transcript,
    Turn,
)
from rollchat.errors import TranscriptError
from rollchat.storage.titles import first_line_title, model_title
from rollchat.storage.transcript.framework_state import state_json
from rollchat.storage.transcript.restored import restored_lines
from rollchat.storage.transcript.signed import summary_tail
from rollchat.storage.transcript.syntax import (
    ARGUMENTS,
    ATTACHED,
    CALL_ID,
    CONTEXT_END,
    CONTEXT_OPEN,
    ERROR_RESULT,
    FRAMEWORK_STATE,
    IMAGE,
    PROVIDER_BLOCK,
    RESERVED_LABELS,
    RESULT,
    SENT,
    TOOL_CALL,
    TYPED,
    arrows,
    aware,
    esc_lines,
    first_marker,
    first_query_line_in,
    inline,
)

# The header's totals: queries, tokens billed (input + output over every model call) and the
# context's size (the prompt of the last call), then the cost. Each line has a fixed length, the
# numbers (with thousands separators) right-aligned in one column, so that a live session's
# totals are refreshed in place after every turn (see ``render_totals``). Files written before
# 25.4 padded the numbers with trailing spaces, without separators; both are read.
_TOTALS = ("**Total Queries:**", "**Tokens Billed:**", "**Context Tokens:**")
_LEGACY_TOTALS = ("**Total Tokens:**",)  # what older files call the tokens billed
_TOTALS_COLUMN = 34  # the length of each totals line: numbers up to 10^11 fit
CONTINUED_IN = "**Continued In:**"  # the ids of the sessions continuing this one, ", "-separated
HANDED_FROM = "**Handed From:**"  # the session that handed the conversation over (@NAME)
IMPORTED_FROM = "**Imported From:**"  # "<format> <file name>" of an imported transcript
# The cost of the tokens billed, in dollars, after the totals when the model's price is known
# (see models.prices): "**Cost:** $0.0123", padded like the totals.
COST = "**Cost:**"
TITLE = "**Title:**"  # the session's title: one line (see storage.titles), after the Session ID
_SESSION_ID = "**Session ID:**"


def _agent_label(name: str) -> str:
    enc = inline(name, "*:")
    return "\\" + enc if enc in RESERVED_LABELS else enc


def _content(text: str) -> list[str]:
    return esc_lines(text)


def _field(label: str, text: str) -> list[str]:
    lines = _content(text)
    return [label + lines[0], *lines[1:], ""]


def render_header(h: SessionHeader) -> str:
    """The header block, ending with ``---`` and a blank line."""
    lines = [f"# {inline(h.agent)} Conversation", "",
             f"**Session ID:** {inline(h.session_id)}",
             *([f"{TITLE} {inline(h.title)}"] if h.title is not None else []),
             f"**Date:** {aware(h.date, 'Date')}",
             f"**Agent:** {inline(h.agent)}",
             f"**Agent Path:** {inline(h.agent_path)}",
             *([f"**Tools:** {', '.join(inline(t) for t in h.tools) or '(none)'}"]
               if h.tools is not None else []),
             f"**Model:** {inline(h.model, '()')} ({inline(h.provider, '()')})"]
    if h.resumed_from is not None:
        lines.append(f"**{'Forked From' if h.forked else 'Resumed From'}:** "
                     f"{inline(h.resumed_from)}")
    if h.handed_from is not None:
        lines.append(f"{HANDED_FROM} {inline(h.handed_from)}")
    if h.imported_from is not None:
        lines.append(f"{IMPORTED_FROM} {inline(h.imported_from)}")
    if h.previous_session is not None:
        lines.append(f"**Previous Session:** {inline(h.previous_session)}")
    if h.continued_in:
        lines.append(f"{CONTINUED_IN} {', '.join(inline(c) for c in h.continued_in)}")
    lines += [render_totals(h.total_queries, h.total_tokens, h.context_tokens, h.cost), "",
              "---", "", ""]
    return "\n".join(lines)


def render_totals(queries: int, billed: int, context: int, cost: float | None = None) -> str:
    """The header's totals lines (no final newline): each number right-aligned in one column
    (the spaces before it collapse in rendered markdown), so that a later refresh has the same
    length and can overwrite them in place; then the cost, when known."""
    values = [f"{queries:,}", f"{billed:,}", f"{context:,}"]
    labels = list(_TOTALS)
    if cost is not None:
        labels.append(COST)
        values.append(f"${cost:.4f}")
    return "\n".join(f"{label} {value:>{_TOTALS_COLUMN - len(label) - 1}}"
                     for label, value in zip(labels, values, strict=True))


def totals_span(header: str) -> tuple[int, int] | None:
    """Where ``render_totals``'s lines are in a rendered ``header`` (character offsets), or
    None when it has none."""
    start = header.find(f"\n{_TOTALS[0]} ")
    if start == -1:
        return None
    end = header.find("\n", header.find(f"\n{_TOTALS[-1]} ", start) + 1)
    if end != -1 and header.startswith(f"\n{COST} ", end):
        end = header.find("\n", end + 1)
    return (start + 1, end) if end != -1 else None


def _footer(t: Turn) -> str:
    u = t.usage
    parts = f"in: {u.input_tokens:,}, out: {u.output_tokens:,}"
    if u.cache_read_tokens:
        parts += f", cache read: {u.cache_read_tokens:,}"
    if u.cache_write_tokens:
        parts += f", cache write: {u.cache_write_tokens:,}"
    status = "" if t.status == "ok" else f" | {t.status}"
    # A failed turn the provider sent no usage for says so, rather than "Tokens: 0".
    unreported = not (u.total or u.cache_read_tokens or u.cache_write_tokens)
    tokens = "not reported" if unreported and t.status != "ok" else f"{u.total:,} ({parts})"
    at = f"at {aware(t.started, 'Turn.started')}*"
    if unreported and t.status == "ok" and t.kind in ("handoff", "carried"):
        # no model call in this session (handed over; carried over, billed in the parent):
        # no zero tokens, and no time when none was taken
        return f"*Time: {t.elapsed:.1f}s | {at}" if t.elapsed else f"*{at}"
    return f"*Time: {t.elapsed:.1f}s | Tokens: {tokens}{status} | {at}"


def _status_lines(t: Turn) -> list[str]:
    err = None if t.error is None else inline(t.error)
    out: list[str] = []
    if t.status == "interrupted":
        out.append("*[interrupted by user]*")
    if t.status == "unanswered":
        out.append("*[not answered]*" if err is None else f"*[not answered: {err}]*")
    elif t.status == "error" or err is not None:
        out.append("*[error]*" if err is None else f"*[error: {err}]*")
    return [x for m in out for x in (m, "")]


def render_turn(t: Turn, agent_name: str) -> str:
    """One turn block, ending with ``---`` and a blank line: the user's side, then the
    answer's blocks in the order they happened."""
    clock = t.started.strftime("%H:%M:%S")
    lines: list[str] = []
    if t.kind in ("query", "carried"):
        title = "Query" if t.kind == "query" else "Carried Over"
        lines += [f"## {title} {t.number} ({clock})", *_field("**You:** ", t.user)]
        if t.typed:  # the saved prompt's command the user typed, beside the prompt sent
            lines += [f"{TYPED} {inline(t.typed)}", ""]
        lines += [x for image in t.attached for x in (image_line(ATTACHED, image), "")]
        if t.context_block:  # sent with the message, not typed: out of the reader's way
            lines += [CONTEXT_OPEN, *(arrows(x) for x in _content(t.context_block)),
                      CONTEXT_END, ""]
    if t.kind in ("restored", "handoff") or t.context:
        if t.kind == "restored":
            lines.append(f"## Session Restored ({clock})")
        elif t.kind == "handoff":
            lines.append(f"## Handed Off ({clock})")
        lines += _field("**Context:** ", t.context)
    if t.previous_session is not None:
        lines += [f"**Previous Session:** {inline(t.previous_session)}", ""]
    if t.kind in ("restored", "handoff") and t.user:
        # a restoration prompt rollchat rebuilds is kept as the summary it holds
        kept = restored_lines(t.user) if t.kind == "restored" else None
        lines += _field("**You:** ", t.user) if kept is None else kept
    label = f"**{_agent_label(agent_name)}:** "
    lines += [x for b in t.blocks for x in block_lines(b, label)]
    texts = any(isinstance(b, Text) for b in t.blocks)
    if not texts and t.kind != "handoff" and t.status != "unanswered":
        lines += _field(label, "")  # an answer with no text says so
    if t.framework_state is not None:
        lines += [f"{FRAMEWORK_STATE} {inline(state_json(t.framework_state))}", ""]
    lines += [*_status_lines(t), _footer(t), "", "---", "", ""]
    return "\n".join(lines)


def block_lines(b: Block, label: str) -> list[str]:
    """One block of an answer as transcript lines (each field followed by a blank line)."""
    if isinstance(b, Text):
        return _field(label, b.text)
    if isinstance(b, ToolUse):
        args = json.dumps(dict(b.call.arguments), ensure_ascii=False, default=str)
        return [f"{TOOL_CALL} {inline(b.call.name)}", "", f"{CALL_ID} {inline(b.call.id)}",
                "", f"{ARGUMENTS} {args}", ""]
    if isinstance(b, ToolResult):
        lines = _field(f"{ERROR_RESULT if b.is_error else RESULT} ", b.content)
        if b.sent_keep is not None:
            lines += [f"{SENT} " + ("omitted" if b.sent_keep < 0
                                    else f"cut to {b.sent_keep:,} chars"), ""]
        return lines + [x for image in b.images for x in (image_line(IMAGE, image), "")]
    if isinstance(b, Note):
        return _field(f"*Note ({inline(b.kind, '()*')}):* ", b.text)
    if isinstance(b, Thinking):
        return _field("*Thinking:* ", b.text)
    return [f"{PROVIDER_BLOCK} {inline(b.provider, ' ')} {inline(b.type, ' ')} "
            f"{inline(b.data)}", ""]


def image_line(label: str, image: Image) -> str:
    """An image as a markdown image line: its kind and size, and its file beside the session
    (or, not saved, its digest)."""
    where = image.path or f"#sha256-{image.digest}"
    return f"{label} ![{image.media_type}, {image.size:,} bytes]({where})"


def render(t: Transcript) -> str:
    """The whole session file."""
    parts = [render_header(t.header)]
    parts += [render_turn(turn, t.header.agent) for turn in t.turns]
    if t.summary is not None:
        parts.append(summary_tail(t.summary))
    return "".join(parts)


def render_finalized(text: str, summary: Summary, *, total_queries: int,
                     total_tokens: int, context_tokens: int | None = None,
                     cost: float | None = None) -> str:
    """The session file ``text`` finalized: its header totals set (``context_tokens`` and
    ``cost`` None: the header's own), a Title when it has none (the summary's, else the first
    query's first line), a torn last block and any earlier summary block (whole or corrupted)
    dropped, ``summary``'s block at the end (with its signed block's line). Only the header
    lines, the first query's line and the block boundaries are read: the turns are not
    parsed, nor the body cut into lines (found by ``str.find``: a 70 MB file is not copied
    line by line)."""
    lines, rest = _split_header(text)
    sep = len(lines) - 1
    if not any(x.startswith(TITLE) for x in lines[:sep]):
        rule = len(text) - len(lines[-1]) - (0 if rest is None else len(rest) + 1)
        title = (model_title(summary.title) if summary.title else "") or first_line_title(
            first_query_line_in(text, rule))
        if title:
            lines = _titled(lines, sep, title)
            sep += 1
    if context_tokens is None:
        known = [x[len(_TOTALS[2]):].strip().replace(",", "") for x in lines[:sep]
                 if x.startswith(_TOTALS[2])]
        context_tokens = int(known[0]) if known and known[0].isascii() and known[0].isdigit() else 0
    if cost is None:
        cost = next((amount(x[len(COST):]) for x in lines[:sep] if x.startswith(COST)), None)
    header = [x for x in lines[:sep] if not x.startswith((*_TOTALS, *_LEGACY_TOTALS, COST))]
    while header and header[-1] == "":
        header.pop()
    header += [render_totals(total_queries, total_tokens, context_tokens, cost), ""]
    body_text = _joined(lines[sep:], rest)
    cut = first_marker(body_text)
    body = body_text if cut is None else body_text[:cut]
    return "\n".join([*header, body[:_last_rule_end(body)]]) + "\n\n" + summary_tail(summary)


def render_resummarized(text: str, summary: Summary) -> str:
    """The finalized session file ``text`` with its summary block (and signed block's line)
    replaced by ``summary``'s (``summary edit``); everything before is left byte for byte."""
    cut = first_marker(text)
    if cut is None:
        raise TranscriptError("has no summary block to replace")
    return text[:cut] + summary_tail(summary)


def _split_header(text: str) -> tuple[list[str], str | None]:
    """``text.split("\\n")`` cut after the session file's first ``---`` line (the end of its
    header): the lines up to that one, and the rest of the text (None: none, the ``---``
    line ends it), not cut into lines."""
    if text.startswith("---\n") or text == "---":
        at = 0
    else:
        at = text.find("\n---\n") + 1
        if at == 0:
            if not text.endswith("\n---"):
                raise TranscriptError("has no header: not a session file")
            at = len(text) - 3
    lines = text[:at + 3].split("\n")
    return lines, (None if at + 3 == len(text) else text[at + 4:])


def _joined(lines: list[str], rest: str | None) -> str:
    """The text ``_split_header`` cut."""
    return "\n".join(lines if rest is None else [*lines, rest])


def _last_rule_end(body: str) -> int:
    """Where the last ``---`` line of ``body`` ends (ValueError: it has none)."""
    if body.endswith("\n---") or body == "---":
        return len(body)
    at = body.rfind("\n---\n")
    if at >= 0:
        return at + 4
    if body.startswith("---\n"):
        return 3
    raise ValueError("no '---' line")


def _titled(lines: list[str], sep: int, title: str) -> list[str]:
    """``lines`` with the header's Title line set to ``title`` (after the Session ID)."""
    value = f"{TITLE} {inline(title)}"
    for i, line in enumerate(lines[:sep]):
        if line.startswith(TITLE):
            return [*lines[:i], value, *lines[i + 1:]]
    at = next((i + 1 for i, x in enumerate(lines[:sep]) if x.startswith(_SESSION_ID)), 1)
    return [*lines[:at], value, *lines[at:]]


def render_titled(text: str, title: str) -> str:
    """The session file ``text`` with its header's Title set to ``title`` (one line: see
    titles.user_title). Only the header is read and changed."""
    lines, rest = _split_header(text)
    return _joined(_titled(lines, len(lines) - 1, title), rest)


def render_linked(text: str, child_id: str) -> str:
    """The session file ``text`` with ``child_id`` added to its header's ``Continued In`` line
    (made, before the totals, if there is none yet). Only the header is read and changed."""
    lines, rest = _split_header(text)
    sep = len(lines) - 1
    for i, line in enumerate(lines[:sep]):
        if line.startswith(CONTINUED_IN):
            ids = line[len(CONTINUED_IN):].strip()
            if child_id in ids.split(", "):
                return text
            lines[i] = f"{CONTINUED_IN} {ids + ', ' if ids else ''}{inline(child_id)}"
            return _joined(lines, rest)
    at = next((i for i, x in enumerate(lines[:sep]) if x.startswith(_TOTALS + _LEGACY_TOTALS)),
              sep)
    lines.insert(at, f"{CONTINUED_IN} {inline(child_id)}")
    return _joined(lines, rest)


def amount(value: str) -> float | None:
    """The dollars of a ``Cost`` header value ("$0.0123", padded), None if it is not one."""
    value = value.strip()
    if not re.fullmatch(r"\$[0-9]{1,12}(?:\.[0-9]{1,8})?", value):
        return None
    return float(value[1:])
