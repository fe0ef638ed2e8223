"""One summary call: the request (reusing the chat's cached prefix when it can), the reply read
within a timeout, one retry, and the local summary when the model's fails; nothing is lost."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from rollchat.domain import Summary, Turn, Usage
from rollchat.errors import TranscriptError
from rollchat.providers.base import (
    ChatRequest,
    ContextTooLongError,
    Provider,
    TextDelta,
    UsageEvent,
)
from rollchat.text.normalize import clean
from rollchat.text.thinking import without_thinking

# the fewest output tokens a summary request is sent with: the markers, the headings and a few
# lines (a request whose window leaves less is cut smaller instead, never sent to be refused)
LEAST_REPLY_TOKENS = 256


@dataclass(frozen=True)
class SummaryOutcome:
    """The summary to save; ``fallback_used`` and ``reason`` say whether and why the model's
    summary was replaced by the extractive one. ``usage`` sums the model calls made."""

    summary: Summary
    fallback_used: bool
    reason: str | None
    usage: Usage = field(default_factory=Usage)
    # the provider refused the request as too long (it is never sent again as it was)
    refused: ContextTooLongError | None = field(default=None, compare=False)
    # not sent: by rollchat's own count the window left the reply fewer tokens than the least
    # summary needs; this many more were needed (the turns go again, in smaller parts)
    no_room: int = 0


def unmarked(text: str, turns: Sequence[Turn], parent: Summary | None, focus: str | None,
             max_words: int) -> Summary | None:
    """A reply with no summary markers at all (a small model ignores the format): its text is
    the summary, structured locally (its sections when it wrote them, else its prose as the
    background beside the local summary's lists) rather than asked for again. None: it has
    markers (or nothing), and is read as a summary reply."""
    from rollchat.compaction.extractive import extractive_summary
    from rollchat.storage.transcript import SUMMARY_END, SUMMARY_START, parse_summary_body

    prose = text.strip()
    if not prose or SUMMARY_START in text or SUMMARY_END in text:
        return None
    words = prose.split()[:int(max_words * 1.5)]
    try:
        written = parse_summary_body(prose)
        if written.background.strip() and len(prose.split()) <= len(words):
            return written
    except TranscriptError:
        pass
    local = extractive_summary(turns, parent_summary=parent, focus=focus,
                               max_words=max_words, fallback=False)
    return replace(local, background=" ".join(words))


NOT_ASKED = "the model was not asked: "  # starts the reason of a summary never asked for


def fallback_line(reason: str | None) -> str:
    """What the user is told when the summary is the local one, and why."""
    if reason is not None and reason.startswith(NOT_ASKED):
        return f"The summary is the local one ({reason})."
    return f"The model's summary failed ({reason}); the local summary is used instead."


class _SummaryTimeout(Exception):
    pass


def _collect(provider: Provider, request: ChatRequest, timeout: float) -> tuple[str, Usage]:
    """The reply text and usage of one call, giving up once ``timeout`` seconds have passed
    (checked as events arrive; a provider blocked inside one read has its own timeout)."""
    deadline = time.monotonic() + timeout
    parts: list[str] = []
    usage = Usage()
    # a provider that enforces the timeout closes the connection when it passes (raising
    # ProviderTimeoutError); counted from when it is sent, not while it waits for its turn
    timed = getattr(provider, "enforces_timeout", False)
    if timed:
        request = replace(request, timeout=timeout)
    stream: Iterator[Any] = iter(provider.stream(request))
    try:
        for event in stream:
            if not timed and time.monotonic() > deadline:
                raise _SummaryTimeout(f"timed out after {timeout:g}s")
            if isinstance(event, TextDelta):
                parts.append(event.text)
            elif isinstance(event, UsageEvent):
                usage = event.usage
    finally:
        close = getattr(stream, "close", None)
        if callable(close):
            close()
    # the model's reply enters here, without the thinking a reasoning model may put first
    return clean(without_thinking("".join(parts))), usage


def summarize(
    provider: Provider,
    turns: Sequence[Turn],
    *,
    parent_summary: Summary | None,
    focus: str | None,
    model: str,
    max_words: int,
    timeout_seconds: float,
    max_output_tokens: int,
    prefix: ChatRequest | None = None,
    room: Callable[[ChatRequest], int] | None = None,
) -> SummaryOutcome:
    """Ask ``provider`` for the summary; on an invalid reply, a provider error or a timeout,
    retry once, then fall back to ``extractive_summary`` (labelled fallback) with the reason.
    Ctrl-C (KeyboardInterrupt) during the call goes straight to the fallback: nothing is lost.
    A request refused as too long is not sent again as it was: the outcome says ``refused``.
    ``prefix``: the chat's next request without a new message, holding ``turns``: the
    summary request then reuses it (its cached prefix, see prefixed.py). ``room``: the output
    tokens the window leaves beside a request, counted as it is sent: its output limit is
    capped to it, so the server never truncates the request or the reply's room.
    """
    from rollchat.compaction import extractive  # on first use
    from rollchat.compaction import request as summary_request
    from rollchat.compaction.prefixed import build_prefixed_request

    if prefix is not None:
        request = build_prefixed_request(prefix, parent_summary=parent_summary, focus=focus,
                                         max_words=max_words,
                                         max_output_tokens=max_output_tokens, turns=turns)
    else:
        request = summary_request.build_summary_request(
            turns, parent_summary=parent_summary, focus=focus, model=model,
            max_words=max_words, max_output_tokens=max_output_tokens,
        )
    if room is not None:  # what the window leaves now, not what the config said
        left, least = room(request), min(request.max_output_tokens, LEAST_REPLY_TOKENS)
        if left < least:  # sent, it would be refused or its reply cut: never sent
            fallback = extractive.extractive_summary(turns, parent_summary=parent_summary,
                                                     focus=focus, max_words=max_words,
                                                     fallback=True)
            return SummaryOutcome(fallback, True, "no room in the context window for the "
                                  "summary's reply", Usage(), no_room=least - left)
        request = replace(request, max_output_tokens=min(request.max_output_tokens, left))
    usage = Usage()
    reason = "no attempt made"
    refused: ContextTooLongError | None = None
    allowance = summary_request.carried_words(parent_summary)
    for _attempt in range(2):
        try:
            text, call_usage = _collect(provider, request, timeout_seconds)
            usage += call_usage
            summary = unmarked(text, turns, parent_summary, focus, max_words) or \
                summary_request.parse_summary_reply(text, max_words=max_words,
                                                    allowance=allowance)
            return SummaryOutcome(summary, False, None, usage)
        except KeyboardInterrupt:
            reason = "interrupted"
            break
        except _SummaryTimeout as error:
            reason = str(error)
        except summary_request.SummaryError as error:
            reason = str(error)
        except ContextTooLongError as error:
            reason, refused = error.one_line(), error
            break
        except Exception as error:  # ProviderError or anything else: the session must end resumable
            one_line = getattr(error, "one_line", None)
            reason = one_line() if callable(one_line) else f"{type(error).__name__}: {error}"
    fallback = extractive.extractive_summary(turns, parent_summary=parent_summary, focus=focus,
                                  max_words=max_words, fallback=True)
    return SummaryOutcome(fallback, True, reason, usage, refused)
