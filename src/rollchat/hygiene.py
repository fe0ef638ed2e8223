"""History hygiene before every model call: pure functions over the message list.

Old tool results are truncated, the list is repaired so that every tool call has exactly one
result right after it, and a single oversized tool result is cut to fit the budget.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

from rollchat.domain import Message

MISSING_RESULT = "error: the tool call got no result (interrupted or lost)"
KEEP_TOOL_RESULTS = 2


def stub(message: Message) -> Message:
    """A tool result reduced to ``[tool_name: truncated, was N chars]`` (idempotent)."""
    name = message.name or "tool"
    if message.role != "tool" or message.content.startswith(f"[{name}: truncated, was "):
        return message
    return replace(message, content=f"[{name}: truncated, was {len(message.content)} chars]")


def truncate_old_tool_results(messages: Sequence[Message],
                              keep_last: int = KEEP_TOOL_RESULTS) -> list[Message]:
    """Replace all but the last ``keep_last`` tool results by a one-line stub."""
    tool_positions = [i for i, m in enumerate(messages) if m.role == "tool"]
    out = list(messages)
    for i in tool_positions[: max(len(tool_positions) - keep_last, 0)]:
        out[i] = stub(out[i])
    return out


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


def fit_tool_result(text: str, max_tokens: int, count: Callable[[str], int]) -> str:
    """Cut a tool result that alone exceeds ``max_tokens``, saying how much was cut."""
    if max_tokens <= 0:
        return f"[tool result omitted: {len(text)} chars, no room left in the context]"
    if count(text) <= max_tokens:
        return text
    low, high = 0, len(text)
    while low < high:  # the longest prefix that fits, with room for the note
        mid = (low + high + 1) // 2
        if count(text[:mid]) + 30 <= max_tokens:
            low = mid
        else:
            high = mid - 1
    return (text[:low] + f"\n[cut to fit the context: showed {low} of {len(text)} chars; "
            "ask with offset/limit for more]")


def clean(messages: Sequence[Message],
          keep_tool_results: int = KEEP_TOOL_RESULTS) -> list[Message]:
    """The full pass run before every call."""
    return truncate_old_tool_results(repair(messages), keep_tool_results)
