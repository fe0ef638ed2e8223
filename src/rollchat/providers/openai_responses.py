"""OpenAI's Responses API (``provider: openai-responses``): the request as input items, the
parser of its streamed events (reasoning and compaction items kept as provider blocks).
Compaction: openai_responses_compaction.py; streaming and error mapping: providers/sdk.py.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence, Set
from typing import Any, ClassVar

from rollchat.domain import Image, Message, ProviderBlock, interleaved
from rollchat.providers.base import (
    BadRequestError,
    ChatRequest,
    ContextTooLongError,
    ProviderError,
    RateLimitError,
    ServerError,
    StreamEvent,
    TextDelta,
    ThinkingDelta,
    ToolSpec,
)
from rollchat.providers.content import all_sendable, b64
from rollchat.providers.context_errors import is_context_error, stated_limit
from rollchat.providers.fitting import create_fitted
from rollchat.providers.model_params import reasoning_effort
from rollchat.providers.names import (
    OPENAI_RESPONSES,
    SDK_MODULES,
    is_official,
    is_reasoning_model,
)
from rollchat.providers.openai_responses_compaction import (
    WINDOW,
    CompactingResponses,
    context_management,
    usage_from,
)
from rollchat.providers.sdk import (
    HeldCallsParser,
    PartialCall,
    SDKStream,
    StreamParser,
    effort_for,
    map_sdk_error,
    scrub,
)

_NO_KEY = "not-needed"  # a local Responses server ignores the key, the SDK wants one
# The output items kept and sent back as they came: reasoning (its encrypted content is the
# model's chain of thought, which only this API carries from one call to the next) and the
# compaction item of server-side compaction. Messages and calls are rebuilt from the turn.
KEPT_ITEMS = ("reasoning", "compaction")
ENCRYPTED_REASONING = "reasoning.encrypted_content"
# The ids of a reply's message and function_call items (a provider block of this type: JSON
# {"message": id, "calls": {call_id: id}}): sent back on those items, so a reasoning item
# kept with its id is followed by the very item that followed it ("Item 'rs_...' of type
# 'reasoning' was provided without its required following item" otherwise).
ITEM_IDS = "ids"
INVALID_ENCRYPTED = "invalid_encrypted_content"  # the code of an encrypted item refused


class KeptItemsRefused(ProviderError):
    """The server refused an encrypted item sent back; the provider dropped them all, so the
    request sent again (retryable, at once) goes without them."""

    retryable = True
    label = "the server refused the kept reasoning"


class ResponsesProvider(CompactingResponses):
    """The Responses API, streamed. ``store``: whether OpenAI keeps the responses (False by
    default: nothing is kept server-side; each request carries the whole conversation, the
    reasoning items in their encrypted form)."""

    name = OPENAI_RESPONSES
    sdk = SDK_MODULES[OPENAI_RESPONSES]

    def __init__(self, model: str, *, api_key: str | None, base_url: str | None,
                 timeout: float, images: bool | None = None, store: bool = False,
                 in_response: bool | None = None) -> None:
        super().__init__(model, api_key=api_key, base_url=base_url, timeout=timeout,
                         images=images)
        self.store = store
        self.in_response = in_response
        self.dropped: set[str] = set()  # kept blocks the server refused: never sent again

    def _make_client(self, sdk: Any) -> Any:
        return sdk.OpenAI(api_key=self._api_key or _NO_KEY, base_url=self._base_url,
                          default_query=self._query, timeout=self._timeout, max_retries=0)

    def _images(self) -> bool:
        return is_official(self._base_url) if self.images is None else self.images

    def _params(self, request: ChatRequest) -> dict[str, Any]:
        return request_params(request, images=self._images(), store=self.store,
                              dropped=self.dropped, official=is_official(self._base_url))

    def _open(self, client: Any, request: ChatRequest) -> SDKStream:
        try:
            stream: SDKStream = create_fitted(client.responses.create, self._params(request),
                                              request.model, server=self._base_url)
        except Exception as exc:
            raise self._refused(exc, request) from None
        return stream

    def _refused(self, exc: Exception, request: ChatRequest) -> Exception:
        """The server could not verify an encrypted item sent back ("The encrypted content
        ... could not be verified", code invalid_encrypted_content: after a change of key,
        organization or model; openai/codex#8119 and #8138 report chats stuck on it): every
        kept block of the request is dropped for good, and the request may be sent again at
        once without them (the conversation's text, the readable summary, stays)."""
        body = getattr(exc, "body", None)
        error = body.get("error", body) if isinstance(body, Mapping) else None
        code = error.get("code") if isinstance(error, Mapping) else None
        kept = [b.data for m in request.messages for b in m.extra
                if b.provider == OPENAI_RESPONSES and b.data not in self.dropped]
        if code != INVALID_ENCRYPTED or not kept:
            return exc
        self.dropped.update(kept)
        return KeptItemsRefused(f"{map_sdk_error(exc, self._api_key)}; the reasoning and "
                                "compaction items kept are dropped and the request sent "
                                "without them", retry_after=0.0)

    def _parser(self) -> StreamParser:
        return _EventsParser()


def request_params(request: ChatRequest, *, images: bool, store: bool = False,
                   dropped: Set[str] = frozenset(), official: bool = False) -> dict[str, Any]:
    """The keyword arguments of ``responses.create`` for ``request``: the system prompt as
    ``instructions``, the conversation as ``input`` items, ``store`` (and, when nothing is
    stored, the reasoning asked back in its encrypted form: the next request carries it).
    The chain's cache key goes as ``prompt_cache_key`` to OpenAI itself (``official``), as
    Chat Completions sends it: a local server of this API may refuse what it does not know."""
    params: dict[str, Any] = {"model": request.model, "stream": True, "store": store,
                              "input": input_items(request.messages, images=images,
                                                   store=store, dropped=dropped),
                              "max_output_tokens": request.max_output_tokens}
    if request.system:
        params["instructions"] = request.system
    if not store and is_reasoning_model(request.model):
        params["include"] = [ENCRYPTED_REASONING]
    if is_reasoning_model(request.model):
        # the reasoning's summary, shown as thinking (the model's own reasoning never is), and
        # the effort as Chat Completions sends it (model_params.reasoning_effort): "on" medium
        # (gpt-5.1 and later, gpt-5.4-mini the default among them, do not reason by default),
        # "off" the least the model takes, a budget the nearest effort (this API takes none)
        effort = reasoning_effort(request.model, request.thinking, effort_for)
        reasoning = {**({"summary": "auto"} if request.thinking != "off" else {}),
                     **({"effort": effort} if effort is not None else {})}
        if reasoning:
            params["reasoning"] = reasoning
    if request.temperature is not None:
        params["temperature"] = request.temperature
    if request.tools:
        params["tools"] = [tool_param(t) for t in request.tools]
    if official and request.cache_key:
        params["prompt_cache_key"] = request.cache_key
    managing = context_management(request)
    if managing is not None:  # a compaction's request (openai_responses_compaction.py)
        params["context_management"] = managing
    return params


def input_items(messages: Sequence[Message], *, images: bool, store: bool = False,
                dropped: Set[str] = frozenset()) -> list[dict[str, Any]]:
    """The conversation as input items. Each message's own provider blocks go first (a
    reply's reasoning before its text and calls; the compaction's items before the first
    message), then the message: a user message, an assistant message and its function
    calls, a function call's output."""
    items: list[dict[str, Any]] = []
    for message in all_sendable(messages, images):
        items += kept_items(message.extra, store, dropped)
        items += message_items(message, item_ids(message.extra))
    return items


def item_ids(blocks: Sequence[ProviderBlock]) -> dict[str, Any]:
    """The ids of a reply's message and function_call items (ITEM_IDS), {} when not kept."""
    for block in blocks:
        if block.provider == OPENAI_RESPONSES and block.type == ITEM_IDS:
            value = json.loads(block.data)
            return value if isinstance(value, dict) else {}
    return {}


def kept_items(blocks: Sequence[ProviderBlock], store: bool,
               dropped: Set[str] = frozenset()) -> list[dict[str, Any]]:
    """This API's blocks, as they came (a compacted window: its items in order). Another
    provider's are not sent (a session that changed provider), nor those the server refused
    (``dropped``). Without ``store`` a reasoning
    item without its encrypted content is left out: the server would look for it by id and
    refuse the request ("Items are not persisted when `store` is set to false")."""
    out: list[dict[str, Any]] = []
    for block in blocks:
        if block.provider != OPENAI_RESPONSES or block.data in dropped or block.type == ITEM_IDS:
            continue
        value = json.loads(block.data)
        for item in value if block.type == WINDOW else [value]:
            if not store and item.get("type") == "reasoning" and \
                    not item.get("encrypted_content"):
                continue
            out.append(item)
    return out


def message_items(message: Message, ids: Mapping[str, Any] | None = None,
                  ) -> list[dict[str, Any]]:
    """One message as input items; an assistant message's items with the ids the server gave
    them (``ids``: item_ids), as output items are sent back."""
    if message.role == "tool":
        output: str | list[dict[str, Any]] = message.content
        if message.images:  # a function's output may hold images (input_image parts), in
            output = [_image_part(p) if isinstance(p, Image) else  # the tool's order
                      {"type": "input_text", "text": p}
                      for p in interleaved(message.content, message.images)]
        return [{"type": "function_call_output", "call_id": message.tool_call_id or "",
                 "output": output}]
    if message.role == "user":
        if not message.images:
            return [{"role": "user", "content": message.content}]
        return [{"role": "user", "content": [
            *([{"type": "input_text", "text": message.content}] if message.content else []),
            *(_image_part(i) for i in message.images)]}]
    items: list[dict[str, Any]] = []
    ids = ids or {}
    mid, calls = ids.get("message"), ids.get("calls") or {}
    if message.content and isinstance(mid, str):
        items.append({"type": "message", "id": mid, "role": "assistant", "status": "completed",
                      "content": [{"type": "output_text", "text": message.content,
                                   "annotations": []}]})
    elif message.content:
        items.append({"role": "assistant", "content": message.content})
    for c in message.tool_calls:
        item = {"type": "function_call", "call_id": c.id, "name": c.name,
                "arguments": json.dumps(dict(c.arguments))}
        fid = calls.get(c.id) if isinstance(calls, dict) else None
        items.append({"type": "function_call", "id": fid, **item} if isinstance(fid, str)
                     else item)
    return items


def _image_part(image: Image) -> dict[str, Any]:
    return {"type": "input_image", "detail": "auto",
            "image_url": f"data:{image.media_type};base64,{b64(image)}"}


def tool_param(spec: ToolSpec) -> dict[str, Any]:
    parameters = dict(spec.parameters) or {"type": "object", "properties": {}}
    return {"type": "function", "name": spec.name, "description": spec.description,
            "parameters": parameters, "strict": False}


def item_json(item: Any) -> str:
    """An output item's JSON: every field the server set, each value as it came (the keys in
    the SDK's order: the SDK parses the stream before we see it). Kept byte for byte from
    here on, so every request that carries it sends the same bytes."""
    return json.dumps(item.to_dict(mode="json"), ensure_ascii=False, separators=(",", ":"))


class _EventsParser(HeldCallsParser):
    """The Responses stream: text deltas, function calls (their arguments in deltas, whole in
    ``output_item.done``; yielded at the end, in output order), reasoning and compaction items
    when done, usage and the end in ``response.completed`` / ``response.incomplete``; an
    ``error`` event or ``response.failed`` raises."""

    stop_reasons: ClassVar[Mapping[str, str]] = {
        "completed": "end", "calls": "tool_use", "max_output_tokens": "max_tokens"}

    def __init__(self) -> None:
        super().__init__()
        self.item_ids: dict[int, str] = {}  # the message and function_call items' ids
        self.message_id: str | None = None

    def feed(self, item: Any) -> Iterator[StreamEvent]:
        kind = getattr(item, "type", "")
        if kind in ("response.output_text.delta", "response.refusal.delta"):
            if item.delta:
                yield TextDelta(item.delta)
        elif kind in ("response.reasoning_summary_text.delta", "response.reasoning_text.delta"):
            if item.delta:  # a summary of the reasoning, or an open model's own: shown apart
                yield ThinkingDelta(item.delta)
        elif kind == "response.function_call_arguments.delta":
            self.calls.setdefault(item.output_index, PartialCall()).fragments.append(item.delta)
        elif kind in ("response.output_item.added", "response.output_item.done"):
            yield from self._item(item.output_index, item.item, kind.endswith("done"))
        elif kind in ("response.completed", "response.incomplete"):
            self._finish(item.response)
        elif kind == "response.failed":
            error = item.response.error
            raise failure(getattr(error, "code", None) or "", getattr(error, "message", "")
                          or "the response failed", getattr(error, "type", None) or "")
        elif kind == "error":
            raise failure(item.code or "", item.message or "", "")

    def _item(self, index: int, item: Any, done: bool) -> Iterator[StreamEvent]:
        kind = getattr(item, "type", "")
        if done and kind == "message" and self.message_id is None:
            self.message_id = getattr(item, "id", None)
        if kind == "function_call":
            if getattr(item, "id", None):
                self.item_ids[index] = item.id
            call = self.calls.setdefault(index, PartialCall())
            call.id, call.name = item.call_id or call.id, item.name or call.name
            if done and item.arguments:  # the whole arguments: they replace the deltas
                call.fragments = [item.arguments]
        elif done and kind in KEPT_ITEMS:
            yield ProviderBlock(OPENAI_RESPONSES, kind, item_json(item))

    def _finish(self, response: Any) -> None:
        if response.usage is not None:
            self.last_usage = usage_from(response.usage)
        details = getattr(response, "incomplete_details", None)
        if response.status == "incomplete":
            self.finished = getattr(details, "reason", None) or "incomplete"
        else:
            self.finished = "calls" if self.calls else "completed"

    def held_calls(self) -> Iterator[StreamEvent]:
        """The ids of the items (ITEM_IDS, when the server gave any), then the calls."""
        calls = {self.calls[i].id: self.item_ids[i] for i in self.calls if i in self.item_ids}
        if self.message_id or calls:
            ids = {**({"message": self.message_id} if self.message_id else {}),
                   **({"calls": calls} if calls else {})}
            yield ProviderBlock(OPENAI_RESPONSES, ITEM_IDS,
                                json.dumps(ids, ensure_ascii=False, separators=(",", ":")))
        yield from super().held_calls()


def failure(code: str, message: str, kind: str) -> ProviderError:
    """The error an ``error`` event or a failed response stands for."""
    text = scrub(message, None)
    if is_context_error(code, message, kind):
        return ContextTooLongError(text, limit=stated_limit(message))
    if code == "rate_limit_exceeded":
        return RateLimitError(text)
    if code.startswith("invalid") or kind == "invalid_request_error":
        return BadRequestError(text)
    return ServerError(text)
