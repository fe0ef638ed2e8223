"""Sessions too large for one summary request: turns sized, cut and grouped into chunks (their
summaries are merged back into one by compaction/carry.py)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

from rollchat.compaction.request import tool_record
from rollchat.domain import Text, Turn
from rollchat.models.tokens import TokenCounter

TURN_OVERHEAD_TOKENS = 12
TOOL_OVERHEAD_TOKENS = 20  # a tool record's keys, its name and the JSON around them


def turn_tokens(counter: TokenCounter, turn: Turn) -> int:
    """A turn's tokens in a summary request: its tool exchanges counted as the request carries
    them (arguments and results shortened, compaction/request.py), not as the chat did."""
    size = counter.count_text(turn.user) + counter.count_text(turn.assistant)
    for tool in turn.tools:
        record = tool_record(tool)
        size += counter.count_text(record["arguments"]) + counter.count_text(record["result"])
        size += TOOL_OVERHEAD_TOKENS
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
    texts = [b for b in turn.blocks if isinstance(b, Text)]
    each = max(half // max(len(texts), 1), 50)  # the answer's texts share half the limit
    blocks = tuple(Text(cut(b.text, each)) if isinstance(b, Text) else b for b in turn.blocks)
    return replace(turn, user=cut(turn.user, half), blocks=blocks)


def chunk_turns(turns: Sequence[Turn], limit: int, counter: TokenCounter,
                sized: Callable[[Turn], int] | None = None) -> list[list[Turn]]:
    """Oldest first, turns grouped so each group's conversation stays within ``limit``.
    ``sized``: ``turn_tokens`` of a turn, already counted (default: counted here)."""
    chunks: list[list[Turn]] = [[]]
    size = 0
    for turn in turns:
        tokens = sized(turn) if sized is not None else turn_tokens(counter, turn)
        if tokens > limit:
            turn = shrink_turn(turn, limit, counter.count_text)
            tokens = turn_tokens(counter, turn)
        if chunks[-1] and size + tokens > limit:
            chunks.append([])
            size = 0
        chunks[-1].append(turn)
        size += tokens
    return [c for c in chunks if c]
