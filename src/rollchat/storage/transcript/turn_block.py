"""Parse one turn block of a session file: the user's side, the answer's blocks in order
(texts, tool calls and their results, images, notes, provider blocks), the status markers and
the footer. Only TranscriptError escapes."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field, replace

from rollchat.domain import (
    Block,
    FrameworkState,
    Image,
    Note,
    ProviderBlock,
    Text,
    Thinking,
    ToolCall,
    ToolResult,
    ToolUse,
    Turn,
    TurnKind,
    TurnStatus,
    Usage,
)
from rollchat.errors import TranscriptError
from rollchat.storage.transcript.framework_state import from_json
from rollchat.storage.transcript.restored import RESTORED_END, is_restored_start, read_restored
from rollchat.storage.transcript.syntax import (
    CONTEXT_END,
    CONTEXT_OPEN,
    FIELD_FIRST,
    RESERVED_LABELS,
    STRUCT,
    parse_date,
    unarrows,
    unesc_line,
    unesc_text,
    uninline,
)

_STATUSES: dict[str, TurnStatus] = {
    "ok": "ok", "interrupted": "interrupted", "unanswered": "unanswered", "error": "error"}
HEADING_Q = re.compile(r"## Query ([0-9]+) \(([0-9]{2}:[0-9]{2}:[0-9]{2})\)$")
HEADING_R = re.compile(r"## Session Restored \(([0-9]{2}:[0-9]{2}:[0-9]{2})\)$")
HEADING_C = re.compile(r"## Carried Over ([0-9]+) \(([0-9]{2}:[0-9]{2}:[0-9]{2})\)$")
HEADING_H = re.compile(r"## Handed Off \(([0-9]{2}:[0-9]{2}:[0-9]{2})\)$")
# (an entry without a model call has no Tokens, and no Time when it took none: "*at <ISO>*")
_FOOTER = re.compile(
    r"\*(?:Time: ([0-9]+(?:\.[0-9]+)?)s \| )?(?:Tokens: (?:(N) \(in: (N), out: (N)"
    r"(?:, cache read: (N))?(?:, cache write: (N))?\)|not reported)"
    r"(?: \| (interrupted|unanswered|error))? \| )?at ([^ ]+)\*$"
    .replace("N", "[0-9][0-9,]{0,24}"))  # thousands separated since 25.4
_LABEL = re.compile(r"\*\*((?:[^\\:]|\\.|:(?!\*\*))*):\*\*(?: (.*))?$", re.DOTALL)
_IMAGE = re.compile(r"!\[(image/[a-z0-9.+-]{1,40}), ([0-9][0-9,]{0,14}) bytes\]"
                    r"\(((?:[A-Za-z0-9_.-]{1,200}/)?[0-9a-f]{64}\.[a-z]{3,4}"
                    r"|#sha256-[0-9a-f]{64})\)")
_PROVIDER = re.compile(r"((?:[^\\ ]|\\.)*) ((?:[^\\ ]|\\.)*) (.*)", re.DOTALL)


@dataclass
class _Fields:
    """The pieces of one turn block while it is parsed."""

    user: str | None = None
    context: str | None = None
    previous: str | None = None
    error: str | None = None
    footer: re.Match[str] | None = None
    block: str | None = None
    blocks: list[Block] = field(default_factory=list)
    attached: list[Image] = field(default_factory=list)
    pending_tool: list[str] | None = None  # a call's fields so far (name, id)
    open_calls: list[str] = field(default_factory=list)  # call ids still without a result
    answered: bool = False  # an answer label was seen (an empty one makes no block)
    typed: str | None = None  # a saved prompt's command as typed
    state: FrameworkState | None = None  # the framework's state after the turn


def _text(first: str, rest: list[str]) -> str:
    lines = [first, *rest]
    if len(lines) > 1 and lines[-1] == "":
        lines.pop()
    return unesc_text(lines)


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
    elif name not in RESERVED_LABELS and f.pending_tool is None:
        f.answered = True
        text = _text(value, rest)
        if text:
            f.blocks.append(Text(text))
    else:
        raise TranscriptError(f"line {lineno}: unexpected or repeated label '{name[:40]}'")


def _tool_field(f: _Fields, key: str, value: str, rest: list[str], lineno: int) -> None:
    """A tool call's fields (name, id, arguments: in this order), or a result: the result of
    the first call still without one."""
    got = f.pending_tool
    if key in ("Result", "Result (error)"):
        if got is not None or not f.open_calls:
            raise TranscriptError(f"line {lineno}: a tool result with no call before it")
        f.blocks.append(ToolResult(f.open_calls.pop(0), _text(value, rest),
                                   is_error=key == "Result (error)"))
        return
    order = ("Tool call", "Call ID", "Arguments")
    expected = order[len(got) if got is not None else 0]
    if key != expected:
        raise TranscriptError(f"line {lineno}: expected '*{expected}:*', found '{key}'")
    if key != "Arguments":
        f.pending_tool = [*(got or []), _single(value, rest, lineno)]
        return
    _single(value, rest, lineno)
    args = json.loads(value)
    if not isinstance(args, dict):
        raise TranscriptError(f"line {lineno}: tool arguments are not a JSON object")
    assert got is not None
    f.blocks.append(ToolUse(ToolCall(got[1], got[0], args)))
    f.open_calls.append(got[1])
    f.pending_tool = None


def _result_extra(f: _Fields, key: str, value: str, rest: list[str], lineno: int) -> None:
    """A field that belongs to the result just before it: how it was sent, an image."""
    last = f.blocks[-1] if f.blocks else None
    if not isinstance(last, ToolResult):
        raise TranscriptError(f"line {lineno}: '*{key}:*' not after a tool result")
    value = _single(value, rest, lineno)
    if key == "Sent":
        m = re.fullmatch(r"omitted|cut to ([0-9][0-9,]{0,14}) chars", value)
        if m is None:
            raise TranscriptError(f"line {lineno}: unreadable '*Sent:*' value: {value[:40]!r}")
        keep = -1 if m[1] is None else int(m[1].replace(",", ""))
        f.blocks[-1] = replace(last, sent_keep=keep)
    else:
        f.blocks[-1] = replace(last, images=(*last.images, _image(value, lineno)))


def _image(value: str, lineno: int) -> Image:
    m = _IMAGE.fullmatch(value)
    if m is None:
        raise TranscriptError(f"line {lineno}: unreadable image reference: {value[:60]!r}")
    where = m[3]
    if where.startswith("#sha256-"):
        return Image(m[1], int(m[2].replace(",", "")), where[len("#sha256-"):])
    return Image(m[1], int(m[2].replace(",", "")), where.rsplit("/", 1)[-1].split(".")[0],
                 path=where)


def _other_field(f: _Fields, key: str, value: str, rest: list[str], lineno: int) -> bool:
    """A note, thinking, a provider block or an attached image; False when ``key`` is none
    of them."""
    note = re.fullmatch(r"Note \(((?:[^\\()]|\\.)*)\)", key)
    if note is not None:
        f.blocks.append(Note(uninline(note[1]), _text(value, rest)))
    elif key == "Thinking":
        f.blocks.append(Thinking(_text(value, rest)))
    elif key == "Provider block":
        _single("", rest, lineno)
        parts = _PROVIDER.fullmatch(value)  # the provider and type have their spaces escaped
        if parts is None:
            raise TranscriptError(f"line {lineno}: a provider block needs provider, type, data")
        f.blocks.append(ProviderBlock(uninline(parts[1]), uninline(parts[2]),
                                      uninline(parts[3])))
    elif key == "Framework state" and f.state is None:
        try:
            f.state = from_json(_single(value, rest, lineno))
        except (ValueError, TypeError, KeyError, RecursionError) as e:
            raise TranscriptError(f"line {lineno}: unreadable framework state ({e})") from None
    elif key == "Typed" and f.user is not None and not f.blocks and f.typed is None:
        f.typed = _single(value, rest, lineno)
    elif key == "Attached image" and f.user is not None and not f.blocks:
        f.attached.append(_image(_single(value, rest, lineno), lineno))
    else:
        return False
    return True


def _star_field(f: _Fields, line: str, rest: list[str], lineno: int) -> None:
    star = re.match(r"\*((?:[^*\\]|\\.)+?):\*(?: (.*))?$", line, re.DOTALL)
    marker = re.match(r"\*\[(interrupted by user|not answered|error)(?:: (.*))?\]\*$", line,
                      re.DOTALL)
    key, value = (star[1], star[2] or "") if star is not None else ("", "")
    if key in ("Tool call", "Call ID", "Arguments", "Result", "Result (error)"):
        _tool_field(f, key, value, rest, lineno)
    elif key in ("Sent", "Image"):
        _result_extra(f, key, value, rest, lineno)
    elif key == "Context block" and f.block is None and f.user is not None:
        f.block = _text(value, rest)
    elif key and _other_field(f, key, value, rest, lineno):
        pass
    elif marker is not None and all(x == "" for x in rest):
        if marker[2] is not None:
            f.error = uninline(marker[2])
    elif _FOOTER.match(line) and all(x == "" for x in rest) and f.footer is None:
        f.footer = _FOOTER.match(line)
    else:
        raise TranscriptError(f"line {lineno}: unexpected line in a turn: {line[:60]!r}")


def _region(f: _Fields, lines: list[str], k: int, end: int) -> int | None:
    """A region of lines read as a whole (the context block, a restored summary) starting at
    line ``k``: the index after it, or None when none starts there."""
    restored = is_restored_start(lines[k])
    if not restored and lines[k] != CONTEXT_OPEN:
        return None
    close = RESTORED_END if restored else CONTEXT_END
    stop = next((n for n in range(k + 1, end) if lines[n] == close), None)
    if stop is None or (f.user if restored else f.block) is not None or (
            not restored and f.user is None):
        raise TranscriptError(f"line {k + 1}: unexpected or unclosed comment in a turn")
    if restored:
        f.user = read_restored(lines[k:stop], k + 1)
    else:
        f.block = "\n".join(unesc_line(unarrows(x)) for x in lines[k + 1:stop])
    if any(x != "" for x in lines[stop + 1:_next_field(lines, stop, end)]):
        raise TranscriptError(f"line {stop + 2}: unexpected text after a comment")
    return _next_field(lines, stop, end)


def _next_field(lines: list[str], k: int, end: int) -> int:
    n = k + 1
    while n < end and not (lines[n][:1] in FIELD_FIRST and (  # (most lines are passed here)
            STRUCT.match(lines[n]) or is_restored_start(lines[n]))):
        n += 1
    return n


def _collect(lines: list[str], start: int, end: int) -> _Fields:
    f = _Fields()
    k = start
    while k < end:
        after = _region(f, lines, k, end)
        if after is not None:
            k = after
            continue
        n = _next_field(lines, k, end)
        line, rest = lines[k], lines[k + 1:n]
        if line.startswith("**"):
            _label_field(f, line, rest, k + 1)
        elif line.startswith("*"):
            _star_field(f, line, rest, k + 1)
        else:
            raise TranscriptError(f"line {k + 1}: unexpected line in a turn: {line[:60]!r}")
        k = n
    return f


_PLAIN_LABEL = re.compile(r"\*\*([^\\:*]+):\*\* ")


def _plain(lines: list[str], start: int, end: int, kind: TurnKind,
           number: int) -> Turn | None:
    """A query of one line typed and one line of answer, nothing escaped (most turns of a
    long session), read without the field machinery: the Turn ``_collect`` would make of it;
    None for any other block."""
    if end - start != 7:
        return None
    you, gap, said, gap2, foot, last = lines[start + 1:end]
    if gap or gap2 or last or not you.startswith("**You:** ") or "\\" in you or "\\" in said:
        return None
    label = _PLAIN_LABEL.match(said)
    m = _FOOTER.match(foot)
    if label is None or label[1] in RESERVED_LABELS or label.end() == len(said) or m is None:
        return None
    return _made(m, start, kind, number, user=you[len("**You:** "):],
                 blocks=(Text(said[label.end():]),))


def _made(m: re.Match[str], start: int, kind: TurnKind, number: int, **fields: object) -> Turn:
    """The turn whose footer is ``m``, with its other ``fields``."""
    _, _, given, said, read, wrote, _, _ = m.groups("0")
    usage = Usage(int(given.replace(",", "")), int(said.replace(",", "")),
                  int(read.replace(",", "")), int(wrote.replace(",", "")))
    return Turn(kind=kind, number=number, started=parse_date(m[8], f"line {start + 1}: turn time"),
                status=_STATUSES[m[7] or "ok"], elapsed=float(m[1] or 0), usage=usage,
                **fields)  # type: ignore[arg-type]


def parse_turn(lines: list[str], start: int, end: int) -> Turn:
    head = lines[start]
    q, r = HEADING_Q.match(head) or HEADING_C.match(head), HEADING_R.match(head)
    h = HEADING_H.match(head)
    kind: TurnKind = (("query" if head.startswith("## Query") else "carried") if q
                      else "handoff" if h else "restored")
    number = int(q[1]) if q else 0
    if q is not None and (plain := _plain(lines, start, end, kind, number)) is not None:
        return plain
    f = _collect(lines, start + 1, end)
    m = f.footer
    if m is None or f.pending_tool is not None:
        raise TranscriptError(f"line {start + 1}: turn block has no footer or a broken tool call")
    if (q is not None and f.user is None) or (r is not None and f.context is None) or (
            h is not None and (f.context is None or f.answered)):
        raise TranscriptError(f"line {start + 1}: turn block lacks its user/context line")
    return _made(m, start, kind, number, user=f.user or "", blocks=tuple(f.blocks),
                 context=f.context or "", previous_session=f.previous, error=f.error,
                 context_block=f.block or "", attached=tuple(f.attached), typed=f.typed or "",
                 framework_state=f.state)
