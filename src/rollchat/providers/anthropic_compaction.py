"""Anthropic's server-side compaction and context editing (betas): the on-demand compaction
request (``compaction: summarize`` with rollchat's instructions), its streamed block read back,
the signed block sent first on later requests, the compaction errors; old tool uses cleared."""

from __future__ import annotations

import json
from abc import abstractmethod
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import replace
from typing import Any, ClassVar

from rollchat.domain import Message, ProviderBlock, Usage
from rollchat.providers.base import ChatRequest, ProviderError, StreamEvent
from rollchat.providers.compacting import TRANSIENT_CODES, Compacted, CompactionFailed
from rollchat.providers.names import ANTHROPIC
from rollchat.providers.sdk import StreamParser, map_sdk_error, scrub

COMPACT_BETA = "compact-2026-09-04"  # on-demand compaction, and any request with its block
CONTEXT_EDITING_BETA = "context-management-2025-06-27"
COMPACTION = "compaction"  # the block's type, and the stop reason of a compaction response
# hygiene: provider. The oldest tool uses are cleared once the prompt passes the trigger,
# keeping the last few, and only when enough goes to be worth the cache it invalidates.
CLEAR_TOOL_USES: Mapping[str, Any] = {
    "type": "clear_tool_uses_20250919",
    "trigger": {"type": "input_tokens", "value": 100_000},
    "keep": {"type": "tool_uses", "value": 3},
    "clear_at_least": {"type": "input_tokens", "value": 5_000},
}


def signed_blocks(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """The compaction blocks the first message carries (``extra``), as the server sent them:
    they go first in ``messages``, in place of the conversation they summarize."""
    if not messages:
        return []
    return [value for b in messages[0].extra if b.provider == ANTHROPIC and b.type == COMPACTION
            and isinstance(value := _loaded(b.data), dict) and value.get("type") == COMPACTION]


def _loaded(data: str) -> Any:
    """A kept block's JSON (from a file a person may have changed): None when it is not."""
    try:
        return json.loads(data)
    except (ValueError, RecursionError):
        return None


class SignedBlockRefused(CompactionFailed):
    """The server refused the signed compaction block sent back (its signature, its content,
    its place): the provider drops it, so the request sent again (retryable, at once) starts
    with rollchat's readable summary, which the restoration message holds anyway."""

    retryable = True
    label = "the server refused the signed compaction block"


def without_signed(request: ChatRequest, dropped: set[str]) -> ChatRequest:
    """``request`` without the signed blocks whose data is in ``dropped``."""
    first = request.messages[0] if request.messages else None
    if first is None or not any(b.data in dropped for b in first.extra):
        return request
    kept = tuple(b for b in first.extra if b.data not in dropped)
    return replace(request, messages=(replace(first, extra=kept), *request.messages[1:]))


def betas(request: ChatRequest, hygiene: str) -> list[str]:
    """The beta headers a chat request needs: the compaction beta while its signed block is
    sent, context editing with ``hygiene: provider``."""
    names = [COMPACT_BETA] if signed_blocks(request.messages) else []
    return names + ([CONTEXT_EDITING_BETA] if hygiene == "provider" else [])


def compaction_error(exc: Exception, secret: str | None) -> ProviderError:
    """An SDK error of a compaction request: the server's compaction errors (an
    ``error.details.error_code`` starting with compaction_) as CompactionFailed, the rest as
    any provider error."""
    code = getattr(exc, "error_code", None)
    body = getattr(exc, "body", None)
    if code is None and isinstance(body, Mapping):  # an error event inside the stream
        details = (body.get("error") or {}).get("details") if isinstance(
            body.get("error"), Mapping) else None
        code = details.get("error_code") if isinstance(details, Mapping) else None
    error = map_sdk_error(exc, secret)
    if isinstance(code, str) and code.startswith("compaction_"):
        kind = TRANSIENT_CODES.get(code, CompactionFailed)
        return kind(f"{code}: {scrub(str(error), secret)}", code=code,
                    retry_after=error.retry_after)
    return error


class MessagesStream(StreamParser):
    """Anthropic's Messages event stream as every parser of it reads the envelope (written
    once: the answer's parser in anthropic.py, the compaction's here): the usage of
    message_start and message_delta, the stop reason, the end at message_stop; ``content``
    reads the content block events."""

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}
        self.stop: str | None = None
        self.stopped = False

    def feed(self, item: Any) -> Iterator[StreamEvent]:
        kind = getattr(item, "type", None)
        if kind == "message_start":
            self._take_usage(getattr(item.message, "usage", None))
        elif kind == "message_delta":
            self.stop = item.delta.stop_reason or self.stop
            self._take_usage(getattr(item, "usage", None))
        elif kind == "message_stop":
            self.stopped = True
        else:
            return self.content(kind, item)
        return iter(())

    @abstractmethod
    def content(self, kind: str | None, item: Any) -> Iterator[StreamEvent]:
        """The events a content block event (start, delta, stop) completes."""

    def stop_reason(self) -> str | None:
        return self.stop if self.stopped else None

    def _take_usage(self, usage: Any) -> None:
        take_counts(self.counts, usage)


class CompactionParser(MessagesStream):
    """The raw stream of a compaction response: one ``compaction`` block (its signature with
    the block's start, its content in ``compaction_delta``s: each carries the content so far,
    as the SDK's accumulator reads them), stop reason ``compaction``, and the usage, whose
    compaction iterations are billed apart from the top-level figures."""

    stop_reasons: ClassVar[Mapping[str, str]] = {COMPACTION: COMPACTION}

    def __init__(self) -> None:
        super().__init__()
        self.block: dict[str, Any] | None = None
        self.index: int | None = None
        self.iterations: list[Mapping[str, Any]] = []

    def content(self, kind: str | None, item: Any) -> Iterator[StreamEvent]:
        if kind == "content_block_start" and item.content_block.type == COMPACTION:
            self.index = item.index
            self.block = item.content_block.model_dump(mode="json", exclude_none=True)
        elif kind == "content_block_delta" and item.index == self.index and self.block:
            delta = item.delta
            if delta.type == "compaction_delta":
                for key in ("content", "encrypted_content"):
                    if getattr(delta, key, None) is not None:
                        self.block[key] = getattr(delta, key)
            elif delta.type == "signature_delta":
                self.block["signature"] = delta.signature
        return iter(())

    def usage(self) -> Usage | None:
        """Billed: the top-level figures plus every compaction iteration's."""
        total = usage_of(self.counts)
        for entry in self.iterations:
            if entry.get("type") == COMPACTION:
                total += usage_of(entry)
        return total

    def result(self) -> Compacted:
        """The block read, or CompactionFailed: no block, no summary in it (the server sends
        null content when its summary failed), or another stop reason."""
        block, stop = self.block, self.stop_reason()
        if stop != COMPACTION or block is None or not str(block.get("content") or "").strip():
            missing = ", no compaction block" if block is None else ""
            raise CompactionFailed(f"the server returned no summary (stop reason "
                                   f"{stop or 'none'}{missing})")
        data = json.dumps(block, ensure_ascii=False, separators=(",", ":"))
        return Compacted(str(block["content"]), ProviderBlock(ANTHROPIC, COMPACTION, data),
                         self.usage() or Usage())

    def _take_usage(self, usage: Any) -> None:
        if usage is None:
            return
        super()._take_usage(usage)
        iterations = getattr(usage, "iterations", None)
        if iterations:
            self.iterations = [i.model_dump() if hasattr(i, "model_dump") else dict(i)
                               for i in iterations]


def take_counts(counts: dict[str, int], usage: Any) -> None:
    """The Messages API's token figures of ``usage`` (message_start's, or message_delta's
    running totals) into ``counts``, each the latest reported."""
    for key in ("input_tokens", "output_tokens", "cache_read_input_tokens",
                "cache_creation_input_tokens"):
        value = getattr(usage, key, None)
        if isinstance(value, int):
            counts[key] = value


def usage_of(counts: Mapping[str, Any]) -> Usage:
    """rollchat's Usage of the Messages API's figures: the prompt size counts the cache reads
    and writes too."""
    read = int(counts.get("cache_read_input_tokens") or 0)
    write = int(counts.get("cache_creation_input_tokens") or 0)
    return Usage(input_tokens=int(counts.get("input_tokens") or 0) + read + write,
                 output_tokens=int(counts.get("output_tokens") or 0),
                 cache_read_tokens=read, cache_write_tokens=write)
