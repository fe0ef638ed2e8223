"""The flows of living with many sessions, beside the core ones: ``undo`` of a compaction,
``fork`` (a new child from a summary, the original left open), ``clear`` (a fresh session,
nothing carried), and showing or editing the restored summary. Session calls them with what
each needs; the flows that start another session return its state."""

from __future__ import annotations

from collections.abc import Callable, Generator
from dataclasses import replace

from rollchat.compaction.policy import PolicyState
from rollchat.domain import Message, Summary
from rollchat.engine.core import Engine
from rollchat.errors import RollchatError, StoreError, TranscriptError, UsageError
from rollchat.events import Document, Event, Notice
from rollchat.session.compactor import Compactor
from rollchat.session.state import SessionState, UndoPoint, now
from rollchat.session.steps import saved_notice
from rollchat.storage.store import Store
from rollchat.text.wording import plural

Flow = Generator[Event, None, None]


# ---------------------------------------------------------------------- compact (undoable)


def undo_point(state: SessionState, store: Store, engine: Engine,
               guards: PolicyState) -> UndoPoint:
    """What a ``compact`` of ``state`` is about to replace (its file as it is now)."""
    data = None
    if state.live is not None and not state.save_failed:
        try:
            data = store.snapshot(state.live.session_id)
        except StoreError:
            data = None
    context, tools = engine.saved()
    return UndoPoint(data, state, context, tools, guards)


def undoable(point: UndoPoint, child: SessionState) -> UndoPoint | None:
    """``point`` once its ``compact`` started ``child``; None when it cannot be undone."""
    if child is point.state or (point.data is None and point.state.live is not None):
        return None
    point.child = child
    return point


def why_no_undo(state: SessionState, point: UndoPoint | None) -> str:
    if point is not None and point.child is state:
        return (f"the new session already has {plural(state.queries, 'query')}, so the "
                f"compaction can no longer be undone (resume {point.state.session_id} to go "
                "on from its summary)")
    if any(t.kind == "carried" for t in state.turns) and state.queries <= 1:
        return ("the last compaction was automatic: the message that set it off was already "
                "answered in the new session, so it cannot be undone")
    return "nothing to undo: 'undo' takes back a 'compact', right after it and before the next " \
           "message"


def undo(point: UndoPoint | None, child: SessionState, store: Store,
         engine: Engine) -> SessionState:
    """Go back to the session before the last ``compact``: its file byte for byte as it was
    (summary block removed), its working context, its tools; the child, which has had no
    turn and so has no file, is dropped. The parent's state (UsageError: nothing to undo)."""
    if point is None or point.child is not child or child.live is not None or child.turns:
        raise UsageError(f"Cannot undo: {why_no_undo(child, point)}.")
    parent = point.state
    if point.data is not None and parent.live is not None:
        try:
            parent.live = store.reopen(parent.live.session_id, point.data)
        except (StoreError, TranscriptError) as exc:
            raise RollchatError(f"Cannot undo: {exc}") from None
    child.close()
    parent.summary_failed = False
    engine.put_back(point.context, point.tools)
    return parent


# ---------------------------------------------------------------------- fork and clear


def fork(compactor: Compactor, state: SessionState) -> Flow:
    """A new session from the summary of ``state`` (saved with it first, as ``exit`` does),
    ``state`` left open."""
    if not state.queries:
        raise UsageError("Nothing to fork yet: this session has no queries ('fork SESSION' "
                         "forks a saved session).")
    summary = yield from compactor.finalize(state)
    assert summary is not None
    yield saved_notice(state, compactor.around.store)
    parent = replace(state.as_parent(summary), forked=True, by_user=True)
    yield from compactor.start_child(state, parent)
    compactor.reset()
    name = state.session_id
    yield Notice("info", f"Forked {name or 'the session'}: this is a new session from its "
                         "summary" + (f"; {name} stays open ('resume {name}' continues it)."
                                      if name else "."))


def clear(compactor: Compactor, state: SessionState) -> Generator[Event, None, SessionState]:
    """A fresh session: no parent link, nothing carried. ``state`` is saved with its summary
    first, as ``exit`` does; the fresh session's state."""
    if state.queries:
        yield from compactor.finalize(state)
        yield saved_notice(state, compactor.around.store)
    state.close()
    compactor.reset()
    return SessionState(started=compactor.engine.settings.clock())


# ---------------------------------------------------------------------- the restored summary


def _body(summary: Summary) -> str:
    from rollchat.storage.transcript import render_summary_block

    return "\n".join(render_summary_block(summary).split("\n")[1:-2]) + "\n"


def show_summary(state: SessionState) -> Flow:
    """The summary this session was restored from (what the model was given)."""
    summary = state.parent_summary
    if summary is None:
        yield Notice("info", "This session has no restored summary: it did not start from "
                             "compact, resume or fork.")
        return
    edited = f", edited by you at {summary.edited}" if summary.edited else ""
    yield Notice("info", f"Restored summary (from {state.resumed_from or 'an unsaved session'}"
                         f"{edited}):")
    yield Document(_body(summary).rstrip("\n"))
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


def edit_summary(state: SessionState, engine: Engine, store: Store,
                 confirm: Callable[[str], bool], edit: Callable[[str], str]) -> Flow:
    """``summary edit``: ``edit`` (the user's editor) changes the restored summary's text; a
    valid change becomes the working context (the restoration message is rewritten, so the
    provider's prompt cache misses once) and is written into the parent's summary block,
    marked as edited by the user. An invalid one can be edited again or discarded."""
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
            if not confirm(f"The edited summary cannot be used: {exc}. Edit it again? "
                                   "(y/n) "):
                yield Notice("info", "Edit discarded: the summary is unchanged.")
                return
            text = new_text
    if replace(new, edited="") == replace(old, edited=""):
        yield Notice("info", "Summary unchanged.")
        return
    # the provider's signed block stays beside the summary in the file, no longer sent
    new = replace(new, edited=now().isoformat(timespec="seconds"), signed=old.signed,
                  signed_for=old.signed_for, framework_state=old.framework_state)
    yield from _use_summary(state, engine, store, old, new)


def _use_summary(state: SessionState, engine: Engine, store: Store, old: Summary,
                 new: Summary) -> Flow:
    from rollchat.storage.transcript import render_summary_block

    context = engine.context
    before, after = render_summary_block(old), render_summary_block(new)
    first = context.messages[0] if context.prefix_len and context.messages else None
    # sent after a signed block, the prompt does not repeat the summary: the file's has it
    whole = state.restored.user if first is not None and first.extra and \
        state.restored is not None else (first.content if first is not None else "")
    if first is None or before not in whole:
        raise RollchatError("the restored summary is no longer in the working context; "
                            "nothing was changed")
    prompt = whole.replace(before, after, 1)
    context.rewrite(0, Message("user", prompt))
    state.parent_summary = new
    if state.restored is not None:
        state.restored = replace(state.restored, user=prompt)
    parent = state.resumed_from
    where = "this session's working context"
    if parent is not None:
        try:
            store.replace_summary(parent, new)
        except (StoreError, TranscriptError) as exc:
            yield Notice("warning", f"the edit is used here but was not written to {parent}: "
                                    f"{exc}")
        else:
            where += f" and the summary block of {parent} (marked as edited by you)"
    yield Notice("info", f"Summary edited: it is now {where}.")
    if first.extra:  # the signed block holds the summary as the provider wrote it
        yield Notice("info", "The provider's signed compaction block was dropped: the next "
                             "request sends rollchat's readable summary, as edited, instead.")
    yield Notice("detail", "The next request starts with the edited summary, so the provider's "
                           "prompt cache misses once.")
