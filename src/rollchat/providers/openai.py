"""OpenAI Chat Completions provider (also any OpenAI-compatible server via ``base_url``): the
request and the parser of its chunks. Streaming and error mapping are in providers/sdk.py.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any, ClassVar

from rollchat.domain import Image, Message, Usage, image_marker
from rollchat.providers.base import (
    ChatRequest,
    StreamEvent,
    TextDelta,
    ThinkingDelta,
    ToolSpec,
)
from rollchat.providers.content import all_sendable, b64
from rollchat.providers.fitting import create_fitted
from rollchat.providers.lanes import traced_http_client
from rollchat.providers.model_params import chat_tools_effort, reasoning_effort
from rollchat.providers.names import OPENAI, SDK_MODULES
from rollchat.providers.sdk import (
    HeldCallsParser,
    PartialCall,
    SDKProvider,
    SDKStream,
    StreamParser,
    effort_for,
)

_NO_KEY = "not-needed"  # local OpenAI-compatible servers ignore the key, the SDK wants one


class OpenAIProvider(SDKProvider):
    """Chat Completions, streamed, with ``stream_options.include_usage``."""

    name = OPENAI
    sdk = SDK_MODULES[OPENAI]

    def _make_client(self, sdk: Any) -> Any:
        return sdk.OpenAI(api_key=self._api_key or _NO_KEY, base_url=self._base_url,
                          default_query=self._query, timeout=self._timeout, max_retries=0,
                          http_client=traced_http_client(sdk, self.lane.limit))

    def _open(self, client: Any, request: ChatRequest) -> SDKStream:
        official = _is_official(self._base_url)
        params = request_params(request, official=official,
                                images=official if self.images is None else self.images)
        stream: SDKStream = create_fitted(client.chat.completions.create, params, request.model,
                                          server=self._base_url)
        return stream

    def _parser(self) -> StreamParser:
        return _ChunksParser()


def _is_official(base_url: str | None) -> bool:
    return base_url is None or "api.openai.com" in base_url


def request_params(request: ChatRequest, *, official: bool = False,
                   images: bool | None = None) -> dict[str, Any]:
    """The keyword arguments of ``chat.completions.create`` for ``request``.

    The output limit goes in ``max_completion_tokens`` for api.openai.com (its newer models
    refuse ``max_tokens``) and in ``max_tokens`` for OpenAI-compatible servers. Images go to
    api.openai.com, and to a server whose model is set to take them (``images``); others get
    their text stand-ins (many serve text-only models that refuse image parts). The chain's
    cache key goes to api.openai.com only, as ``prompt_cache_key`` (a compatible server may
    refuse a parameter it does not know). The thinking setting goes as ``reasoning_effort``
    where the model takes one (providers/model_params.reasoning_effort).
    """
    messages: list[dict[str, Any]] = []
    if request.system:
        messages.append({"role": "system", "content": request.system})
    images = official if images is None else images
    messages += wire_messages(all_sendable(request.messages, images, OPENAI))
    params: dict[str, Any] = {"model": request.model, "messages": messages, "stream": True,
                              "stream_options": {"include_usage": True}}
    params["max_completion_tokens" if official else "max_tokens"] = request.max_output_tokens
    if request.temperature is not None:
        params["temperature"] = request.temperature
    effort = reasoning_effort(request.model, request.thinking, effort_for)
    if request.tools:  # gpt-6-sol calls functions here only without reasoning (provider
        # openai-responses has both): the thinking setting yields to the tools
        effort = chat_tools_effort(request.model) or effort
    if effort is not None:  # None: the model's default, or a model that does not reason
        params["reasoning_effort"] = effort
    if request.tools:
        params["tools"] = [tool_param(t) for t in request.tools]
    if official and request.cache_key:
        params["prompt_cache_key"] = request.cache_key
    return params


def wire_messages(messages: list[Message]) -> list[dict[str, Any]]:
    """The messages as Chat Completions takes them. A tool message holds text only, so the
    images of a reply's results follow its results in one user message that says whose
    they are."""
    out: list[dict[str, Any]] = []
    shown: list[dict[str, Any]] = []
    for message in messages:
        if shown and message.role != "tool":
            out.append({"role": "user", "content": shown})
            shown = []
        out.append(message_param(message))
        if message.role == "tool" and message.images:  # each named as its result's text
            shown += [{"type": "text", "text": f"The images the tool call "  # places it
                                               f"{message.tool_call_id} ({message.name}) "
                                               "returned:"},
                      *(part for number, i in enumerate(message.images, 1) for part in (
                          *([{"type": "text", "text": image_marker(number, i)}]
                            if image_marker(number, i) in message.content else []),
                          _image_part(i)))]
    if shown:
        out.append({"role": "user", "content": shown})
    return out


def _image_part(image: Image) -> dict[str, Any]:
    return {"type": "image_url",
            "image_url": {"url": f"data:{image.media_type};base64,{b64(image)}"}}


def message_param(message: Message) -> dict[str, Any]:
    if message.role == "tool":
        return {"role": "tool", "tool_call_id": message.tool_call_id or "",
                "content": message.content}
    if message.role == "user" and message.images:
        return {"role": "user", "content": [
            *([{"type": "text", "text": message.content}] if message.content else []),
            *(_image_part(i) for i in message.images)]}
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


class _ChunksParser(HeldCallsParser):
    """Chat Completions chunks: text deltas, tool calls in indexed fragments (yielded after
    the text, at the end), usage in the last chunk; finished once a finish_reason came."""

    stop_reasons: ClassVar[Mapping[str, str]] = {
        "stop": "end", "tool_calls": "tool_use", "function_call": "tool_use",
        "length": "max_tokens"}

    def feed(self, item: Any) -> Iterator[StreamEvent]:
        if getattr(item, "usage", None) is not None:
            self.last_usage = usage_from(item.usage)
        for choice in getattr(item, "choices", None) or ():
            delta = choice.delta
            thought = reasoning(delta)
            if thought:
                yield ThinkingDelta(thought)
            if delta is not None and delta.content:
                yield TextDelta(delta.content)
            for part in (delta.tool_calls if delta is not None else None) or ():
                self._accumulate(part)
            self.finished = choice.finish_reason or self.finished

    def _accumulate(self, part: Any) -> None:
        call = self.calls.setdefault(part.index or 0, PartialCall())
        call.id = part.id or call.id
        function = part.function
        if function is not None:
            call.name = function.name or call.name
            if function.arguments:
                call.fragments.append(function.arguments)


def reasoning(delta: Any) -> str:
    """A delta's thinking, which the Chat Completions types do not declare: servers send it
    as ``reasoning_content`` (llama.cpp with a reasoning format, vLLM, DeepSeek) or
    ``reasoning`` (Ollama, OpenRouter, newer vLLM); the SDK keeps unknown fields as extras."""
    extra = getattr(delta, "model_extra", None) or {}
    for name in ("reasoning_content", "reasoning"):
        value = extra.get(name)
        if isinstance(value, str) and value:
            return value
    return ""


def usage_from(usage: Any) -> Usage:
    details = getattr(usage, "prompt_tokens_details", None)
    cached = getattr(details, "cached_tokens", None) if details is not None else None
    return Usage(input_tokens=usage.prompt_tokens or 0,
                 output_tokens=usage.completion_tokens or 0,
                 cache_read_tokens=cached or 0)
