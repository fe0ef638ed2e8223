"""A plain function as the agent (``root_agent(query) -> str``, async, or a generator of text,
as basic-agent-chat-loop accepts): given the user's message (and the history, when it takes a
``history`` parameter), its text is the answer. It has no model of its own: summaries come from
``summary.provider`` when set, else the local summary."""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

from rollchat.agents.frameworks import FrameworkAgent
from rollchat.agents.frameworks.bridge import Channel, bridged
from rollchat.domain import Message
from rollchat.engine.runner import FrameworkError, RunEvent, RunRequest
from rollchat.providers.base import (
    ChatRequest,
    Done,
    ProviderError,
    StreamEvent,
    TextDelta,
)

NO_SUMMARIES = "a function agent has no model; set summary.provider for a model's summary"
ACKNOWLEDGED = "I have the summary of our earlier conversation; go on."


def adapt(obj: object, name: str) -> FrameworkAgent:
    assert callable(obj)
    doc = inspect.getdoc(obj) or ""
    return FrameworkAgent("function", name, "function", FunctionRunner(obj),
                          NoModel(), instructions=doc, no_summaries=NO_SUMMARIES)


def as_dicts(messages: tuple[Message, ...]) -> list[dict[str, str]]:
    """The history as ``{"role", "content"}`` dicts (tool calls and results left out)."""
    return [{"role": m.role, "content": m.content} for m in messages
            if m.role in ("user", "assistant") and m.content]


class FunctionRunner:
    framework = "function"

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.fn = fn
        try:
            params = inspect.signature(fn).parameters
        except (TypeError, ValueError):
            params = {}  # type: ignore[assignment]
        self.takes_history = "history" in params or any(
            p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())

    def run(self, request: RunRequest) -> Iterator[RunEvent]:
        kwargs = {"history": as_dicts(request.history)} if self.takes_history else {}
        try:
            result = self.fn(request.query, **kwargs)
        except KeyboardInterrupt:
            raise
        except Exception as exc:
            raise FrameworkError(f"{type(exc).__name__}: {exc}") from exc
        if inspect.isawaitable(result) or inspect.isasyncgen(result):
            yield from bridged(lambda channel: _drain(result, channel), request.approve)
        elif isinstance(result, str):
            yield TextDelta(result)
        elif inspect.isgenerator(result) or (hasattr(result, "__iter__")
                                             and not isinstance(result, (bytes, dict))):
            yield from _pieces(result)
        elif result is not None:
            yield TextDelta(str(result))


def _pieces(result: Any) -> Iterator[RunEvent]:
    try:
        for piece in result:
            if piece is not None:
                yield TextDelta(piece if isinstance(piece, str) else str(piece))
    except (KeyboardInterrupt, GeneratorExit):
        raise
    except Exception as exc:
        raise FrameworkError(f"{type(exc).__name__}: {exc}") from exc
    finally:
        close = getattr(result, "close", None)
        if close is not None:
            close()


async def _drain(result: Any, channel: Channel) -> None:
    if inspect.isasyncgen(result):
        agen: AsyncIterator[Any] = result
        async for piece in agen:
            if piece is not None:
                channel.put(TextDelta(piece if isinstance(piece, str) else str(piece)))
        return
    value = await result
    if inspect.isasyncgen(value):
        await _drain(value, channel)
    elif value is not None:
        channel.put(TextDelta(value if isinstance(value, str) else str(value)))


class NoModel:
    """A function agent's stand-in for a model: it acknowledges a restored summary and has
    no summary to write (the summarizer falls back to ``summary.provider`` or the local
    summary)."""

    name = "function"

    def stream(self, request: ChatRequest) -> Iterator[StreamEvent]:
        if request.purpose == "restore":
            yield TextDelta(ACKNOWLEDGED)
            yield Done()
            return
        raise ProviderError("a function agent has no model to write a summary with")
