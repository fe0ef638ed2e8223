"""The model's working context: system prompt and messages (the turn in flight included), the
size baseline, the estimate of the next prompt, and where the kept tail of an automatic
compaction begins."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, fields, replace

from rollchat.domain import Message
from rollchat.engine.hygiene import (
    KEEP_TOOL_RESULTS,
    is_shortened,
    missing_results,
    repair,
    shorten,
)
from rollchat.models.tokens import TokenCounter
from rollchat.providers.base import ToolSpec


def _quarter(text: str) -> int:
    return len(text) // 4 + 1


@dataclass
class WorkingContext:
    """The model's working context: system prompt and messages, plus the size baseline (not
    the memory layers' context block, nor a handoff's context: those ride in user messages).

    ``prefix_len`` leading messages are the stable prefix (a restored summary exchange).
    ``last_prompt_tokens`` is the prompt size the provider reported for the last call; it
    covered the first ``covered`` messages, and ``shrunk`` tokens of those were shortened since
    (estimate = report - shrunk + a count of the messages after ``covered``).

    The messages are exactly what the next request sends: a turn's tool calls and results join
    them as they happen, and tool results are shortened here, once (see ``append``).
    """

    system: str
    messages: list[Message] = field(default_factory=list)
    prefix_len: int = 0
    last_prompt_tokens: int | None = None
    covered: int = 0
    shrunk: int = 0
    keep_whole: int = KEEP_TOOL_RESULTS  # the last results always sent whole
    # tokens older results may take whole before they are shortened (it follows the window)
    allowance: Callable[[], int] = lambda: 0
    count: Callable[[str], int] = _quarter
    whole: list[tuple[int, int]] = field(default_factory=list)  # (position, tokens), oldest first
    # which messages a request sends (session.history: relevant, see history.py); None: all
    select: Callable[[Sequence[Message], int], list[Message]] | None = None
    # the conversation chain's key, sent with each request (ChatRequest.cache_key); None: none
    cache_key: str | None = None

    def append(self, message: Message, *, append_only: bool = False) -> None:
        """Add a message (it is sent as it is from now on).

        Older tool results are shortened in batches, never one by one: the last ``keep_whole``
        results stay whole, and the older ones too while they take at most ``allowance`` tokens;
        past that, all of them are shortened at once. A result changes at most once and is then
        byte-identical in every later request, so the requests between two such batches each
        start with the whole previous request (the provider's prompt cache holds).

        ``append_only`` (a model whose thinking is bound to what precedes it: a changed earlier
        message makes every later thinking block refused): nothing is shortened; the results
        wait, whole, for the next compaction (``reset`` shortens them then).
        """
        self.messages.append(message)
        if message.role == "tool" and not is_shortened(message):
            self.whole.append((len(self.messages) - 1, self.count(message.content)))
            older = self.whole[:max(len(self.whole) - self.keep_whole, 0)]
            if not append_only and sum(size for _, size in older) > self.allowance():
                for i, size in older:
                    self._shorten(i, size)
                self.whole = self.whole[len(older):]

    def _shorten(self, i: int, size: int) -> None:
        self.messages[i] = shorten(self.messages[i])
        if i < self.covered:  # the last report counted it whole
            self.shrunk += size - self.count(self.messages[i].content)

    def close_calls(self, *, append_only: bool = False) -> None:
        """Give the last tool calls their missing results (a turn stopped during a tool)."""
        for message in missing_results(self.messages):
            self.append(message, append_only=append_only)

    def mark(self) -> int:
        return len(self.messages)

    def rollback(self, mark: int) -> None:
        """Forget the messages added since ``mark`` (a turn that got no answer at all)."""
        del self.messages[mark:]
        self.whole = [(i, size) for i, size in self.whole if i < mark]
        self.covered = min(self.covered, mark)

    @property
    def reported_size(self) -> int:
        """The prompt size the provider reported for the last call (0 before any report)."""
        return self.last_prompt_tokens or 0

    def reported(self, prompt_tokens: int) -> None:
        """The provider measured the prompt just sent (all the messages): the new baseline."""
        self.last_prompt_tokens = prompt_tokens
        self.covered = len(self.messages)
        self.shrunk = 0

    def unreported(self) -> list[Message]:
        return self.messages[self.covered:]

    def reset(self, messages: Sequence[Message], prefix_len: int) -> None:
        """Replace the working context (after compact or resume); forget the baseline."""
        self.messages, self.whole = [], []
        self.last_prompt_tokens, self.covered, self.shrunk = None, 0, 0
        for message in repair(messages):
            self.append(message)
        self.prefix_len = prefix_len

    def copy(self) -> WorkingContext:
        """A copy that later changes to this context leave as it is (see ``revert_to``)."""
        return replace(self, messages=list(self.messages), whole=list(self.whole))

    def revert_to(self, saved: WorkingContext) -> None:
        """Become ``saved`` again, a ``copy`` made earlier (``undo`` of a compaction)."""
        for f in fields(WorkingContext):
            setattr(self, f.name, getattr(saved, f.name))

    def rewrite(self, i: int, message: Message) -> None:
        """Replace message ``i`` (an edited summary): the requests' prefix changes, so the
        provider's last report no longer describes it (the next estimate counts it all)."""
        self.messages[i] = message
        self.last_prompt_tokens, self.covered, self.shrunk = None, 0, 0

    def request_messages(self, pending: Sequence[Message] = ()) -> list[Message]:
        """The messages of the next request (the context is kept well formed as it grows),
        ``pending`` messages added: all of them, or the relevant history's choice."""
        messages = [*self.messages, *pending]
        return messages if self.select is None else self.select(messages, self.prefix_len)


def estimate_prompt(counter: TokenCounter, context: WorkingContext,
                    pending: Sequence[Message], tools: Sequence[ToolSpec] = ()) -> int:
    """The size of the next prompt: the provider's last report plus a local count of what was
    added since; with no report (first call, after resume or compaction) a full local count
    (the tools' schemas included). A relevant history (``context.select``) sends a different
    choice of messages each turn, so its requests are always counted whole, locally."""
    if context.select is not None:
        return counter.count_messages(context.system, context.request_messages(pending), tools)
    if context.last_prompt_tokens is None:
        return counter.count_messages(context.system, [*context.messages, *pending], tools)
    added = [*context.unreported(), *pending]
    return context.last_prompt_tokens - context.shrunk + sum(
        counter.count_message(m) for m in added)


def tail_start(messages: Sequence[Message], prefix_len: int, keep_turns: int) -> int:
    """Where the last ``keep_turns`` turns begin: the ``keep_turns``-th last user message after
    the prefix (``len(messages)`` to keep nothing). Scans from the end, so the cost depends on
    the tail, not on the length of the history; a turn's tool calls and results stay together:
    the kept tail always starts at a user message, never at a tool result."""
    cut, seen = len(messages), 0
    if keep_turns <= 0:
        return cut
    for i in range(len(messages) - 1, prefix_len - 1, -1):
        if messages[i].role == "user":
            cut, seen = i, seen + 1
            if seen == keep_turns:
                break
    return cut


def tail_sizes(counter: TokenCounter, context: WorkingContext, most: int) -> tuple[int, ...]:
    """Token sizes of the last ``most`` turns of the working context (oldest first), each a
    user message with everything up to the next one: what a compaction could keep."""
    messages = context.messages
    start = tail_start(messages, context.prefix_len, most)
    sizes: list[int] = []
    for message in messages[start:]:
        if message.role == "user" or not sizes:
            sizes.append(0)
        sizes[-1] += counter.count_message(message)
    return tuple(sizes)
