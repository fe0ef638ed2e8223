"""OpenAI Chat Completions provider (also any OpenAI-compatible server via ``base_url``).

The ``openai`` SDK is imported at the first call; its errors are mapped to rollchat's own.
"""

from __future__ import annotations

import json
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

# Arguments that are not a JSON object are passed on under this key (the tool loop answers
# the model with an error instead of the whole turn failing).
RAW_ARGUMENTS_KEY = "_raw_arguments"

_STOP_REASONS = {"stop": "end", "tool_calls": "tool_use", "function_call": "tool_use",
                 "length": "max_tokens"}
_NO_KEY = "not-needed"  # local OpenAI-compatible servers ignore the key, the SDK wants one


class OpenAIProvider(SDKProvider):
    """Chat Completions, streamed, with ``stream_options.include_usage``."""

    sdk = "openai"

    def _make_client(self, sdk: Any) -> Any:
        return sdk.OpenAI(api_key=self._api_key or _NO_KEY, base_url=self._base_url,
                          timeout=self._timeout, max_retries=0)

    def stream(self, request: ChatRequest) -> Iterator[StreamEvent]:
        params = request_params(request, official=_is_official(self._base_url))
        try:
            client = self._sdk_client()
            chunks = client.chat.completions.create(**params)
            try:
                yield from stream_events(chunks)
            finally:  # release the connection at once, also when the caller stops early
                chunks.close()
        except ProviderError:
            raise
        except Exception as exc:
            raise map_sdk_error(exc, self._api_key) from None


def _is_official(base_url: str | None) -> bool:
    return base_url is None or "api.openai.com" in base_url


def request_params(request: ChatRequest, *, official: bool = False) -> dict[str, Any]:
    """The keyword arguments of ``chat.completions.create`` for ``request``.

    The output limit goes in ``max_completion_tokens`` for api.openai.com (its newer models
    refuse ``max_tokens``) and in ``max_tokens`` for OpenAI-compatible servers.
    """
    messages: list[dict[str, Any]] = []
    if request.system:
        messages.append({"role": "system", "content": request.system})
    messages += [message_param(m) for m in request.messages]
    params: dict[str, Any] = {"model": request.model, "messages": messages, "stream": True,
                              "stream_options": {"include_usage": True}}
    params["max_completion_tokens" if official else "max_tokens"] = request.max_output_tokens
    if request.temperature is not None:
        params["temperature"] = request.temperature
    if request.tools:
        params["tools"] = [tool_param(t) for t in request.tools]
    return params


def message_param(message: Message) -> dict[str, Any]:
    if message.role == "tool":
        return {"role": "tool", "tool_call_id": message.tool_call_id or "",
                "content": message.content}
    if message.role == "assistant" and message.tool_calls:
        return {"role": "assistant", "content": message.content or None,
                "tool_calls": [{"id": c.id, "type": "function", "function": {
                    "name": c.name, "arguments": json.dumps(dict(c.arguments))}}
                    for c in message.tool_calls]}
    return {"role": message.role, "content": message.content}


def tool_param(spec: ToolSpec) -> dict[str, Any]:
    parameters = dict(spec.parameters) or {"type": "object", "properties": {}}
    return {"type": "function", "function": {
        "name": spec.name, "description": spec.description, "parameters": parameters}}


@dataclass
class _PartialCall:
    id: str = ""
    name: str = ""
    fragments: list[str] = field(default_factory=list)

    def build(self) -> ToolCall:
        return ToolCall(self.id, self.name, parse_arguments("".join(self.fragments)))


def parse_arguments(raw: str) -> dict[str, Any]:
    """Decode tool-call arguments; anything but a JSON object lands under RAW_ARGUMENTS_KEY."""
    if not raw.strip():
        return {}
    try:
        value = json.loads(raw)
    except ValueError:
        return {RAW_ARGUMENTS_KEY: raw}
    return value if isinstance(value, dict) else {RAW_ARGUMENTS_KEY: raw}


def stream_events(chunks: Iterable[Any]) -> Iterator[StreamEvent]:
    """Turn Chat Completions chunks into stream events; tool calls come after the text."""
    calls: dict[int, _PartialCall] = {}
    finish: str | None = None
    usage: Usage | None = None
    for chunk in chunks:
        if getattr(chunk, "usage", None) is not None:
            usage = usage_from(chunk.usage)
        for choice in getattr(chunk, "choices", None) or ():
            delta = choice.delta
            if delta is not None and delta.content:
                yield TextDelta(delta.content)
            for part in (delta.tool_calls if delta is not None else None) or ():
                _accumulate(calls, part)
            finish = choice.finish_reason or finish
    if finish is None:
        raise MalformedStreamError("the stream ended before the model finished its answer")
    for index in sorted(calls):
        yield ToolCallEvent(calls[index].build())
    if usage is not None:
        yield UsageEvent(usage)
    yield Done(_STOP_REASONS.get(finish, finish))


def _accumulate(calls: dict[int, _PartialCall], part: Any) -> None:
    call = calls.setdefault(part.index or 0, _PartialCall())
    call.id = part.id or call.id
    function = part.function
    if function is not None:
        call.name = function.name or call.name
        if function.arguments:
            call.fragments.append(function.arguments)


def usage_from(usage: Any) -> Usage:
    details = getattr(usage, "prompt_tokens_details", None)
    cached = getattr(details, "cached_tokens", None) if details is not None else None
    return Usage(input_tokens=usage.prompt_tokens or 0,
                 output_tokens=usage.completion_tokens or 0,
                 cache_read_tokens=cached or 0)
