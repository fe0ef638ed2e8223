"""Who writes a session when a child continues it. A session another process still has open is
never written here: resuming it says so in one line and continues in a fork (a new child made
from its summary, whose header says "Forked From"), or refuses with the reason. A parent that
is not open elsewhere gets a forward link ("Continued In") once its child's file exists."""

from __future__ import annotations

from collections.abc import Callable, Generator

from rollchat.compaction.summarizer import SummaryOutcome
from rollchat.domain import Summary, Turn
from rollchat.errors import RollchatError, StoreError, TranscriptError
from rollchat.events import Event, Notice
from rollchat.interrupts import sigint_deferred
from rollchat.locks import SessionBusyError, busy_message
from rollchat.state import SessionState
from rollchat.store import SessionInfo, Store

# (turns, parent summary, focus) -> the summary and whether Ctrl-C asked to stop
Summarize = Callable[[list[Turn], Summary | None, str | None],
                     Generator[Event, None, tuple[SummaryOutcome, bool]]]


def check_open(store: Store, info: SessionInfo,
               refusal: str | None) -> Generator[Event, None, bool]:
    """True when ``info``'s session is open in another process and the resume goes on as a
    fork (told in one line); SessionBusyError when forks are refused (``refusal`` says why)."""
    if not store.open_elsewhere(info.session_id):
        return False
    if refusal is not None:
        raise SessionBusyError(f"{busy_message(info.session_id)}; not resumed: {refusal}")
    yield Notice("warning", f"Session {info.session_id} is open in another rollchat process: "
                            "continuing in a fork, a new session from its summary (its file is "
                            "left to that process).")
    return True


def summarize_old(store: Store, info: SessionInfo, summarize: Summarize, *,
                  save: bool) -> Generator[Event, None, Summary]:
    """The summary of a session that has none (it crashed, its summary failed, or another
    process still writes it), made from its transcript; saved into its file when ``save``."""
    note = "" if save else " (for the fork only: its file is not touched)"
    yield Notice("info", f"{info.session_id} has no summary; summarizing its transcript now"
                         f"{note}.")
    transcript = store.load_transcript(info.session_id)
    turns = [t for t in transcript.turns if t.kind != "restored"]
    if not turns:
        raise RollchatError(f"session {info.session_id} has no queries to resume from")
    outcome, stop = yield from summarize(turns, None, None)
    tokens = sum(t.usage.total for t in turns)
    if save:
        try:
            with sigint_deferred():
                store.finalize(info.session_id, outcome.summary, total_queries=len(turns),
                               total_tokens=tokens)
        except StoreError as exc:
            yield Notice("warning", f"could not save the new summary into {info.file_name}: "
                                    f"{exc}")
    if stop:
        raise KeyboardInterrupt
    return outcome.summary


def link_parent(store: Store, state: SessionState) -> Generator[Event, None, None]:
    """Once a child's file exists, its parent's header gets ``Continued In: <child>`` (an
    atomic rewrite). Not for a fork: the parent's file belongs to another process."""
    if state.live is None or state.resumed_from is None or state.forked:
        return
    try:
        store.link_child(state.resumed_from, state.live.session_id)
    except (StoreError, TranscriptError) as exc:
        yield Notice("warning", f"the link from {state.resumed_from} to this session was not "
                                f"written: {exc}")
