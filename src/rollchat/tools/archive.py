"""The built-in ``session_archive_read`` tool, bound to one parent session of a Store."""

# The tool reads only the session it was created with (its current content, at each call), and
# the whole tool results of the current session (a result cut or shortened in the context is
# read back by its tool call's id, page by page); its arguments select turns or a tool call,
# never paths or sessions. The store checks what it reads.

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from rollchat.domain import ToolExchange, Transcript, Turn, plain_turn
from rollchat.errors import ConfigError, RollchatError, StoreError, TranscriptError
from rollchat.providers.base import ToolSpec
from rollchat.tools import ARCHIVE_TOOL_NAME, Tool

if TYPE_CHECKING:
    from rollchat.storage.store import Store

DEFAULT_LIMIT = 5
MAX_LIMIT = 50
MAX_QUERY_CHARS = 500
MIN_MAX_CHARS = 1000
_TOOL_RESULT_CHARS = 200
_KNOWN_ARGS = ("query", "offset", "limit", "tool_call")
MAX_CALL_ID_CHARS = 200
MIN_PAGE_CHARS = 500

ARCHIVE_DESCRIPTION = (
    "Read the previous session's full transcript (the session this one was compacted or "
    "resumed from), for details the summary leaves out. Returns turns as plain text: the "
    "query number, the user's words and the answer. Use 'query' to get only the turns that "
    "contain all of its words (case-insensitive); page with 'offset' (0-based index into the "
    "turns returned) and 'limit'. With no arguments it returns the first turns. "
    "'tool_call': read that call's whole result instead, from character 'offset'."
)
ARCHIVE_PARAMETERS: Mapping[str, object] = {
    "type": "object",
    "properties": {
        "query": {"type": "string", "description": "Words that a turn must all contain "
                  "(case-insensitive). Omit to page through every turn."},
        "offset": {"type": "integer", "minimum": 0, "description": "0-based index of the "
                   "first turn to return, among the (matching) turns. Default 0."},
        "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT,
                  "description": f"How many turns to return. Default {DEFAULT_LIMIT}."},
        "tool_call": {"type": "string", "description": "A tool call id."},
    },
    "additionalProperties": False,
}


# The spec in its brief form, for small windows (a sixth of the whole one's tokens).
ARCHIVE_BRIEF = ToolSpec(ARCHIVE_TOOL_NAME, "Read the previous session's transcript: turns with "
                         "all words of 'query'; or 'tool_call': one call's whole result.",
                         {"type": "object", "properties": {
                             "query": {"type": "string"}, "offset": {"type": "integer"},
                             "tool_call": {"type": "string"}}})


class ArchiveError(RollchatError):
    """The archive tool cannot answer: bad arguments, or the session cannot be read or parsed."""


@dataclass(frozen=True)
class _Args:
    query: str
    offset: int
    limit: int
    ignored: tuple[str, ...]
    tool_call: str | None = None


def _int_arg(arguments: Mapping[str, object], key: str, default: int, low: int,
             high: int) -> int:
    value = arguments.get(key)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int):
        raise ArchiveError(f"{key!r} must be an integer, got {_shown(value)}")
    if not low <= value <= high:
        raise ArchiveError(f"{key!r} must be between {low} and {high}, got {value}")
    return value


def _shown(value: object) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= 40 else text[:40] + "..."


def _parse_args(arguments: object) -> _Args:
    """Check the model's arguments. Nothing in them is ever used as a path."""
    if not isinstance(arguments, Mapping):
        raise ArchiveError("arguments must be a JSON object")
    query = arguments.get("query")
    if query is None:
        query = ""
    if not isinstance(query, str):
        raise ArchiveError(f"'query' must be a string, got {_shown(query)}")
    if len(query) > MAX_QUERY_CHARS:
        raise ArchiveError(f"'query' is too long ({len(query)} chars, at most "
                           f"{MAX_QUERY_CHARS})")
    offset = _int_arg(arguments, "offset", 0, 0, 2**31)
    limit = _int_arg(arguments, "limit", DEFAULT_LIMIT, 1, MAX_LIMIT)
    call = arguments.get("tool_call")
    if call is not None and (not isinstance(call, str) or not call.strip()
                             or len(call) > MAX_CALL_ID_CHARS):
        raise ArchiveError(f"'tool_call' must be a tool call id (a string of at most "
                           f"{MAX_CALL_ID_CHARS} chars), got {_shown(call)}")
    unknown = [_shown(str(k)) for k in arguments if k not in _KNOWN_ARGS]
    ignored = unknown[:5] + ([f"and {len(unknown) - 5} more"] if len(unknown) > 5 else [])
    return _Args(query.strip(), offset, limit, tuple(ignored), call and call.strip())


@dataclass(frozen=True)
class Found:
    """A tool result found whole: where it was (for the model) and the text."""

    where: str
    exchange: ToolExchange


Lookup = Callable[[str], "Found | None"]  # the current session's whole results, by call id


class ArchiveReader:
    """Answers archive-tool calls from one session of a store, read anew at every call."""

    def __init__(self, store: Store, session_id: str | None, *, max_chars: int = 8000,
                 current: Lookup | None = None,
                 page_tokens: Callable[[], int] | None = None,
                 count: Callable[[str], int] | None = None) -> None:
        if max_chars < MIN_MAX_CHARS:
            raise ConfigError(f"archive tool: max_chars must be at least {MIN_MAX_CHARS}, "
                              f"got {max_chars}")
        self.store = store
        self.session_id = session_id
        self.max_chars = max_chars
        self.current = current
        self.page_tokens = page_tokens  # a page of a tool result fits this many tokens
        self.count = count

    def __call__(self, arguments: Mapping[str, object]) -> str:
        """The tool's result: the selected turns, or ``error: ...`` (never raises)."""
        try:
            args = _parse_args(arguments)
            if args.tool_call is not None:
                return self._result_page(args)
            transcript = self._load()
        except RollchatError as exc:
            return f"error: {exc}"
        return _format(transcript, args, self.max_chars)

    def _result_page(self, args: _Args) -> str:
        assert args.tool_call is not None
        found = self.current(args.tool_call) if self.current is not None else None
        if found is None and self.session_id is not None:
            found = _in_transcript(self._load(), args.tool_call)
        if found is None:
            return (f"error: no tool call {_shown(args.tool_call)} in this session"
                    f"{' or the previous one' if self.session_id else ''}")
        tokens = self.page_tokens() if self.page_tokens is not None else None
        count = self.count
        if tokens is None or count is None:
            return _result_page(found, args, self.max_chars)
        low, high = 1, max(tokens * 4, MIN_PAGE_CHARS)  # the most chars whose page fits
        while low < high:
            mid = (low + high + 1) // 2
            if count(_result_page(found, args, mid)) <= tokens:
                low = mid
            else:
                high = mid - 1
        return _result_page(found, args, max(low, 1))

    def _load(self) -> Transcript:
        if self.session_id is None:
            raise ArchiveError("there is no previous session: this one was not compacted or "
                               "resumed from another")
        try:
            return self.store.load_transcript(self.session_id)
        except TranscriptError as exc:
            raise ArchiveError(f"the previous session's transcript cannot be parsed: "
                               f"{exc}") from None
        except StoreError as exc:
            raise ArchiveError(f"cannot read the previous session's transcript: {exc}") from None


def archive_tool(store: Store, session_id: str | None, *, max_chars: int = 8000,
                 current: Lookup | None = None, page_tokens: Callable[[], int] | None = None,
                 count: Callable[[str], int] | None = None) -> Tool:
    """The ``session_archive_read`` tool bound to the session ``session_id`` of ``store`` and
    to the current session's whole tool results (``current``). With no previous session it
    is a companion: offered only alongside other tools (whose results it reads back)."""
    spec = ToolSpec(ARCHIVE_TOOL_NAME, ARCHIVE_DESCRIPTION, ARCHIVE_PARAMETERS)
    reader = ArchiveReader(store, session_id, max_chars=max_chars, current=current,
                           page_tokens=page_tokens, count=count)
    return Tool(spec, reader, companion=session_id is None, read_only=True, brief=ARCHIVE_BRIEF)


def _in_transcript(transcript: Transcript, call_id: str) -> Found | None:
    for turn in reversed(transcript.turns):
        for ex in reversed(turn.tools):
            if ex.call.id == call_id:
                return Found(f"{turn.title} of session {transcript.header.session_id}", ex)
    return None


def _result_page(found: Found, args: _Args, page: int) -> str:
    """One page of a whole tool result, saying where it is and how to read on."""
    result, call = found.exchange.result, found.exchange.call
    notes = [f"(ignored unknown arguments: {', '.join(args.ignored)})"] if args.ignored else []
    if args.offset >= len(result) and result:
        return "\n".join([f"error: offset {args.offset:,} is past the end: the result of "
                          f"{_short(call.id, 80)} has {len(result):,} chars", *notes])
    end = min(args.offset + page, len(result))
    head = (f"Tool result of {_short(call.id, 80)} ({_short(call.name, 80)}, {found.where}): "
            f"chars {args.offset:,}-{end:,} of {len(result):,}")
    hint = json.dumps({"tool_call": call.id, "offset": end}, ensure_ascii=False)
    tail = (f"[{len(result) - end:,} chars more: {ARCHIVE_TOOL_NAME} {hint}]"
            if end < len(result) else "[end of the result]")
    return "\n".join([head, result[args.offset:end], tail, *notes])


# ---------------------------------------------------------------- formatting


def _haystack(turn: Turn) -> str:
    parts = [turn.user, turn.assistant, turn.context]
    for ex in turn.tools:
        parts += [ex.call.name, json.dumps(dict(ex.call.arguments), default=str), ex.result]
    return "\n".join(parts).lower()


def _matching(turns: Sequence[Turn], query: str) -> list[Turn]:
    words = query.lower().split()
    return [t for t in turns if all(w in _haystack(t) for w in words)] if words else list(turns)


def _short(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else f"{flat[:limit]}... [{len(flat)} chars]"


def _tool_line(ex: ToolExchange) -> str:
    args = _short(json.dumps(dict(ex.call.arguments), ensure_ascii=False, default=str), 120)
    return f"Tool call: {ex.call.name} {args} -> {_short(ex.result, _TOOL_RESULT_CHARS)}"


def _block(index: int, turn: Turn) -> str:
    when = turn.started.strftime("%Y-%m-%d %H:%M:%S")
    status = "" if turn.status == "ok" else f" [{turn.status}]"
    return plain_turn(turn, f"[offset {index}] {turn.title} ({when}){status}", you="You",
                      agent="Assistant", each_call=_tool_line)


def _format(transcript: Transcript, args: _Args, max_chars: int) -> str:
    session = _short(transcript.header.session_id, 80)
    selected = _matching(transcript.turns, args.query)
    what = "turns matching the query" if args.query else "turns"
    notes = [f"(ignored unknown arguments: {', '.join(args.ignored)})"] if args.ignored else []
    if not selected:
        return "\n".join([f"No {what} in session {session} "
                          f"({len(transcript.turns)} turns in all).", *notes])
    if args.offset >= len(selected):
        return "\n".join([f"error: offset {args.offset} is past the end: session {session} "
                          f"has {len(selected)} {what} (offsets 0-{len(selected) - 1}).",
                          *notes])
    page = selected[args.offset:args.offset + args.limit]
    budget = max_chars - 300 - sum(len(n) + 1 for n in notes)
    blocks: list[str] = []
    for i, turn in enumerate(page, start=args.offset):
        block, room = _block(i, turn), budget - sum(len(b) + 2 for b in blocks)
        if len(block) > room:
            if not blocks:  # the first turn alone is too long: show its start
                blocks.append(block[:max(room - 60, 0)] + "\n[turn cut: too long to show whole]")
            break
        blocks.append(block)
    last = args.offset + len(blocks)
    shown = f"Turn {last}" if last == args.offset + 1 else f"Turns {args.offset + 1}-{last}"
    whole = what.replace("turns", "turn") if len(selected) == 1 else what
    head = f"{shown} of {len(selected)} {whole} (session {session}):"
    tail = (f"[{len(selected) - last} more: call {ARCHIVE_TOOL_NAME} again with offset={last}"
            f"{' and the same query' if args.query else ''}]"
            if last < len(selected) else "[end of the matching turns]")
    return "\n\n".join([head, *blocks, "\n".join([tail, *notes])])
