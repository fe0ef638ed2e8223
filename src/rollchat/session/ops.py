"""The flows of living with many sessions, beside the core ones of session.py: ``fork`` (a new
child from a summary, the original left open), ``clear`` (a fresh session, nothing carried),
``undo`` of a compaction, and showing or editing the restored summary. Each takes the Session
and yields events, like the core flows."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, fields, replace
from typing import TYPE_CHECKING

from rollchat.compaction.policy import PolicyState
from rollchat.domain import Message, Summary
from rollchat.engine.context import Context
from rollchat.errors import RollchatError, StoreError, TranscriptError, UsageError
from rollchat.events import Event, Notice
from rollchat.session.state import SessionState, now
from rollchat.text.wording import plural

if TYPE_CHECKING:
    from collections.abc import Generator

    from rollchat.session.core import Flow, Session
    from rollchat.tools import Tool


@dataclass
class UndoPoint:
    """What a ``compact`` replaced, to put it back while its child has had no turn."""

    data: bytes | None  # the parent's file before the compaction (None: it had none)
    state: SessionState
    context: Context
    tools: dict[str, Tool]
    guards: PolicyState
    child: SessionState | None = None  # the session the compaction started


def _copy(context: Context) -> Context:
    return replace(context, messages=list(context.messages), whole=list(context.whole))


def _put_back(context: Context, saved: Context) -> None:
    for f in fields(Context):
        setattr(context, f.name, getattr(saved, f.name))


# ---------------------------------------------------------------------- compact (undoable)


def compact(session: Session, focus: str | None = None) -> Flow:
    """``compact``, remembering what it replaces so that ``undo`` can put it back."""
    state, store = session.state, session.store
    data = None
    if state.live is not None and not state.save_failed:
        try:
            data = store.snapshot(state.live.session_id)
        except StoreError:
            data = None
    point = UndoPoint(data, state, _copy(session.engine.context), dict(session.engine.tools),
                      session.guards)
    session.undo = None
    yield from session.compact(focus)
    if session.state is not state and (data is not None or state.live is None):
        point.child = session.state
        session.undo = point


def _why_no_undo(session: Session) -> str:
    state, point = session.state, session.undo
    if point is not None and point.child is state:
        return (f"the new session already has {plural(state.queries, 'query')}, so the "
                f"compaction can no longer be undone (resume {point.state.session_id} to go "
                "on from its summary)")
    if any(t.kind == "carried" for t in state.turns) and state.queries <= 1:
        return ("the last compaction was automatic: the message that set it off was already "
                "answered in the new session, so it cannot be undone")
    return "nothing to undo: 'undo' takes back a 'compact', right after it and before the next " \
           "message"


def undo(session: Session) -> Flow:
    """Go back to the session before the last ``compact``: its file byte for byte as it was
    (summary block removed), its working context, its tools; the child, which has had no
    turn and so has no file, is dropped."""
    point, child = session.undo, session.state
    if point is None or point.child is not child or child.live is not None or child.turns:
        raise UsageError(f"Cannot undo: {_why_no_undo(session)}.")
    parent = point.state
    if point.data is not None and parent.live is not None:
        try:
            parent.live = session.store.reopen(parent.live.session_id, point.data)
        except (StoreError, TranscriptError) as exc:
            raise RollchatError(f"Cannot undo: {exc}") from None
    child.close()
    session.state, session.guards, session.undo = parent, point.guards, None
    parent.summary_failed = False
    _put_back(session.engine.context, point.context)
    session.engine.tools.clear()
    session.engine.tools.update(point.tools)
    yield Notice("info", f"Undone: back in {parent.session_id or 'the session'} as it was "
                         "before 'compact' (its summary removed; the new session was never "
                         "saved).")


# ---------------------------------------------------------------------- fork and clear


def fork(session: Session, ref: str | None = None) -> Flow:
    """A new session from a summary, the original left open (no ``Continued In`` link; its
    header says ``Forked From``): of the saved session ``ref``, or of the current one (saved
    with its summary first, as ``exit`` does)."""
    if ref:
        from rollchat.storage.store import resolve

        info = resolve(ref, session.store.list_sessions(exclude=session.state.session_id))
        yield from session.resume(info.session_id, fork=True)
        if session.state.resumed_from == info.session_id:
            yield Notice("info", f"Forked {info.session_id}: this is a new session from its "
                                 f"summary; {info.session_id} itself is left as it was.")
        return
    state = session.state
    if not state.queries:
        raise UsageError("Nothing to fork yet: this session has no queries ('fork N|ID' forks "
                         "a saved session).")
    summary = yield from session._finalize()
    assert summary is not None
    yield session.saved_notice()
    session.undo = None
    parent = replace(state.as_parent(summary), forked=True, by_user=True)
    yield from session._start_child(parent)
    session.guards = PolicyState()
    name = state.session_id
    yield Notice("info", f"Forked {name or 'the session'}: this is a new session from its "
                         "summary" + (f"; {name} stays open ('resume {name}' continues it)."
                                      if name else "."))


def clear(session: Session) -> Flow:
    """A fresh session: no parent link, nothing carried. The current one is saved with its
    summary first, as ``exit`` does."""
    state = session.state
    if state.queries:
        yield from session._finalize()
        yield session.saved_notice()
    state.close()
    session.state = SessionState(started=now())
    session.engine.clear()
    session.output.install_archive(session.store, None, lambda: session.state.turns)
    session.guards, session.undo = PolicyState(), None
    yield Notice("info", "Cleared: a fresh session, with no parent and nothing carried over.")


# ---------------------------------------------------------------------- the restored summary


def _body(summary: Summary) -> str:
    from rollchat.storage.transcript import render_summary_block

    return "\n".join(render_summary_block(summary).split("\n")[1:-2]) + "\n"


def show_summary(session: Session) -> Flow:
    """The summary this session was restored from (what the model was given)."""
    state = session.state
    summary = state.parent_summary
    if summary is None:
        yield Notice("info", "This session has no restored summary: it did not start from "
                             "compact, resume or fork.")
        return
    edited = f", edited by you at {summary.edited}" if summary.edited else ""
    yield Notice("info", f"Restored summary (from {state.resumed_from or 'an unsaved session'}"
                         f"{edited}):")
    yield Notice("info", _body(summary).rstrip("\n"))
    yield Notice("detail", "'summary edit' opens it in your editor.")


def _parse_edit(text: str) -> Summary:
    from rollchat.storage.transcript import (
        SUMMARY_END,
        SUMMARY_START,
        parse_summary_body,
        unplaced_lines,
    )

    lines = [x for x in text.split("\n") if x.strip() not in (SUMMARY_START, SUMMARY_END)]
    body = "\n".join(lines)
    summary = parse_summary_body(body)
    lost = unplaced_lines(body)
    if lost:  # what the user wrote where no section keeps it would be dropped unseen
        raise TranscriptError(
            f"{plural(len(lost), 'line')} outside the sections would be lost (first: "
            f"{lost[0][:60]!r}); put them under Background Context, Topics Discussed, "
            "Decisions Made or Pending")
    return summary


def edit_summary(session: Session, edit: Callable[[str], str]) -> Generator[Event, None, None]:
    """``summary edit``: ``edit`` (the user's editor) changes the restored summary's text; a
    valid change becomes the working context (the restoration message is rewritten, so the
    provider's prompt cache misses once) and is written into the parent's summary block,
    marked as edited by the user. An invalid one can be edited again or discarded."""
    state = session.state
    old = state.parent_summary
    if old is None:
        raise UsageError("This session has no restored summary to edit: it did not start from "
                         "compact, resume or fork.")
    original = text = _body(old)
    new = None
    while new is None:
        new_text = edit(text)
        if new_text == original:
            yield Notice("info", "Summary unchanged.")
            return
        try:
            new = _parse_edit(new_text)
        except TranscriptError as exc:
            if not session.confirm(f"The edited summary cannot be used: {exc}. Edit it again? "
                                   "(y/n) "):
                yield Notice("info", "Edit discarded: the summary is unchanged.")
                return
            text = new_text
    if replace(new, edited="") == replace(old, edited=""):
        yield Notice("info", "Summary unchanged.")
        return
    new = replace(new, edited=now().isoformat(timespec="seconds"))
    yield from _use_summary(session, old, new)


def _use_summary(session: Session, old: Summary, new: Summary) -> Flow:
    from rollchat.storage.transcript import render_summary_block

    state, context = session.state, session.engine.context
    before, after = render_summary_block(old), render_summary_block(new)
    first = context.messages[0] if context.prefix_len and context.messages else None
    if first is None or before not in first.content:
        raise RollchatError("the restored summary is no longer in the working context; "
                            "nothing was changed")
    prompt = first.content.replace(before, after, 1)
    context.rewrite(0, Message("user", prompt))
    state.parent_summary = new
    if state.restored is not None:
        state.restored = replace(state.restored, user=prompt)
    parent = state.resumed_from
    where = "this session's working context"
    if parent is not None:
        try:
            session.store.replace_summary(parent, new)
        except (StoreError, TranscriptError) as exc:
            yield Notice("warning", f"the edit is used here but was not written to {parent}: "
                                    f"{exc}")
        else:
            where += f" and the summary block of {parent} (marked as edited by you)"
    yield Notice("info", f"Summary edited: it is now {where}.")
    yield Notice("detail", "The next request starts with the edited summary, so the provider's "
                           "prompt cache misses once.")
