"""Resuming a session that has no summary (it crashed, or its summary failed): it is summarized
from its transcript first. A large one is estimated before any call (model calls, tokens) and
summarized whole only if the user agrees; otherwise the model summarizes the last part and the
turns before it are summarized locally, so a crashed 200 MB transcript costs one call."""

from __future__ import annotations

from collections.abc import Generator
from typing import TYPE_CHECKING

from rollchat.compaction.chunks import turn_tokens
from rollchat.compaction.summarizer import LOCAL_SAMPLE, SUMMARY_PROMPT_OVERHEAD
from rollchat.domain import Summary
from rollchat.errors import RollchatError, StoreError
from rollchat.events import Event, Notice
from rollchat.interrupts import sigint_deferred
from rollchat.text.wording import human_tokens, plural
from rollchat.tools import ARCHIVE_TOOL_NAME

if TYPE_CHECKING:
    from rollchat.session.core import Session
    from rollchat.storage.store import SessionInfo

CONFIRM_CALLS = 5  # more summary calls than this: ask first
CHEAP_CALLS = 1  # the model calls of the cheap path (the last part of the session)


def summarize_unsummarized(session: Session, info: SessionInfo, *, save: bool = True,
                           ) -> Generator[Event, None, Summary]:
    """Summarize ``info``'s transcript and (``save``) save the summary into it; the summary.
    Not saved when another process has the session open (see forks.py): its file is theirs."""
    note = "" if save else " (for the fork only: its file is not touched)"
    yield Notice("info", f"{info.session_id} has no summary; summarizing its transcript now"
                         f"{note}.")
    from rollchat.compaction.restore import restored_summary

    transcript = session.store.load_transcript(info.session_id)
    parent = restored_summary(transcript)  # its parent's summary, kept in its own file
    turns = [t for t in transcript.turns if t.kind in ("query", "carried")]
    if not turns:
        raise RollchatError(f"session {info.session_id} has no queries to resume from")
    summarizer = session.summarizer
    chunks = summarizer.plan(turns)
    model_calls = None
    if len(chunks) > CONFIRM_CALLS:
        tokens = (sum(turn_tokens(summarizer.counter, t) for t in turns)
                  + len(chunks) * (SUMMARY_PROMPT_OVERHEAD + summarizer.words * 2))
        if not session.confirm(
                f"Summarizing its {len(turns):,} turns with {summarizer.model} takes "
                f"{len(chunks):,} model calls (about {human_tokens(tokens)} tokens sent); "
                "answering no has the model summarize only the last part and the rest is "
                "summarized locally. Continue? (y/n) "):
            model_calls = CHEAP_CALLS  # grouped from the newest turn: the last parts full
            chunks = [c[::-1] for c in summarizer.plan(turns[::-1])[::-1]]
            recent = sum(len(c) for c in chunks[-CHEAP_CALLS:])
            older = len(turns) - recent
            read = (f" from their first {LOCAL_SAMPLE[0]} and last {LOCAL_SAMPLE[1]}"
                    if older > sum(LOCAL_SAMPLE) else "")
            yield Notice("info", f"The model summarizes the last {plural(recent, 'turn')} "
                                 f"({plural(CHEAP_CALLS, 'call')}); the {older:,} before them "
                                 f"are summarized locally{read} (the agent's "
                                 f"{ARCHIVE_TOOL_NAME} tool reads them all).")
    outcome, stop = yield from session._summarize(turns, parent, None, chunks=chunks,
                                                  model_calls=model_calls)
    tokens = sum(t.usage.total for t in turns)
    try:
        with sigint_deferred():
            if save:
                session.store.finalize(info.session_id, outcome.summary,
                                       total_queries=len(turns), total_tokens=tokens)
    except StoreError as exc:
        yield Notice("warning", f"could not save the new summary into {info.file_name}: {exc}")
    if stop:
        raise KeyboardInterrupt
    return outcome.summary
