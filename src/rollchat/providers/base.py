"""The Provider seam: the request, the stream events, rollchat's provider errors, retries.

SDK types never leave ``providers/``: providers.sdk maps the SDKs' errors to these types.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from rollchat.domain import Message, ProviderBlock, ThinkingSetting, ToolCall, Usage
from rollchat.errors import RollchatError
from rollchat.text.normalize import clean

# Why a request is made. Real providers ignore it; the offline model uses it to decide what
# to write (a chat answer, a summary block, an acknowledgment of a restored summary).
Purpose = Literal["chat", "summary", "restore", "memory"]  # memory: fact extraction


@dataclass(frozen=True)
class ToolSpec:
    """A tool offered to the model: name, description and a JSON-schema for its arguments."""

    name: str
    description: str
    parameters: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ChatRequest:
    """Everything one model call needs.

    ``cache_prefix_messages``: how many leading messages (after the system prompt) form the
    stable prefix (e.g. the restored summary exchange); Anthropic marks the end of it with a
    ``cache_control`` breakpoint. 0 means only the system prompt is the prefix.
    """

    model: str
    system: str
    messages: tuple[Message, ...]
    max_output_tokens: int = 4096
    temperature: float | None = None
    tools: tuple[ToolSpec, ...] = ()
    purpose: Purpose = "chat"
    cache_prefix_messages: int = 0
    # seconds the whole answer may take once sent (None: the client's read timeout only);
    # a provider that ``enforces_timeout`` closes the connection when they pass
    timeout: float | None = None
    # the timeout counts from the call, the wait for the server's turn included (a stated
    # "at most", such as memory extraction's at exit), not from the sending
    timeout_from_call: bool = False
    # the conversation chain's key, a hash (session/state.chain_key): one value for every
    # request of the chain; OpenAI routes requests with one key to one cache
    # (``prompt_cache_key``), the other providers ignore it. None: not sent.
    cache_key: str | None = None
    # how much the model thinks (domain.ThinkingSetting; None: the model's default, nothing
    # sent): each provider turns it into its own parameter (Anthropic ``thinking``, the
    # Responses API's ``reasoning``)
    thinking: ThinkingSetting = None


@dataclass(frozen=True)
class TextDelta:
    text: str


@dataclass(frozen=True)
class ThinkingDelta:
    """A piece of the model's thinking: a provider's reasoning field as it streams (the
    engine also turns a reply's leading ``<think>`` block into these)."""

    text: str


@dataclass(frozen=True)
class ToolCallEvent:
    call: ToolCall


@dataclass(frozen=True)
class UsageEvent:
    """Usage of the call. ``input_tokens`` is the prompt size (for Anthropic including cached
    tokens: input + cache read + cache write), never the total."""

    usage: Usage


@dataclass(frozen=True)
class Done:
    """The stream ended normally. ``stop_reason``: "end", "tool_use", "max_tokens",
    "refusal" (the model declined: shown as a refusal, not an answer), "pause_turn" (the
    server paused a long turn: its content is sent back for the model to go on) or raw."""

    stop_reason: str = "end"


# A ProviderBlock is an event as it is: a provider's own block of the answer, complete (an
# OpenAI reasoning item), kept with its reply (``Message.extra``) and sent back byte for byte.
StreamEvent = TextDelta | ThinkingDelta | ToolCallEvent | UsageEvent | ProviderBlock | Done


class Provider(Protocol):
    """A model behind one API. ``stream`` yields events as they arrive and ends with Done."""

    name: str

    def stream(self, request: ChatRequest) -> Iterator[StreamEvent]: ...


# ---------------------------------------------------------------- errors


class ProviderError(RollchatError):
    """A model call failed. ``retryable`` errors are retried with backoff before any text."""

    retryable: bool = False
    label: str = "provider error"

    def __init__(self, message: str, *, retry_after: float | None = None,
                 retryable: bool | None = None) -> None:
        super().__init__(clean(message))  # it may quote what a server sent
        self.retry_after = retry_after
        if retryable is not None:  # the server said so (``x-should-retry``)
            self.retryable = retryable

    def one_line(self) -> str:
        text = " ".join(str(self).split())
        return f"{self.label}: {text}" if text else self.label


class AuthError(ProviderError):
    label = "authentication failed"


class RateLimitError(ProviderError):
    retryable = True
    label = "rate limited"


class OverloadedError(ProviderError):
    retryable = True
    label = "provider overloaded"


class ServerError(ProviderError):
    retryable = True
    label = "provider server error"


class ConflictError(ProviderError):
    """HTTP 409: the request clashed with another in flight (the SDKs retry it)."""

    retryable = True
    label = "request conflict"


class ProviderTimeoutError(ProviderError):
    retryable = True
    label = "request timed out"


class ProviderConnectionError(ProviderError):
    retryable = True
    label = "cannot connect"


class ServerDownError(ProviderConnectionError):
    """Nothing listens at a server on this machine (connection refused): waiting will not
    start it, so it is not retried."""

    retryable = False


class ConnectionLostError(ProviderConnectionError):
    """The connection was up and then closed before the answer ended."""

    label = "connection lost"


class ContextTooLongError(ProviderError):
    """The request did not fit the model's context. ``limit``: the window the server stated
    (tokens), None when its message gives none."""

    label = "context too long"

    def __init__(self, message: str, *, limit: int | None = None) -> None:
        super().__init__(message)
        self.limit = limit


class MalformedStreamError(ProviderError):
    label = "malformed response"


class BadRequestError(ProviderError):
    label = "request rejected"


class ModelNotFoundError(BadRequestError):
    """The server has no model of the name asked for (HTTP 404 naming a model)."""

    label = "no such model"


# ---------------------------------------------------------------- retries


JITTER = 0.25  # a backoff is shortened by up to this share, so clients spread out


@dataclass(frozen=True)
class RetryPolicy:
    max_retries: int = 3
    base_delay: float = 1.0
    max_delay: float = 30.0
    # a number in [0, 1) per wait: the jitter (injected by tests for a known wait)
    random: Callable[[], float] = field(default=random.random, compare=False, repr=False)

    def delay(self, attempt: int, error: ProviderError) -> float:
        """Seconds to wait before retry number ``attempt`` (1-based): what the server asked
        (``retry-after``), else an exponential backoff with jitter (as the SDKs wait: up to a
        quarter less, so many clients refused at once do not all come back together)."""
        if error.retry_after is not None:
            return min(max(error.retry_after, 0.0), self.max_delay)
        backoff = float(min(self.base_delay * (2 ** (attempt - 1)), self.max_delay))
        return backoff * (1 - JITTER * self.random())


@dataclass(frozen=True)
class RetryNotice:
    """Yielded by ``stream_with_retries(announce=True)`` before it waits to try again."""

    attempt: int
    wait: float
    error: ProviderError


def stream_with_retries(
    provider: Provider,
    request: ChatRequest,
    policy: RetryPolicy,
    *,
    sleep: Callable[[float], None] = time.sleep,
    on_retry: Callable[[int, float, ProviderError], None] | None = None,
    announce: bool = False,
) -> Iterator[StreamEvent | RetryNotice]:
    """Stream ``request``, retrying retryable errors that happen before any event arrived.

    Once an event has been yielded the answer is partly shown, so a later failure is raised
    to the caller (which keeps the partial text) instead of being retried. ``announce``: a
    RetryNotice is yielded before each wait, so the caller can say so while it waits.
    """
    attempt = 0
    while True:
        started = False
        try:
            for event in provider.stream(request):
                started = True
                yield event
            return
        except ProviderError as error:
            if started or not error.retryable or attempt >= policy.max_retries:
                raise
            attempt += 1
            wait = policy.delay(attempt, error)
            if on_retry is not None:
                on_retry(attempt, wait, error)
            if announce:
                yield RetryNotice(attempt, wait, error)
            sleep(wait)
