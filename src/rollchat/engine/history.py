"""Relevant history (``session.history: relevant``): which earlier exchanges a request sends.

The stable prefix (the restored summary exchange) and the last ``KEEP_RECENT`` exchanges (the
current one included) always go verbatim; of the older exchanges, at most ``MOST_OLDER`` are
sent: those most similar to the current message (BM25 through SQLite FTS5's ``bm25()``), in
their original order, or the last ``MOST_OLDER`` when none matches (the ranking of the
memory store: memory/search.py). An exchange is a user message with everything up to the
next one, so a tool call never travels without its result.

This mode sends a different history each turn, so a request rarely starts with the previous
one: it forgoes the provider's prompt caching (the default, ``all``, keeps it). Anthropic's
thinking blocks are bound to what preceded them when they were written (on the models with
preserved thinking a changed prefix is refused with HTTP 400, "The block is bound to a
different conversation. Remove the block ...": platform.claude.com "Prefix checks on thinking
blocks"), and the earlier turns were written under another choice: once older exchanges are
chosen, the thinking of every exchange before the current one is removed, as the docs allow
(only the current exchange's tool loop needs its thinking, and it was written under this
turn's choice, made once per turn). The transcript keeps it all.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from rollchat.domain import Message
from rollchat.memory.layers import split_block
from rollchat.memory.search import rank
from rollchat.providers.names import ANTHROPIC

HISTORY_MODES = ("all", "relevant")
THINKING_BLOCKS = ("thinking", "redacted_thinking")  # Anthropic's, bound to their prefix
KEEP_RECENT = 3
MOST_OLDER = 20
CACHE_NOTE = ("History: relevant (a different history is sent each turn, so it forgoes "
              "prompt caching: the provider's prompt cache is not reused)")


def exchange_starts(messages: Sequence[Message], prefix_len: int) -> list[int]:
    """Where each exchange after the prefix begins: the index of its user message."""
    return [i for i in range(prefix_len, len(messages)) if messages[i].role == "user"]


def exchange_text(messages: Sequence[Message]) -> str:
    """What an exchange is searched by: the user's text (not its context block), the answers
    and the tool calls' names and arguments (not the results: those are long and shortened)."""
    parts: list[str] = []
    for m in messages:
        if m.role == "user":
            parts.append(split_block(m.content)[1])
        elif m.role == "assistant":
            parts.append(m.content)
            parts += [f"{c.name} {c.arguments}" for c in m.tool_calls]
    return "\n".join(parts)


@dataclass
class RelevantHistory:
    """The ``relevant`` history selection, as ``WorkingContext.select``: the messages a
    request sends.

    The choice depends on the older exchanges and the current message only, so it is made
    once per turn and reused by the turn's tool rounds (which only add to the last exchange).
    """

    keep_recent: int = KEEP_RECENT
    most_older: int = MOST_OLDER
    _cache: dict[tuple[int, str], list[int]] = field(default_factory=dict)

    def older(self, messages: Sequence[Message], starts: Sequence[int]) -> list[int]:
        """Which older exchanges go (indices into ``starts``, in order)."""
        old = len(starts) - self.keep_recent
        query = split_block(messages[starts[-1]].content)[1]
        key = (starts[old], query)
        if key not in self._cache:
            bounds = [*starts[:old + 1]]
            docs = [exchange_text(messages[bounds[i]:bounds[i + 1]]) for i in range(old)]
            chosen = sorted(rank(docs, query, self.most_older))
            self._cache = {key: chosen or list(range(max(old - self.most_older, 0), old))}
        return self._cache[key]

    def __call__(self, messages: Sequence[Message], prefix_len: int) -> list[Message]:
        starts = exchange_starts(messages, prefix_len)
        if len(starts) <= self.keep_recent:
            return list(messages)
        old = len(starts) - self.keep_recent
        out = list(messages[:starts[0]])  # the prefix (and anything before the first message)
        ends = [*starts[1:], len(messages)]
        for i in self.older(messages, starts):
            out += [unthought(m) for m in messages[starts[i]:ends[i]]]
        out += [unthought(m) for m in messages[starts[old]:starts[-1]]]
        out += messages[starts[-1]:]  # the current exchange, its thinking with it
        return out


def unthought(message: Message) -> Message:
    """``message`` without Anthropic thinking blocks (bound to a prefix this request changed)."""
    kept = tuple(b for b in message.extra
                 if not (b.provider == ANTHROPIC and b.type in THINKING_BLOCKS))
    return message if len(kept) == len(message.extra) else replace(message, extra=kept)
