"""Anthropic Messages provider: the request (tools, prompt caching of the stable prefix) and
the parser of its raw stream events; on-demand compaction (providers/anthropic_compaction.py).
Streaming and error mapping are in providers/sdk.py.
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar

from rollchat.domain import Image, Message, ProviderBlock, ThinkingSetting, Usage, interleaved
from rollchat.providers.anthropic_compaction import (
    CLEAR_TOOL_USES,
    COMPACT_BETA,
    CompactionParser,
    MessagesStream,
    SignedBlockRefused,
    betas,
    compaction_error,
    signed_blocks,
    usage_of,
    without_signed,
)
from rollchat.providers.base import (
    ChatRequest,
    ProviderError,
    StreamEvent,
    TextDelta,
    ThinkingDelta,
    ToolCallEvent,
    ToolSpec,
)
from rollchat.providers.compacting import Compacted
from rollchat.providers.content import all_sendable, b64, sendable
from rollchat.providers.fitting import create_fitted
from rollchat.providers.lanes import traced_http_client
from rollchat.providers.names import ANTHROPIC, SDK_MODULES
from rollchat.providers.sdk import (
    PartialCall,
    SDKProvider,
    SDKStream,
    StreamParser,
    effort_for,
)
from rollchat.providers.window_probe import StatedWindow

_CACHE = {"type": "ephemeral"}
# The thinking blocks of an answer, sent back complete and unmodified before its tool_use
# blocks (the API refuses a tool-use turn whose thinking is missing or altered).
THINKING_BLOCKS = ("thinking", "redacted_thinking")
# Models with adaptive thinking (Claude decides when and how much to think); the Anthropic
# docs' adaptive-thinking page lists them.
ADAPTIVE = ("claude-opus-4-6", "claude-sonnet-4-6", "claude-opus-4-7", "claude-opus-5",
            "claude-sonnet-5", "claude-haiku-5", "claude-mythos", "claude-fable")
# What ``thinking off`` can be on the models that refuse ``{"type": "disabled"}`` (HTTP 400):
# - always on (platform.claude.com, "What's new in Claude Opus 5.5": "Thinking can't be
#   disabled", the same on Claude Fable 5.1; Mythos Preview has no opt-out, and Fable 5 /
#   Mythos 5 are the same class): adaptive thinking at the lowest effort, which the docs give
#   as the way to "lower effort where you previously disabled thinking";
# - ``between_tools`` ("What's new in Claude Sonnet 5.5": "send thinking: {type:
#   between_tools} instead of disabled", the lowest setting on that model).
ALWAYS_ON = ("claude-opus-5-5", "claude-fable", "claude-mythos")
BETWEEN_TOOLS = ("claude-sonnet-5-5",)
LOWEST_EFFORT = "low"
# The models that think when a request sends no ``thinking`` (the Claude 5 family's "adaptive
# thinking is on by default", Opus 5.5 / Fable / Mythos always on: their model pages and
# "What's new" pages, stored 2026-12). Their default ``display`` is "omitted" (the Claude Sonnet
# 5.5 migration guide's table: "default display: omitted"; Opus 4.7 likewise): the thinking
# blocks come back with empty text and only a signature, so nothing would show between tool
# calls. rollchat asks for it to be shown (SHOWN) whenever the model thinks.
THINKS_BY_DEFAULT = ("claude-sonnet-5", "claude-opus-5", "claude-fable", "claude-mythos")
# ``thinking.display`` (anthropic SDK ThinkingConfigAdaptiveParam / ThinkingConfigEnabledParam:
# "summarized" returns the thinking normally, "omitted" redacts it but keeps the signature;
# platform.claude.com "Controlling thinking display"): sent with every adaptive or enabled
# thinking rollchat asks for, so a model's thinking streams dim like any other.
SHOWN = "summarized"
DEFAULT_BUDGET = 8192  # ``thinking on`` on a model with budgets only
MODELS_SECONDS = 10.0  # the models endpoint's answer (asked in the background)


class AnthropicProvider(SDKProvider):
    """The Messages API, streamed as raw events (``messages.create(stream=True)``)."""

    name = ANTHROPIC
    sdk = SDK_MODULES[ANTHROPIC]

    def __init__(self, model: str, *, api_key: str | None, base_url: str | None,
                 timeout: float, images: bool | None = None, hygiene: str = "rollchat") -> None:
        super().__init__(model, api_key=api_key, base_url=base_url, timeout=timeout,
                         images=images)
        self.hygiene = hygiene  # provider: the server clears old tool uses (context editing)
        self.dropped: set[str] = set()  # signed blocks the server refused: never sent again

    def _make_client(self, sdk: Any) -> Any:
        return sdk.Anthropic(api_key=self._api_key, base_url=self._base_url,
                             default_query=self._query, timeout=self._timeout, max_retries=0,
                             http_client=traced_http_client(sdk, self.lane.limit))

    def _open(self, client: Any, request: ChatRequest) -> SDKStream:
        images = True if self.images is None else self.images
        request = without_signed(request, self.dropped)
        params = request_params(request, images=images)
        needed = betas(request, self.hygiene)
        if not needed:
            stream: SDKStream = create_fitted(client.messages.create, params, request.model,
                                              server=self._base_url)
            return stream
        if self.hygiene == "provider":
            params["context_management"] = {"edits": [dict(CLEAR_TOOL_USES)]}
        try:
            beta_stream: SDKStream = create_fitted(client.beta.messages.create,
                                                   {**params, "betas": needed}, request.model,
                                                   server=self._base_url)
        except Exception as exc:
            raise self._refused(exc, request) from None
        return beta_stream

    def stated_window(self, model: str) -> StatedWindow | None:
        """The window Anthropic's models endpoint states for ``model`` (``GET
        /v1/models/{id}``: ``max_input_tokens`` of the SDK's ModelInfo, in recent API
        versions); None when it states none or does not know the model (HTTP 404). Raises
        when the server cannot be reached."""
        client = self._sdk_client().with_options(timeout=MODELS_SECONDS, max_retries=0)
        sdk = importlib.import_module(self.sdk)
        try:
            info = client.models.retrieve(model)
        except sdk.APIStatusError:  # unknown model, a proxy without the endpoint ...
            return None
        tokens = getattr(info, "max_input_tokens", None)
        if not isinstance(tokens, int) or isinstance(tokens, bool) or tokens <= 0:
            return None
        return StatedWindow(tokens, "server", "/v1/models max_input_tokens")

    def _refused(self, exc: Exception, request: ChatRequest) -> Exception:
        """A compaction error for a request that sends a signed block back: the block is
        dropped for good and the request may be sent again at once (SignedBlockRefused)."""
        error = compaction_error(exc, self._api_key)
        blocks = request.messages[0].extra if request.messages else ()
        if getattr(error, "code", None) is None or not blocks:
            return exc
        self.dropped.update(b.data for b in blocks)
        return SignedBlockRefused(f"{error}; it is dropped: rollchat's readable summary is "
                                  "sent instead", code=getattr(error, "code", None),
                                  retry_after=0.0)

    def compact(self, request: ChatRequest, instructions: str) -> Compacted:
        """On-demand compaction of ``request`` (the chat's next request, same prefix) with
        ``instructions`` in place of the server's prompt; raises CompactionFailed (the
        server's compaction errors, no summary) or another ProviderError."""
        images = True if self.images is None else self.images
        params = request_params(replace(request, purpose="summary"), images=images,
                                instruction=False)
        params["compaction"] = {"type": "summarize", "instructions": instructions}
        parser = CompactionParser()
        try:
            items = create_fitted(self._sdk_client().beta.messages.create,
                                  {**params, "betas": [COMPACT_BETA]}, request.model,
                                  server=self._base_url)
            try:
                for item in items:
                    parser.feed(item)
                list(parser.finish())  # a stream cut before its end is an error
            finally:
                items.close()
        except ProviderError:
            raise
        except Exception as exc:
            raise self._down(compaction_error(exc, self._api_key)) from None
        return parser.result()

    def _parser(self) -> StreamParser:
        return _MessagesParser()


def request_params(request: ChatRequest, *, images: bool = True,
                   instruction: bool = True) -> dict[str, Any]:
    """The keyword arguments of ``messages.create`` for ``request`` (``images`` False: each
    image is sent as a line of text saying it is not shown). A summary request (``purpose``
    summary; ``instruction`` False: a compaction request, whose instruction is a parameter)
    marks the end of what the chat's last request sent: read from the cache, nothing written
    (the answer after it and the instruction are never sent again)."""
    messages = all_sendable(request.messages, images, ANTHROPIC)
    chat_end = (None if request.purpose != "summary"
                else _chat_end(messages, len(messages) - 1 if instruction else len(messages)))
    params: dict[str, Any] = {"model": request.model, "max_tokens": request.max_output_tokens,
                              "messages": message_params(messages,
                                                         request.cache_prefix_messages,
                                                         cache_last=request.purpose == "chat",
                                                         cache_at=chat_end),
                              "stream": True}
    if request.system:
        params["system"] = [{"type": "text", "text": request.system, "cache_control": _CACHE}]
    thinking = thinking_params(request.model, request.thinking, request.max_output_tokens)
    params.update(thinking)
    if request.temperature is not None and not _thinks(thinking):
        # anthropic 2.x dropped the keyword; the API reads it (not with thinking: refused)
        params["extra_body"] = {"temperature": request.temperature}
    if request.tools:
        params["tools"] = [tool_param(t) for t in request.tools]
    return params


def _adaptive(model: str, names: tuple[str, ...]) -> bool:
    return any(model.startswith(n) or f"/{n}" in model or f".{n}" in model for n in names)


def thinking_params(model: str, setting: ThinkingSetting, max_tokens: int) -> dict[str, Any]:
    """The request's ``thinking`` (and ``output_config``, ``max_tokens``) for ``setting``:
    the model's default (None): nothing, except on a model that thinks by default, where it
    is spelled out (adaptive) to ask for the thinking to be shown; "on": adaptive where the
    model has it, else a budget; a budget: ``enabled`` with it (max_tokens raised above it: the
    API wants budget_tokens < max_tokens), or on an adaptive model the effort nearest it;
    "off": ``disabled``, or what the model takes instead (see ``off_note``). Thinking asked for
    (adaptive, enabled) carries ``display: summarized`` (SHOWN)."""
    if setting is None:
        return _shown({"thinking": {"type": "adaptive"}}) if _adaptive(
            model, THINKS_BY_DEFAULT) else {}
    adaptive = _adaptive(model, ADAPTIVE)
    if setting == "off":
        if _adaptive(model, ALWAYS_ON):
            return _shown({"thinking": {"type": "adaptive"},
                           "output_config": {"effort": LOWEST_EFFORT}})
        return {"thinking": {"type": "between_tools" if _adaptive(model, BETWEEN_TOOLS)
                             else "disabled"}}
    if setting == "on" and adaptive:
        return _shown({"thinking": {"type": "adaptive"}})
    budget = DEFAULT_BUDGET if setting == "on" else int(setting)
    if adaptive:  # budgets are deprecated there (refused by the adaptive-only ones)
        return _shown({"thinking": {"type": "adaptive"},
                       "output_config": {"effort": effort_for(budget)}})
    out: dict[str, Any] = _shown({"thinking": {"type": "enabled", "budget_tokens": budget}})
    if budget >= max_tokens:
        out["max_tokens"] = budget + max_tokens
    return out


def _shown(params: dict[str, Any]) -> dict[str, Any]:
    """``params`` with its thinking shown (``display``: SHOWN)."""
    params["thinking"]["display"] = SHOWN
    return params


def off_note(model: str) -> str | None:
    """What ``thinking off`` does on ``model`` when it is not what it says (None: it is)."""
    if _adaptive(model, ALWAYS_ON):
        return (f"{model} cannot turn thinking off (its documentation: always on): it thinks "
                f"adaptively at the lowest effort ({LOWEST_EFFORT}) instead")
    if _adaptive(model, BETWEEN_TOOLS):
        return (f"{model} turns off only the thinking before its answer (between_tools, its "
                "lowest setting): it may still think between tool calls")
    return None


def _thinks(params: Mapping[str, Any]) -> bool:
    return str((params.get("thinking") or {}).get("type")) in ("enabled", "adaptive")


def _chat_end(messages: Sequence[Message], before: int) -> int | None:
    """The last message before ``before`` that is not the model's: where the chat's last
    request ended (and its cache breakpoint sat)."""
    return next((i for i in range(before - 1, -1, -1) if messages[i].role != "assistant"),
                None)


def tool_param(spec: ToolSpec) -> dict[str, Any]:
    schema = dict(spec.parameters) or {"type": "object", "properties": {}}
    return {"name": spec.name, "description": spec.description, "input_schema": schema}


def _image(image: Image) -> dict[str, Any]:
    return {"type": "image", "source": {"type": "base64", "media_type": image.media_type,
                                        "data": b64(image)}}


def _blocks(message: Message) -> list[dict[str, Any]]:
    message = sendable(message, images=True)
    if message.role == "tool":
        content: Any = message.content
        if message.images:  # text and images in the result itself, in the tool's order
            content = [_image(p) if isinstance(p, Image) else {"type": "text", "text": p}
                       for p in interleaved(message.content, message.images)]
        result = {"type": "tool_result", "tool_use_id": message.tool_call_id or "",
                  "content": content}
        return [{**result, "is_error": True} if message.is_error else result]
    blocks: list[dict[str, Any]] = [_image(i) for i in message.images]  # images first
    blocks += thinking_of(message)
    if message.content:  # the API refuses empty text blocks
        blocks.append({"type": "text", "text": message.content})
    blocks += [{"type": "tool_use", "id": c.id, "name": c.name, "input": dict(c.arguments)}
               for c in message.tool_calls]
    return blocks


def thinking_of(message: Message) -> list[dict[str, Any]]:
    """An assistant message's thinking blocks as the server sent them (thinking with its
    signature, redacted_thinking with its data), first in the message: before its text and
    its tool_use blocks, as the answer had them."""
    if message.role != "assistant":
        return []
    return [json.loads(b.data) for b in message.extra
            if b.provider == ANTHROPIC and b.type in THINKING_BLOCKS]


def message_params(messages: Sequence[Message], cache_prefix: int = 0, *,
                   cache_last: bool = False,
                   cache_at: int | None = None) -> list[dict[str, Any]]:
    """Our messages as alternating user/assistant messages.

    Tool results become user ``tool_result`` blocks; consecutive same-role messages merge;
    messages with no content are dropped. The last block of message ``cache_prefix - 1``
    carries a ``cache_control`` breakpoint (the end of the stable prefix); with
    ``cache_last`` so does the last block of all: a chat request starts with the whole
    previous one, so the next request reads this one from the cache (with the system
    prompt's, three of the four breakpoints the API allows). ``cache_at`` (a summary
    request): that message carries it instead, so the conversation is read from the cache
    the chat's requests wrote. A signed compaction block
    on the first message goes first, as the assistant message the server returned it in.
    """
    out: list[dict[str, Any]] = []
    signed = signed_blocks(messages)
    if signed:
        out.append({"role": "assistant", "content": signed})
    marks = {cache_prefix - 1, *([] if cache_at is None else [cache_at])}
    for index, message in enumerate(messages):
        blocks = _blocks(message)
        if not blocks:
            continue
        if index in marks:
            blocks[-1] = {**blocks[-1], "cache_control": _CACHE}
        role = "assistant" if message.role == "assistant" else "user"
        if out and out[-1]["role"] == role:
            out[-1]["content"].extend(blocks)
        else:
            out.append({"role": role, "content": blocks})
    if cache_last and out:
        out[-1]["content"][-1] = {**out[-1]["content"][-1], "cache_control": _CACHE}
    return out


class _MessagesParser(MessagesStream):
    """Raw Messages stream events: text and tool-use blocks, usage split over message_start
    and message_delta; the answer is finished at message_stop."""

    stop_reasons: ClassVar[Mapping[str, str]] = {
        "end_turn": "end", "tool_use": "tool_use", "max_tokens": "max_tokens",
        "stop_sequence": "end", "refusal": "refusal", "pause_turn": "pause_turn",
        "model_context_window_exceeded": "max_tokens"}

    def __init__(self) -> None:
        super().__init__()
        self.calls: dict[int, PartialCall] = {}
        self.thoughts: dict[int, _Thought] = {}  # thinking blocks in flight, by index

    def content(self, kind: str | None, item: Any) -> Iterator[StreamEvent]:
        if kind == "content_block_start":
            yield from self._start(item.index, item.content_block)
        elif kind == "content_block_delta":
            yield from self._delta(item.index, item.delta)
        elif kind == "content_block_stop" and item.index in self.calls:
            yield ToolCallEvent(self.calls.pop(item.index).build())
        elif kind == "content_block_stop" and item.index in self.thoughts:
            yield self.thoughts.pop(item.index).block()

    def _start(self, index: int, block: Any) -> Iterator[StreamEvent]:
        kind = getattr(block, "type", None)
        if kind == "tool_use":
            initial = block.input if isinstance(block.input, dict) else {}
            self.calls[index] = PartialCall(block.id, block.name, initial)
        elif kind == "thinking":
            said = getattr(block, "thinking", "") or ""
            self.thoughts[index] = _Thought([said], [getattr(block, "signature", "") or ""])
            if said:
                yield ThinkingDelta(said)
        elif kind == "redacted_thinking":
            self.thoughts[index] = _Thought(data=getattr(block, "data", "") or "")

    def _delta(self, index: int, delta: Any) -> Iterator[StreamEvent]:
        if delta.type == "text_delta" and delta.text:
            yield TextDelta(delta.text)
        elif delta.type == "input_json_delta" and index in self.calls:
            self.calls[index].fragments.append(delta.partial_json)
        elif delta.type == "thinking_delta" and index in self.thoughts:
            self.thoughts[index].text.append(delta.thinking)
            if delta.thinking:
                yield ThinkingDelta(delta.thinking)
        elif delta.type == "signature_delta" and index in self.thoughts:
            self.thoughts[index].signature.append(delta.signature)

    def usage(self) -> Usage | None:
        return usage_of(self.counts) if self.counts else None


@dataclass
class _Thought:
    """A thinking block as it streams (its text and signature in pieces), or a redacted one
    (``data``): complete at its content_block_stop, kept as the server sent it."""

    text: list[str] = field(default_factory=list)
    signature: list[str] = field(default_factory=list)
    data: str | None = None

    def block(self) -> ProviderBlock:
        if self.data is not None:
            value = {"type": "redacted_thinking", "data": self.data}
        else:
            value = {"type": "thinking", "thinking": "".join(self.text),
                     "signature": "".join(self.signature)}
        return ProviderBlock(ANTHROPIC, str(value["type"]),
                             json.dumps(value, ensure_ascii=False, separators=(",", ":")))
