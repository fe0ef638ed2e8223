"""Who writes a session: the Recorder. Its file is made at its first query (``open_file``) and
held by this process from then on; a parent not open elsewhere gets a forward link ("Continued
In") once its child's file exists (``link_parent``)."""

from __future__ import annotations

from collections.abc import Generator

from rollchat.config.settings import AgentConfig
from rollchat.domain import Turn
from rollchat.errors import StoreError, TranscriptError
from rollchat.events import Event, Notice, Saved
from rollchat.models.current import CurrentModel
from rollchat.session.state import SessionState
from rollchat.storage.store import LiveSession, Store
from rollchat.text.wording import plural


def open_file(store: Store, state: SessionState, agent: AgentConfig, model: str,
              provider: str, *, cost: float | None = None,
              pending: Turn | None = None) -> Generator[Event, None, LiveSession]:
    """Create the session's file (at its first query, held by this process from then on) with
    every entry so far in the same write (the restored summary's acknowledgment, turns carried
    over from the parent, the turns: a kill leaves no file with a header alone), and its
    parent's forward link. ``cost``: what the session cost so far, None when the model's
    price is unknown (the header then has no Cost line). ``pending``: the turn in progress,
    written after them in the same write (see Recorder.ensure_file)."""
    entries = [state.restored, *state.turns] if state.restored is not None else state.turns
    live = state.live = store.new_session(
        agent_key=agent.key, agent=agent.name, agent_path=agent.agent_path, model=model,
        provider=provider, now=state.started, resumed_from=state.resumed_from,
        previous_session=state.previous_session, forked=state.forked,
        tools=agent.tool_names, handed_from=state.handed_from, cost=cost,
        title=state.title, entries=entries, pending=pending)
    state.saved_entries = len(entries)
    yield from link_parent(store, state)
    return live


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


class Recorder:
    """Writes one agent's sessions to ``store``: each turn as it ends, the turn in progress
    after each tool call (see checkpoint.py), and the file made at the first query. A failed
    write (disk full, a read-only directory) is said once; the chat goes on in memory and
    each later save tries again, writing every entry held meanwhile, and says when it could."""

    def __init__(self, store: Store, agent: AgentConfig, current: CurrentModel) -> None:
        self.store, self.agent, self.current = store, agent, current  # the header's model

    def _catch_up(self, state: SessionState,
                  cost: float | None) -> Generator[Event, None, LiveSession]:
        """Write what is not on disk yet: the file (at the first write), then each entry not
        written (the restored summary's acknowledgment, turns carried over from the parent,
        the turns); StoreError when a write fails (what was written stays counted)."""
        current = self.current  # a file opened after ``model NAME`` names the new model
        live = state.live or (yield from open_file(self.store, state, self.agent, current.name,
                                                   current.provider_name, cost=cost))
        first = 0 if state.restored is None else 1
        if state.saved_entries < first and state.restored is not None:
            live.append_turn(state.restored, self.agent.name)
            state.saved_entries = first
        for turn in state.turns[state.saved_entries - first:]:
            live.append_turn(turn, self.agent.name)
            state.saved_entries += 1
        return live

    def catch_up(self, state: SessionState, cost: float | None,
                 context_tokens: int | None = None) -> Generator[Event, None, LiveSession | None]:
        """Bring the file up to ``state`` (its header's totals too, with ``context_tokens``):
        the file, or None when it cannot be written now (said in one line when saving
        stops, and in one when it resumes)."""
        failed, behind = state.save_failed, unsaved(state)
        try:
            live = yield from self._catch_up(state, cost)
            if context_tokens is not None:
                live.set_totals(state.queries, state.billed, context_tokens, cost)
        except StoreError as exc:
            if not failed:
                state.save_failed = True
                yield Notice("error", f"{exc} — the chat goes on in memory; saving resumes "
                                      "by itself once the disk takes writes again.")
            return None
        if failed:
            state.save_failed = False
            yield Notice("info", f"Saving again: {live.file_name} holds every turn now "
                                 f"({plural(behind, 'entry')} held in memory written).")
        return live

    def retry(self, state: SessionState, cost: float | None,
              context_tokens: int | None = None) -> Generator[Event, None, None]:
        """After a failed write, try again now (before a summary, at the exit): the turns
        held in memory meanwhile are written if the disk takes them. Nothing otherwise (nor
        with nothing held: no file is made for a chat with no turn)."""
        if state.save_failed and unsaved(state):
            yield from self.catch_up(state, cost, context_tokens)

    def ensure_file(self, state: SessionState,
                    pending: Turn | None = None) -> Generator[Event, None, str | None]:
        """Make the session's file now (normally made at its first query); when it is made
        here, with the turn in progress ``pending`` in the same write (the message about to be
        sent, marked interrupted: a kill before its answer leaves it, never a file with a
        header alone; the turn's save replaces it). Its id, or None when nothing is saved."""
        if state.live is None and not state.save_failed and pending is not None:
            try:
                current = self.current
                yield from open_file(self.store, state, self.agent, current.name,
                                     current.provider_name, cost=None, pending=pending)
            except StoreError:  # said once, as any failed write is
                yield from self.catch_up(state, None)
        elif state.live is None or state.save_failed:
            yield from self.catch_up(state, None)
        return state.session_id

    def save(self, state: SessionState, cost: float | None,
             context_tokens: int) -> Generator[Event, None, None]:
        """Append the turn just added to ``state`` to the session file (creating it at the
        first query; with every entry a failed write left in memory), with the totals so far
        in its header."""
        live = yield from self.catch_up(state, cost, context_tokens)
        if live is not None:
            yield Saved(live.session_id, live.file_name)

    def write_pending(self, state: SessionState, turn: Turn,
                      cost: float | None) -> Generator[Event, None, None]:
        """The turn in progress, provisional (see checkpoint.py); a failing disk is reported
        by the turn's own save at its end (which also writes what a failure held back)."""
        if state.save_failed:
            return
        try:
            live = yield from self._catch_up(state, cost)
            live.write_pending(turn, self.agent.name)
        except StoreError:
            pass


def unsaved(state: SessionState) -> int:
    """How many of ``state``'s entries (its restored acknowledgment, its turns) are not in its
    file yet."""
    return int(state.restored is not None) + len(state.turns) - state.saved_entries
