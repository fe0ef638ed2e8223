"""Steps of the compaction flow that hold no state: the line saying what became of a summarized
session, the question before an automatic compaction, and a flow run without showing its
answer (the restoration of an automatic compaction)."""

from __future__ import annotations

from rollchat.engine.core import Answer, Stream
from rollchat.events import Notice, Retrying
from rollchat.session.state import UNSAVED, SessionState
from rollchat.storage.api import Store
from rollchat.text.wording import human_tokens, session_size


def kept_in_memory(name: str, size: str = "") -> str:
    """The one way to say a session was not saved (--no-save); ``size``: its figures."""
    return f"Session {name}{f' ({size})' if size else ''} was kept in memory only (--no-save): " \
        "nothing was written"


def saved_notice(state: SessionState, store: Store) -> Notice:
    """What became of the session just summarized (compact, fork, clear): saved, kept in
    memory only (--no-save), or saved only in part; never "saved" when it was not."""
    from rollchat.config.settings import NO_SAVE_LOCATION

    name = state.session_id or UNSAVED
    size = session_size(state.queries, state.billed)
    if store.location == NO_SAVE_LOCATION:
        return Notice("info", kept_in_memory(name, size))
    if state.save_failed:
        return Notice("warning", f"Session {name} ({size}) holds only the turns saved "
                                 "before the error; the later ones were not saved")
    if state.summary_failed:
        return Notice("warning", f"Session {name} ({size}) holds every turn but no "
                                 "summary; resuming it summarizes it then")
    return Notice("info", f"Saved session: {name} ({size})")


def proposal(estimate: int, window: int) -> str:
    """The one-line question of auto_compact: ask (the answers: see CompactChoice)."""
    return (f"Context at {estimate / window:.0%} (≈{human_tokens(estimate)} of "
            f"{human_tokens(window)} tokens). Compact now? [c]ompact / [l]ater / "
            "[o]ff for this session: ")


def quietly(flow: Stream) -> Stream:
    """A flow whose answer is not shown (the restoration of an automatic compaction): only
    its retry notices reach the caller, so a wait is never silent; its result is kept."""
    while True:
        try:
            event = next(flow)
        except StopIteration as stop:
            answer: Answer = stop.value
            return answer
        if isinstance(event, Retrying):
            yield event
