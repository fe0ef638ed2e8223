"""Helpers of automatic compaction: the prompt estimate, the kept tail, chunked summaries.

Pure functions; the flow itself (summarize, finalize, child session) lives in ``app``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

from rollchat.domain import Message, Summary, Turn, Usage
from rollchat.engine import Context
from rollchat.providers.base import ToolSpec
from rollchat.tokens import TokenCounter

CARRIED_PREFIX = "Carried over verbatim from "
TURN_OVERHEAD_TOKENS = 12


def estimate_prompt(counter: TokenCounter, context: Context, pending: Sequence[Message],
                    tools: Sequence[ToolSpec] = ()) -> int:
    """The size of the next prompt: the provider's last report plus a local count of what was
    added since; with no report (first call, after resume or compaction) a full local count."""
    if context.last_prompt_tokens is None:
        return counter.count_messages(context.system, [*context.messages, *pending], tools)
    added = [*context.added_since, *pending]
    return context.last_prompt_tokens + sum(counter.count_message(m) for m in added)


def tail_start(messages: Sequence[Message], prefix_len: int, keep_turns: int) -> int:
    """Where the last ``keep_turns`` turns begin: the ``keep_turns``-th last user message after
    the prefix (``len(messages)`` to keep nothing). Scans from the end, so the cost depends on
    the tail, not on the length of the history; a turn's tool calls and results stay together."""
    cut, seen = len(messages), 0
    if keep_turns <= 0:
        return cut
    for i in range(len(messages) - 1, prefix_len - 1, -1):
        if messages[i].role == "user":
            cut, seen = i, seen + 1
            if seen == keep_turns:
                break
    return cut


def carried_turns(turns: Sequence[Turn], count: int, parent_id: str) -> list[Turn]:
    """The last ``count`` answered queries, to be recorded again in the child session (with
    zero tokens: they were paid for, and are counted, in the parent)."""
    answered = [t for t in turns if t.kind != "restored" and t.status != "unanswered"]
    kept = answered[-count:] if count > 0 else []
    return [replace(t, kind="carried", number=i + 1, usage=Usage(),
                    context=f"{CARRIED_PREFIX}{parent_id}")
            for i, t in enumerate(kept)]


def turn_tokens(counter: TokenCounter, turn: Turn) -> int:
    size = counter.count_text(turn.user) + counter.count_text(turn.assistant)
    size += sum(counter.count_text(t.result) // 4 + 20 for t in turn.tools)  # results shortened
    return size + TURN_OVERHEAD_TOKENS


def shrink_turn(turn: Turn, max_tokens: int, count: Callable[[str], int]) -> Turn:
    """Cut a turn too large for any summary request (head and tail of each text kept)."""
    def cut(text: str, limit: int) -> str:
        if count(text) <= limit:
            return text
        chars = max(limit * 3, 200)
        head, tail = text[: chars // 2], text[-chars // 2:]
        return f"{head}\n[... {len(text) - chars} chars cut ...]\n{tail}"

    half = max(max_tokens // 2, 50)
    return replace(turn, user=cut(turn.user, half), assistant=cut(turn.assistant, half))


def chunk_turns(turns: Sequence[Turn], limit: int, counter: TokenCounter) -> list[list[Turn]]:
    """Oldest first, turns grouped so each group's conversation stays within ``limit``."""
    chunks: list[list[Turn]] = [[]]
    size = 0
    for turn in turns:
        tokens = turn_tokens(counter, turn)
        if tokens > limit:
            turn = shrink_turn(turn, limit, counter.count_text)
            tokens = turn_tokens(counter, turn)
        if chunks[-1] and size + tokens > limit:
            chunks.append([])
            size = 0
        chunks[-1].append(turn)
        size += tokens
    return [c for c in chunks if c]


def merge_summaries(parts: Sequence[Summary], max_items: int = 12) -> Summary:
    """Fold chunk summaries (oldest first) into one: the first chunk's background, every
    chunk's topics and decisions (latest first when over ``max_items``), the last pending."""
    def union(items: Sequence[tuple[str, ...]]) -> tuple[str, ...]:
        seen: dict[str, None] = {}
        for group in items:
            for item in group:
                seen.setdefault(item, None)
        merged = list(seen)
        return tuple(merged[-max_items:])

    return Summary(
        background=parts[0].background,
        topics=union([p.topics for p in parts]),
        decisions=union([p.decisions for p in parts]),
        pending=parts[-1].pending,
        fallback=any(p.fallback for p in parts),
    )
