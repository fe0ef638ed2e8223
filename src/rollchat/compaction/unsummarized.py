"""Resuming a session that has no summary (it crashed, or its summary failed): it is summarized
from its transcript first, through the one path (saved.py): a large one asks first, and
answering no has the model summarize only its newest part, the rest summarized locally."""

from __future__ import annotations

from collections.abc import Callable, Generator
from dataclasses import replace
from typing import TYPE_CHECKING

from rollchat.compaction.restore import restored_summary
from rollchat.compaction.saved import SummaryFlow, summarize_saved
from rollchat.domain import QUERY_KINDS, Summary
from rollchat.errors import RollchatError, StoreError
from rollchat.events import Event, Notice
from rollchat.interrupts import sigint_deferred

if TYPE_CHECKING:
    from rollchat.compaction.summarizer import Summarizer
    from rollchat.storage.api import Store
    from rollchat.storage.listing import SessionInfo


def summarize_unsummarized(info: SessionInfo, *, store: Store, summarizer: Summarizer,
                           confirm: Callable[[str], bool], summarize: SummaryFlow,
                           save: bool = True) -> Generator[Event, None, Summary]:
    """Summarize ``info``'s transcript with the chat's ``summarizer`` and its summary flow
    ``summarize`` (``confirm`` asks before a large one) and (``save``) save the summary into
    it; the summary. Not saved when another process has the session open (see
    session/forks.py): its file is theirs."""
    note = "" if save else " (for the fork only: its file is not touched)"
    yield Notice("info", f"{info.session_id} has no summary; summarizing its transcript now"
                         f"{note}.")
    transcript = store.load_transcript(info.session_id)
    parent = restored_summary(transcript)  # its parent's summary, kept in its own file
    turns = [t for t in transcript.turns if t.kind in QUERY_KINDS]
    if not turns:
        raise RollchatError(f"session {info.session_id} has no queries to resume from")
    done = yield from summarize_saved(summarizer, turns, parent, ask=confirm,
                                   summarize=summarize)
    # a framework agent's state as the last turn that changed it left it
    state = next((t.framework_state for t in reversed(transcript.turns)
                  if t.framework_state is not None), None)
    summary = replace(done.outcome.summary, framework_state=state)
    tokens = sum(t.usage.total for t in turns)
    try:
        with sigint_deferred():
            if save:
                store.finalize(info.session_id, summary, total_queries=len(turns),
                               total_tokens=tokens)
    except StoreError as exc:
        yield Notice("warning", f"could not save the new summary into {info.file_name}: {exc}")
    if done.interrupted:
        raise KeyboardInterrupt
    return summary
