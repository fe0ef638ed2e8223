"""Resuming a saved session: found by number, id or prefix (never the current one), checked (
continued elsewhere already: its chain's newest is offered; another agent, open in another
process, a broken chain), summarized first when it has no summary, and continued in a new
linked child. The current session is saved with its summary first."""

from __future__ import annotations

from collections.abc import Callable, Generator
from functools import partial

from rollchat.compaction.server import signed_to_send
from rollchat.domain import Summary
from rollchat.engine.runner import give_framework_state
from rollchat.errors import StoreError
from rollchat.events import Event, Notice
from rollchat.models.prices import chain_of
from rollchat.session.compactor import Compactor
from rollchat.session.forks import IN_CHAT, Forking, agent_change, check_open
from rollchat.session.state import Parent, SessionState, chain_key
from rollchat.storage.store import SessionInfo, Store
from rollchat.text.wording import session_size


def find(store: Store, ref: str, current: str | None) -> SessionInfo:
    """The session ``ref`` names (THE numbering, see storage/listing.py), never the chat's
    ``current`` one (a store with an index resolves it there: no full listing)."""
    return store.resolve(ref, current)


def newest_of_chain(store: Store, info: SessionInfo) -> SessionInfo:
    """The newest session of ``info``'s chain: followed along Continued In (the newest child
    at each step) as far as the files go; ``info`` itself when nothing continues it."""

    def lookup(session_id: str) -> SessionInfo | None:
        try:
            found = store.resolve(session_id)
        except StoreError:
            return None
        return found if found.session_id == session_id else None

    best, seen = info, {info.session_id}
    while True:
        later = [c for c in map(lookup, best.continued_in) if c and c.session_id not in seen]
        if not later:
            return best
        best = max(later, key=lambda i: (i.date, i.session_id))
        seen.add(best.session_id)


def continued(store: Store, info: SessionInfo, current: str | None,
              confirm: Callable[[str], bool],
              forking: Forking = IN_CHAT) -> Generator[Event, None, SessionInfo | None]:
    """The session to resume for ``info``: when it was continued elsewhere already, resuming
    it would branch off its older state, so the newest of its chain is offered (a question
    whose default, and answer without a terminal, is yes); None: that newest is the
    ``current`` session, nothing to resume."""
    newest = newest_of_chain(store, info)
    if newest is info:
        return info
    if newest.session_id == current:
        yield Notice("info", f"Session {info.number} ({info.session_id}) was continued in the "
                             "current session: nothing to resume.")
        return None
    if not confirm(f"Session {info.number} ({info.session_id}) was continued in session "
                   f"{newest.number} ({newest.session_id}, {newest.date:%Y-%m-%d %H:%M}), "
                   f"the newest of its chain; resuming {info.number} would branch off its "
                   f"older state. Resume {newest.number} instead? (Y/n) "):
        return info
    yield Notice("info", f"Resuming session {newest.number} ({newest.session_id}), the newest "
                         f"of the chain ({forking.words(info)} branches off {info.number}'s "
                         "older state instead).")
    return newest


def resume(compactor: Compactor, state: SessionState, ref: str, *, fork: bool,
           confirm: Callable[[str], bool],
           forking: Forking, as_chosen: bool = False) -> Generator[Event, None, bool]:
    """Continue the saved session ``ref`` from its summary, in a new linked session
    (``fork``: a fork, which leaves the session open: no ``Continued In`` link is written to
    it; ``as_chosen``: ``ref`` itself even when continued elsewhere, as a handoff chose it);
    False when the user cancelled or there was nothing to resume."""
    store = compactor.around.store
    chosen: SessionInfo | None = find(store, ref, state.session_id)
    if not (fork or as_chosen) and chosen is not None and chosen.continued_in:
        chosen = yield from continued(store, chosen, state.session_id, confirm, forking)
    if chosen is None:
        return False
    info, lineage = chosen, store.lineage([chosen])  # (for the chain's cost)
    question = agent_change(info, compactor.agent)
    if question is not None and not confirm(question):
        yield Notice("info", "Resume cancelled.")
        return False
    yield Notice("info", "Loading session...")
    elsewhere = yield from check_open(store, info, None if fork else forking.refusal, fork)
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
    dropped = signed_to_send(summary)[1]
    if dropped is not None:
        yield Notice("info", f"The provider's signed compaction block was dropped ({dropped}): "
                             "rollchat's readable summary is sent instead.")
    # the framework's state as the session saved it (none saved: it starts empty)
    for problem in (summary.state_problem, give_framework_state(
            compactor.engine.settings.runner, summary.framework_state)):
        if problem:
            yield Notice("warning", f"{info.file_name}: {problem}")
    child = yield from compactor.start_child(state, Parent(
        info.session_id, info.file_name, summary, info.date, info.queries, info.tokens,
        info.resumed_from, elsewhere or fork, by_user=fork and not elsewhere,
        cache_key=chain_key(first_of(info, lineage)), title=given_title(info, summary)))
    child.chain = chain_of(info, lineage)  # the chain continued, as recorded
    compactor.reset()
    return True


def given_title(info: SessionInfo, summary: Summary) -> str | None:
    """The title the user gave ``info`` (``title``, ``rollchat rename``, or one its own parent
    passed on), which the session that continues it keeps; None when its title is the one
    its file got by itself (its summary's, else its first message's first line)."""
    from rollchat.storage.titles import first_line_title, model_title

    if not info.title:
        return None
    if summary.title:
        automatic = info.title == model_title(summary.title)
    else:  # the first line (the listing's preview of it may be cut: "…")
        preview = first_line_title(info.first_query_preview)
        automatic = info.title == preview or (preview.endswith("…") and info.title.startswith(
            preview[:-1]))
    return None if automatic else info.title


def first_of(info: SessionInfo, lineage: list[SessionInfo]) -> str:
    """The id of the first session of ``info``'s chain, followed along the parent links as
    far as the files go (its cache key's seed: the same from every session of the chain)."""
    by_id = {s.session_id: s for s in lineage}
    first, seen = info, {info.session_id}
    while first.resumed_from in by_id and first.resumed_from not in seen:
        first = by_id[first.resumed_from]
        seen.add(first.session_id)
    return first.session_id


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
