"""Server-side compaction as a provider offers it (``compaction.engine: provider``): the
protocol a provider implements, the summary it returns beside its signed block, its error."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from rollchat.domain import ProviderBlock, Usage
from rollchat.providers.base import ChatRequest, ProviderError, StreamEvent


@dataclass(frozen=True)
class Compacted:
    """What a server compaction returned: ``content``, the readable summary it wrote;
    ``block``, the block to send back first on the next request, byte for byte (signed);
    ``usage``, what the compaction was billed (the compaction iterations included)."""

    content: str
    block: ProviderBlock
    usage: Usage


class CompactionFailed(ProviderError):
    """The server did not compact: an error of its own (``code``: e.g. compaction_unavailable,
    compaction_signature_invalid), no summary in the block, or a model without the feature.
    rollchat then writes its own summary."""

    label = "server compaction failed"

    def __init__(self, message: str, *, code: str | None = None,
                 retry_after: float | None = None) -> None:
        super().__init__(message, retry_after=retry_after)
        self.code = code


class CompactionUnavailable(CompactionFailed):
    """The server could not compact for a transient reason (``compaction_unavailable``: the
    SDK's CompactionUnavailableError, an OverloadedError, says "Retry the request"): retried
    as any request is."""

    retryable = True
    label = "server compaction unavailable"


TRANSIENT_CODES = {"compaction_unavailable": CompactionUnavailable}


@runtime_checkable
class CompactingProvider(Protocol):
    """A provider with on-demand server-side compaction. ``compact`` sends ``request`` (the
    chat's next request: same system prompt, tools and messages, so its prefix is a cache
    read) asking the server to summarize it following ``instructions``; raises
    CompactionFailed (or another ProviderError) when no summary came back."""

    name: str

    def stream(self, request: ChatRequest) -> Iterator[StreamEvent]: ...

    def compact(self, request: ChatRequest, instructions: str) -> Compacted: ...
