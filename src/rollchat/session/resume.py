"""Resuming a saved session: found by number, id or prefix, checked (another agent, open in
another process, a broken chain), summarized first when it has no summary, and continued in a
new linked child. The current session is saved with its summary first."""

from __future__ import annotations

from collections.abc import Callable, Generator
from functools import partial

from rollchat.domain import Summary
from rollchat.events import Event, Notice
from rollchat.models.prices import chain_of
from rollchat.session.compactor import Compactor
from rollchat.session.forks import agent_change, check_open
from rollchat.session.state import Parent, SessionState
from rollchat.storage.store import SessionInfo, Store
from rollchat.text.wording import session_size


def find(store: Store, ref: str,
         exclude: str | None) -> tuple[SessionInfo, list[SessionInfo]]:
    """The session ``ref`` names, and its lineage (it and the sessions it continues): from the
    files' index when the store has one (no full listing)."""
    from rollchat.storage.store import resolve

    index = getattr(store, "index", None)
    if index is not None:
        info = index.resolve(ref, exclude=exclude)
        return info, list(index.lineage([info]))
    listing = store.list_sessions(exclude=exclude)
    return resolve(ref, listing), list(listing.sessions)


def resume(compactor: Compactor, state: SessionState, ref: str, *, fork: bool,
           confirm: Callable[[str], bool],
           fork_refusal: str | None) -> Generator[Event, None, bool]:
    """Continue the saved session ``ref`` from its summary, in a new linked session
    (``fork``: a fork, which leaves the session open: no ``Continued In`` link is written to
    it); False when the user cancelled."""
    store = compactor.around.store
    info, lineage = find(store, ref, state.session_id)
    question = agent_change(info, compactor.agent)
    if question is not None and not confirm(question):
        yield Notice("info", "Resume cancelled.")
        return False
    yield Notice("info", "Loading session...")
    elsewhere = yield from check_open(store, info, None if fork else fork_refusal)
    yield from _warnings(store, info)
    summary = store.load_summary(info) if not info.summary_problem else None
    if summary is None:
        summary = yield from _summarized(compactor, state, info, confirm, save=not elsewhere)
    if state.queries:
        yield from compactor.finalize(state)
        yield Notice("info", f"Saved the current session: {state.session_id} "
                             f"({session_size(state.queries, state.billed)})")
    yield Notice("info", f"Found: {info.session_id} · {info.agent} · "
                         f"{info.date:%Y-%m-%d %H:%M} "
                         f"({session_size(info.queries, info.tokens, info.tokens_exact)})")
    yield Notice("info", "Restoring context...")
    child = yield from compactor.start_child(state, Parent(
        info.session_id, info.file_name, summary, info.date, info.queries, info.tokens,
        info.resumed_from, elsewhere or fork, by_user=fork and not elsewhere))
    child.chain = chain_of(info, lineage)  # the chain continued, as recorded
    compactor.reset()
    return True


def _warnings(store: Store, info: SessionInfo) -> Generator[Event, None, None]:
    if info.summary_problem:
        yield Notice("warning", f"{info.file_name}: {info.summary_problem}; treating it as "
                                "unsummarized")
    if info.previous_session and not store.has_file(info.previous_session):
        yield Notice("warning", f"its parent {info.previous_session} is missing: the chain "
                                "is broken there (this session's own summary is still used)")


def _summarized(compactor: Compactor, state: SessionState, info: SessionInfo,
                confirm: Callable[[str], bool], *,
                save: bool) -> Generator[Event, None, Summary]:
    """``info`` has no summary: its transcript is summarized first (see compaction/unsummarized.py),
    billed to the current session ``state``."""
    from rollchat.compaction.unsummarized import summarize_unsummarized

    return (yield from summarize_unsummarized(
        info, store=compactor.around.store, summarizer=compactor.summarizer, confirm=confirm,
        summarize=partial(compactor.summarize, state), save=save))
