"""The model's working context: system prompt and messages, the size baseline, the estimate of
the next prompt, and where the kept tail of an automatic compaction begins."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from rollchat.domain import Message
from rollchat.hygiene import KEEP_TOOL_RESULTS, clean, repair, stub
from rollchat.providers.base import ToolSpec
from rollchat.tokens import TokenCounter


@dataclass
class Context:
    """System prompt and messages, plus the size baseline.

    ``prefix_len`` leading messages are the stable prefix (a restored summary exchange).
    ``last_prompt_tokens`` is the prompt size the provider reported for the last call and
    ``added_since`` the messages appended after that call (estimate = report + count).
    """

    system: str
    messages: list[Message] = field(default_factory=list)
    prefix_len: int = 0
    last_prompt_tokens: int | None = None
    added_since: list[Message] = field(default_factory=list)
    open_tools: list[int] = field(default_factory=list)  # tool results not yet stubbed

    def append(self, message: Message, *, counted: bool = False) -> None:
        """Add a message; ``counted``: it was part of the prompt the last report covers.

        Hygiene is kept incrementally, so the cost per call does not grow with the history:
        once a tool result is older than the last KEEP_TOOL_RESULTS it is stubbed here, once,
        and stays byte-identical in every later request (the provider's prompt cache holds).
        """
        self.messages.append(message)
        if message.role == "tool":
            self.open_tools.append(len(self.messages) - 1)
            while len(self.open_tools) > KEEP_TOOL_RESULTS:
                i = self.open_tools.pop(0)
                self.messages[i] = stub(self.messages[i])
        if not counted:
            self.added_since.append(message)

    @property
    def reported_size(self) -> int:
        """The prompt size the provider reported for the last call (0 before any report)."""
        return self.last_prompt_tokens or 0

    def reported(self, prompt_tokens: int) -> None:
        """The provider measured the prompt just sent: it becomes the new baseline."""
        self.last_prompt_tokens = prompt_tokens
        self.added_since = []

    def reset(self, messages: Sequence[Message], prefix_len: int) -> None:
        """Replace the working context (after compact or resume); forget the baseline."""
        self.messages = clean(messages)
        self.open_tools = [i for i, m in enumerate(self.messages)
                           if m.role == "tool" and m != stub(m)][-KEEP_TOOL_RESULTS:]
        self.prefix_len = prefix_len
        self.last_prompt_tokens = None
        self.added_since = list(self.messages)

    def request_messages(self, in_flight: Sequence[Message]) -> list[Message]:
        """The context plus the messages of the call in flight, with the hygiene rules
        applied: in-flight messages repaired, only the last KEEP_TOOL_RESULTS results whole."""
        flight = repair(in_flight)
        out = [*self.messages, *flight]
        flight_tools = [len(self.messages) + i for i, m in enumerate(flight) if m.role == "tool"]
        tools = [*self.open_tools, *flight_tools]
        for i in tools[: max(len(tools) - KEEP_TOOL_RESULTS, 0)]:
            out[i] = stub(out[i])
        return out


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


def tail_sizes(counter: TokenCounter, context: Context, most: int) -> tuple[int, ...]:
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
