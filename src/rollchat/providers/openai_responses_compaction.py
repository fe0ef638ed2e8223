"""Compaction on OpenAI's Responses API (``compaction.engine: provider``): the window from
``context_management`` inside a ``responses.create`` on the chat's own input (its prefix a cache
read) at api.openai.com, else from ``responses.compact``; the readable summary beside it."""

from __future__ import annotations

import json
from abc import abstractmethod
from dataclasses import dataclass, replace
from typing import Any

from rollchat.domain import Message, ProviderBlock, Usage
from rollchat.providers.base import ChatRequest, ProviderError, TextDelta, UsageEvent
from rollchat.providers.compacting import Compacted, CompactionFailed
from rollchat.providers.names import OPENAI_RESPONSES, is_official
from rollchat.providers.sdk import SDKProvider, map_sdk_error

# The block of a compacted window: its items, a JSON list, each as it came (responses.compact:
# the user messages and the compaction item; context_management: the compaction item alone).
WINDOW = "compacted"
# The answer after a context_management compaction is not read: cut at the smallest limit the
# API takes (it refuses a max_output_tokens under 16: QuantumNous/new-api#2866)
REPLY_CAP = 16


@dataclass(frozen=True)
class CompactingRequest(ChatRequest):
    """A chat request sent with server-side compaction: ``context_management`` compacts it
    once its rendered tokens pass ``compact_threshold`` (OpenAI's compaction guide)."""

    compact_threshold: int = 1


def compacting(request: ChatRequest) -> CompactingRequest:
    """``request`` asked to compact before the model answers: a threshold well under its size
    (a quarter of its characters is about its tokens; half of that, so the server's count of the
    whole input passes it, and the compacted window, far smaller, stays under it), the reply
    cut at ``REPLY_CAP``."""
    size = sum(len(m.content) for m in request.messages) + len(request.system) + \
        sum(len(json.dumps(dict(t.parameters))) + len(t.description) for t in request.tools)
    fields = {f: getattr(request, f) for f in ChatRequest.__dataclass_fields__}
    fields["max_output_tokens"] = REPLY_CAP
    return CompactingRequest(**fields, compact_threshold=max(1, size // 8))


def context_management(request: ChatRequest) -> list[dict[str, Any]] | None:
    """The ``context_management`` parameter of ``request`` (response_create_params
    .ContextManagement), None for a request that does not compact."""
    if not isinstance(request, CompactingRequest):
        return None
    return [{"type": "compaction", "compact_threshold": request.compact_threshold}]


def window_block(items: list[dict[str, Any]]) -> ProviderBlock:
    if not any(item.get("type") == "compaction" for item in items):
        raise CompactionFailed("the compaction answered without a compaction item")
    data = json.dumps(items, ensure_ascii=False, separators=(",", ":"))
    return ProviderBlock(OPENAI_RESPONSES, WINDOW, data)


class CompactingResponses(SDKProvider):
    """The compaction half of the Responses provider. ``in_response``: compact through
    ``context_management`` (None: at api.openai.com only, as a compatible server may refuse a
    parameter it does not know, or drop it and answer without a compaction item)."""

    in_response: bool | None = None

    @abstractmethod
    def _params(self, request: ChatRequest) -> dict[str, Any]: ...

    @abstractmethod
    def _refused(self, exc: Exception, request: ChatRequest) -> Exception: ...

    def compact(self, request: ChatRequest, instructions: str) -> Compacted:
        """Compaction with ``compaction.engine: provider``: the window that stands for the
        conversation ``request`` would send from now on (kept as one block, sent first on the
        child's requests), then the readable summary asked as rollchat's prefixed summary
        request is (``request``, ``instructions`` as the last user message: a cache read). Not
        in one request: the server prunes the context before it answers, so a summary asked in
        the compacting request would be written from the compacted window."""
        window, compacting_usage = self._window(request)
        summary, writing = self._summary(replace(
            request, messages=(*request.messages, Message("user", instructions))))
        return Compacted(summary, window, compacting_usage + writing)

    def _window(self, request: ChatRequest) -> tuple[ProviderBlock, Usage]:
        """``context_management`` on the chat's own request where it is sent (the same
        instructions, tools and input: a cache read, where ``responses.compact``, which takes no
        tools, reads none of it); ``responses.compact`` elsewhere, and when that answer held no
        compaction item (the server did not compact it)."""
        usage = Usage()
        if is_official(self._base_url) if self.in_response is None else self.in_response:
            items, usage = self._compacted_in_response(request)
            if items:
                return window_block(items), usage
        block, compacted = self._compacted_apart(request)
        return block, usage + compacted

    def _compacted_in_response(self, request: ChatRequest,
                               ) -> tuple[list[dict[str, Any]], Usage]:
        """The compaction items of the chat's request sent with ``context_management`` (its
        answer, cut short, is not kept) and what the request was billed."""
        items: list[dict[str, Any]] = []
        usage = Usage()
        for event in self.stream(compacting(request)):
            if isinstance(event, ProviderBlock) and event.type == "compaction":
                items.append(json.loads(event.data))
            elif isinstance(event, UsageEvent):
                usage = usage + event.usage
        return items, usage

    def _compacted_apart(self, request: ChatRequest) -> tuple[ProviderBlock, Usage]:
        params = self._params(request)
        try:
            raw = self._sdk_client().responses.with_raw_response.compact(
                model=params["model"], input=params["input"],
                **{k: params[k] for k in ("instructions", "prompt_cache_key") if k in params})
            # the items as the server sent them: the SDK's models serialized back warn (an
            # input message typed as an output one) and may not give back what came
            items = list(json.loads(raw.http_response.text).get("output") or [])
            usage = usage_from(raw.parse().usage)
        except ProviderError:
            raise
        except Exception as exc:
            raise self._down(map_sdk_error(self._refused(exc, request), self._api_key)) \
                from None
        return window_block(items), usage

    def _summary(self, request: ChatRequest) -> tuple[str, Usage]:
        text: list[str] = []
        usage = Usage()
        for event in self.stream(request):
            if isinstance(event, TextDelta):
                text.append(event.text)
            elif isinstance(event, UsageEvent):
                usage = usage + event.usage
        return "".join(text), usage


def usage_from(usage: Any) -> Usage:
    """``input_tokens`` is the whole prompt; the cached part is in its details. Its
    ``cache_write_tokens`` are left in the input: OpenAI bills them as input, and the price
    table's OpenAI rows hold no write price (a write counted apart would cost nothing)."""
    details = getattr(usage, "input_tokens_details", None)
    cached = getattr(details, "cached_tokens", None) if details is not None else None
    return Usage(input_tokens=usage.input_tokens or 0, output_tokens=usage.output_tokens or 0,
                 cache_read_tokens=cached or 0)
