"""History hygiene: pure functions over the message list.

The once-shortened form of an older tool result, the repair that gives every tool call exactly
one result right after it, and the head-and-tail cut of a tool result too large for the context.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import replace

from rollchat.domain import Message
from rollchat.models.tokens import LONGEST_TOKEN_CHARS
from rollchat.tools import ARCHIVE_TOOL_NAME

MISSING_RESULT = "error: the tool call got no result (interrupted or lost)"
KEEP_TOOL_RESULTS = 2


def read_hint(call_id: str | None, offset: int | None = None) -> str:
    """How the model reads a tool result whole: the archive tool's call, as JSON."""
    args: dict[str, object] = {"tool_call": call_id or ""}
    if offset is not None:
        args["offset"] = offset
    return f"{ARCHIVE_TOOL_NAME} {json.dumps(args, ensure_ascii=False)}"


def shortened_opening(name: str | None) -> str:
    return f"[{name or 'tool'} result shortened to save context: "


def is_shortened(message: Message) -> bool:
    return message.role == "tool" and message.content.startswith(
        shortened_opening(message.name))


def shorten(message: Message) -> Message:
    """An older tool result reduced to one line that says how to read it whole (idempotent).

    The line depends only on the result itself, so a result shortened once is byte-identical
    in every later request."""
    if message.role != "tool" or is_shortened(message):
        return message
    return replace(message, content=(
        f"{shortened_opening(message.name)}{len(message.content):,} chars; the whole result: "
        f"{read_hint(message.tool_call_id)}]"))


def drop_leading_orphans(messages: Sequence[Message]) -> list[Message]:
    """Tool results at the start have lost their call (cut by compaction): drop them."""
    start = 0
    while start < len(messages) and messages[start].role == "tool":
        start += 1
    return list(messages[start:])


def pair_tool_calls(messages: Sequence[Message]) -> list[Message]:
    """Every call gets its result right after its assistant message (an error result when
    missing); results whose call is unknown, or duplicated, are removed."""
    out: list[Message] = []
    i = 0
    while i < len(messages):
        m = messages[i]
        i += 1
        if m.role == "tool":
            continue  # a result not directly after its call: orphan
        out.append(m)
        if m.role != "assistant" or not m.tool_calls:
            continue
        results: dict[str, Message] = {}
        while i < len(messages) and messages[i].role == "tool":
            r = messages[i]
            if r.tool_call_id in {c.id for c in m.tool_calls} and r.tool_call_id not in results:
                results[r.tool_call_id] = r
            i += 1
        for call in m.tool_calls:
            out.append(results.get(call.id) or Message(
                "tool", MISSING_RESULT, tool_call_id=call.id, name=call.name))
    return out


def repair(messages: Sequence[Message]) -> list[Message]:
    return pair_tool_calls(drop_leading_orphans(messages))


def cut_marker(removed: int, total: int, lines: int, call_id: str | None, resume: int,
               ) -> str:
    return (f"\n[... {removed:,} of {total:,} chars ({lines:,} lines) cut from the middle of this "
            f"result to fit the context; the whole result is kept: {read_hint(call_id, resume)} "
            "reads on from here ...]\n")


def fit_tool_result(text: str, max_tokens: int, count: Callable[[str], int],
                    call_id: str | None = None) -> int | None:
    """How a tool result that alone exceeds ``max_tokens`` is sent: the most characters of
    its head and tail (around a marker that says how much was cut and how to read it: see
    ``cut_result``, which names the call ``call_id``) that fit; None when it fits whole, -1
    when there is no room at all. ``count`` counts no token as more than
    ``LONGEST_TOKEN_CHARS`` characters (TokenCounter.count_text's tokenizers and estimate)."""
    if max_tokens <= 0:
        return -1
    if len(text) <= max_tokens:  # a token is at least one char
        return None
    # and at most LONGEST_TOKEN_CHARS: a text longer than that many per token cannot fit, and
    # is not counted whole (35 MB of a tool's output took 4 s of tiktoken to learn it)
    if len(text) <= max_tokens * LONGEST_TOKEN_CHARS and count(text) <= max_tokens:
        return None

    breaks = text.count("\n")  # once, not in each piece tried (35 MB: 15 ms a count)

    def fits(keep: int) -> bool:
        return count(cut_result(text, keep, call_id, breaks)) <= max_tokens

    low, high = 0, min(len(text) - 1, max_tokens * 4)
    while high < len(text) - 1 and fits(high):
        low, high = high, min(len(text) - 1, high * 2)  # tokens longer than 4 chars
    while low < high:  # the most kept chars whose piece fits (counting pieces, not the text)
        mid = (low + high + 1) // 2
        if fits(mid):
            low = mid
        else:
            high = mid - 1
    return low


def as_sent(result: str, call_id: str, room: int,
            count: Callable[[str], int]) -> tuple[str, int | None]:
    """A tool result as sent with ``room`` tokens for it, and how it was cut
    (``ToolResult.sent_keep``: None when sent whole)."""
    keep = fit_tool_result(result, room, count, call_id)
    return (result if keep is None else cut_result(result, keep, call_id)), keep


def cut_result(text: str, keep: int, call_id: str | None, breaks: int | None = None) -> str:
    """The result ``text`` as sent when ``fit_tool_result`` chose ``keep``: its head and tail
    (``keep`` characters in all) around the cut marker, or, for -1, one line saying it was
    omitted. Deterministic: a saved result and its ``keep`` give the same text again.
    ``breaks``: the line breaks in ``text``, when the caller has counted them."""
    if keep < 0:
        return (f"[tool result omitted: {len(text):,} chars, no room left in the context; "
                f"the whole result is kept: {read_hint(call_id, 0)}]")
    head, tail = _head(text, keep - keep // 2), _tail(text, keep // 2)
    end = len(text) - len(tail)  # the middle cut is text[len(head):end] (counted, not copied)
    cut = (text.count("\n", len(head), end) if breaks is None
           else breaks - head.count("\n") - tail.count("\n"))
    return head + cut_marker(end - len(head), len(text), cut + 1, call_id, len(head)) + tail


def _head(text: str, chars: int) -> str:
    """The first ``chars`` chars, ended at a line break when one is in the last fifth."""
    head = text[:chars]
    cut = head.rfind("\n")
    return head[:cut + 1] if cut >= chars * 4 // 5 else head


def _tail(text: str, chars: int) -> str:
    """The last ``chars`` chars, started after a line break when one is in the first fifth."""
    if chars <= 0:
        return ""
    tail = text[-chars:]
    cut = tail.find("\n")
    return tail[cut + 1:] if 0 <= cut < chars // 5 else tail


def missing_results(messages: Sequence[Message]) -> list[Message]:
    """The error results the last assistant message's tool calls still lack (it and its
    results end ``messages``)."""
    i = len(messages)
    while i and messages[i - 1].role == "tool":
        i -= 1
    if not i or messages[i - 1].role != "assistant" or not messages[i - 1].tool_calls:
        return []
    answered = {m.tool_call_id for m in messages[i:]}
    return [Message("tool", MISSING_RESULT, tool_call_id=c.id, name=c.name)
            for c in messages[i - 1].tool_calls if c.id not in answered]
