"""The summary written by the provider's own compaction (``compaction.engine: provider``): asked
with the chat's request as prefix and rollchat's instructions, read back as rollchat's summary,
its signed block kept; and whether a summary's signed block is still sent in its place."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, replace

from rollchat.compaction.prefixed import instruction
from rollchat.compaction.request import (
    SummaryError,
    carried_words,
    parse_summary_reply,
    reply_tokens,
)
from rollchat.domain import ProviderBlock, Summary, Usage
from rollchat.providers.base import ChatRequest, ProviderError, RetryPolicy
from rollchat.providers.compacting import CompactingProvider
from rollchat.storage.transcript import SUMMARY_END, SUMMARY_START, summary_digest
from rollchat.text.normalize import clean

_RETRY = RetryPolicy()


def server_instructions(parent: Summary | None, focus: str | None, max_words: int) -> str:
    """rollchat's summary instruction, given as the server's summarization prompt (it
    replaces the server's own): the same words a prefixed summary request ends with."""
    return instruction(parent, focus, max_words)


@dataclass(frozen=True)
class ServerOutcome:
    """The provider's summary (None when it failed: ``reason`` says why) and what its
    compaction was billed (also when the summary it returned could not be used)."""

    summary: Summary | None
    usage: Usage
    reason: str | None = None


def server_summary(provider: CompactingProvider, prefix: ChatRequest, *,
                   parent: Summary | None, focus: str | None, max_words: int,
                   max_output_tokens: int, fill: Callable[[], Summary] | None = None,
                   retry: RetryPolicy = _RETRY,
                   sleep: Callable[[float], None] = time.sleep) -> ServerOutcome:
    """The provider's compaction of ``prefix`` (the chat's next request without a new
    message) as a summary carrying the signed block. A transient error (the server's
    compaction_unavailable, 429, 529, 5xx) is retried as any request is (``retry``). A
    summary not in rollchat's structure is kept, with the structure filled in locally
    (``fill``: rollchat's local summary, whose sections go with the server's text as the
    background). Any other failure is an outcome with a reason: the caller falls back to
    rollchat's own summary."""
    request = replace(prefix, purpose="summary",
                      max_output_tokens=reply_tokens(max_words, parent, max_output_tokens))
    instructions = server_instructions(parent, focus, max_words)
    attempt = 0
    while True:
        try:
            compacted = provider.compact(request, instructions)
            break
        except ProviderError as error:
            if not error.retryable or attempt >= retry.max_retries:
                return ServerOutcome(None, Usage(), error.one_line())
            attempt += 1
            sleep(retry.delay(attempt, error))
    text = clean(compacted.content)
    try:
        summary = parse_summary_reply(text, max_words=max_words,
                                      allowance=carried_words(parent))
    except SummaryError as error:
        if fill is None or not _readable(text):
            return ServerOutcome(None, compacted.usage, str(error))
        summary = replace(fill(), background=_background(text, max_words), fallback=False)
    carrying = replace(summary, signed=compacted.block)
    return ServerOutcome(replace(carrying, signed_for=summary_digest(carrying)),
                         compacted.usage)


def _readable(text: str) -> bool:
    return len(text.split()) >= 3


def _background(text: str, max_words: int) -> str:
    """The server's summary as the background of rollchat's: one paragraph, without marker
    or section lines that would read as the block's own structure, at most ``max_words``."""
    lines = [ln.strip() for ln in text.replace(SUMMARY_START, " ").replace(SUMMARY_END, " ")
             .splitlines()]
    words = " ".join(ln.lstrip("#*- ").strip() for ln in lines if ln).split()
    return " ".join(words[:max_words])


def signed_to_send(summary: Summary) -> tuple[ProviderBlock | None, str | None]:
    """The provider's signed block to send first in place of ``summary`` (a child's first
    request, after a compaction or a resume), and when there is one that is not sent, why:
    it could not be read from the file, or the readable summary changed since it was
    written (``summary edit``, or by hand), or the block itself was (the digest covers both).
    The readable summary is sent in either case."""
    if summary.signed_problem:
        return None, summary.signed_problem
    if summary.signed is None:
        return None, None
    if summary.edited:
        return None, f"the summary was edited at {summary.edited}"
    if summary.signed_for != summary_digest(summary):
        return None, "the summary or its signed block was changed since the provider wrote it"
    return summary.signed, None
