"""Anthropic Messages provider: streaming, tools, prompt caching of the stable prefix.

The ``anthropic`` SDK is imported at the first call; its errors are mapped to rollchat's own.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from rollchat.domain import Message, ToolCall, Usage
from rollchat.providers import SDKProvider, map_sdk_error
from rollchat.providers.base import (
    ChatRequest,
    Done,
    MalformedStreamError,
    ProviderError,
    StreamEvent,
    TextDelta,
    ToolCallEvent,
    ToolSpec,
    UsageEvent,
)
from rollchat.providers.openai import parse_arguments

_STOP_REASONS = {"end_turn": "end", "tool_use": "tool_use", "max_tokens": "max_tokens",
                 "stop_sequence": "end"}
_CACHE = {"type": "ephemeral"}


class AnthropicProvider(SDKProvider):
    """The Messages API, streamed as raw events (``messages.create(stream=True)``)."""

    sdk = "anthropic"

    def _make_client(self, sdk: Any) -> Any:
        return sdk.Anthropic(api_key=self._api_key, base_url=self._base_url,
                             timeout=self._timeout, max_retries=0)

    def stream(self, request: ChatRequest) -> Iterator[StreamEvent]:
        try:
            client = self._sdk_client()
            events = client.messages.create(**request_params(request))
            try:
                yield from stream_events(events)
            finally:  # release the connection at once, also when the caller stops early
                events.close()
        except ProviderError:
            raise
        except Exception as exc:
            raise map_sdk_error(exc, self._api_key) from None


def request_params(request: ChatRequest) -> dict[str, Any]:
    """The keyword arguments of ``messages.create`` for ``request``."""
    params: dict[str, Any] = {"model": request.model, "max_tokens": request.max_output_tokens,
                              "messages": message_params(request.messages,
                                                         request.cache_prefix_messages),
                              "stream": True}
    if request.system:
        params["system"] = [{"type": "text", "text": request.system, "cache_control": _CACHE}]
    if request.temperature is not None:  # anthropic 2.x dropped the keyword; the API reads it
        params["extra_body"] = {"temperature": request.temperature}
    if request.tools:
        params["tools"] = [tool_param(t) for t in request.tools]
    return params


def tool_param(spec: ToolSpec) -> dict[str, Any]:
    schema = dict(spec.parameters) or {"type": "object", "properties": {}}
    return {"name": spec.name, "description": spec.description, "input_schema": schema}


def _blocks(message: Message) -> list[dict[str, Any]]:
    if message.role == "tool":
        return [{"type": "tool_result", "tool_use_id": message.tool_call_id or "",
                 "content": message.content}]
    blocks: list[dict[str, Any]] = []
    if message.content:  # the API refuses empty text blocks
        blocks.append({"type": "text", "text": message.content})
    blocks += [{"type": "tool_use", "id": c.id, "name": c.name, "input": dict(c.arguments)}
               for c in message.tool_calls]
    return blocks


def message_params(messages: Iterable[Message], cache_prefix: int = 0) -> list[dict[str, Any]]:
    """Our messages as alternating user/assistant messages.

    Tool results become user ``tool_result`` blocks; consecutive same-role messages merge;
    messages with no content are dropped. The last block of message ``cache_prefix - 1``
    carries a ``cache_control`` breakpoint (the end of the stable prefix).
    """
    out: list[dict[str, Any]] = []
    for index, message in enumerate(messages):
        blocks = _blocks(message)
        if not blocks:
            continue
        if index == cache_prefix - 1:
            blocks[-1] = {**blocks[-1], "cache_control": _CACHE}
        role = "assistant" if message.role == "assistant" else "user"
        if out and out[-1]["role"] == role:
            out[-1]["content"].extend(blocks)
        else:
            out.append({"role": role, "content": blocks})
    return out


@dataclass
class _PartialCall:
    id: str
    name: str
    initial: dict[str, Any]
    fragments: list[str] = field(default_factory=list)

    def build(self) -> ToolCall:
        raw = "".join(self.fragments)
        return ToolCall(self.id, self.name, parse_arguments(raw) if raw else self.initial)


@dataclass
class _State:
    calls: dict[int, _PartialCall] = field(default_factory=dict)
    usage: dict[str, int] = field(default_factory=dict)
    stop: str | None = None
    stopped: bool = False

    def take_usage(self, usage: Any) -> None:
        for key in ("input_tokens", "output_tokens", "cache_read_input_tokens",
                    "cache_creation_input_tokens"):
            value = getattr(usage, key, None)
            if isinstance(value, int):
                self.usage[key] = value

    def final_usage(self) -> Usage | None:
        if not self.usage:
            return None
        read = self.usage.get("cache_read_input_tokens", 0)
        write = self.usage.get("cache_creation_input_tokens", 0)
        return Usage(input_tokens=self.usage.get("input_tokens", 0) + read + write,
                     output_tokens=self.usage.get("output_tokens", 0),
                     cache_read_tokens=read, cache_write_tokens=write)


def stream_events(events: Iterable[Any]) -> Iterator[StreamEvent]:
    """Turn raw Messages stream events into stream events."""
    state = _State()
    for event in events:
        yield from _handle(event, state)
    if not state.stopped or state.stop is None:
        raise MalformedStreamError("the stream ended before the model finished its answer")
    usage = state.final_usage()
    if usage is not None:
        yield UsageEvent(usage)
    yield Done(_STOP_REASONS.get(state.stop, state.stop))


def _handle(event: Any, state: _State) -> Iterator[StreamEvent]:
    kind = getattr(event, "type", None)
    if kind == "message_start":
        state.take_usage(getattr(event.message, "usage", None))
    elif kind == "content_block_start":
        block = event.content_block
        if getattr(block, "type", None) == "tool_use":
            initial = block.input if isinstance(block.input, dict) else {}
            state.calls[event.index] = _PartialCall(block.id, block.name, initial)
    elif kind == "content_block_delta":
        delta = event.delta
        if delta.type == "text_delta" and delta.text:
            yield TextDelta(delta.text)
        elif delta.type == "input_json_delta" and event.index in state.calls:
            state.calls[event.index].fragments.append(delta.partial_json)
    elif kind == "content_block_stop" and event.index in state.calls:
        yield ToolCallEvent(state.calls.pop(event.index).build())
    elif kind == "message_delta":
        state.stop = event.delta.stop_reason or state.stop
        state.take_usage(getattr(event, "usage", None))
    elif kind == "message_stop":
        state.stopped = True
