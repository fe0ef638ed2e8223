"""A chat request refused as too long: learn the model's real window from the refusal, compact
with it, and send the message again once. Never the same oversized request twice."""

from __future__ import annotations

from collections.abc import Generator
from typing import TYPE_CHECKING

from rollchat.compaction import policy
from rollchat.domain import Message
from rollchat.engine.core import Answer
from rollchat.events import AnswerAborted, AnswerStarted, Event, Notice
from rollchat.providers.base import ContextTooLongError

if TYPE_CHECKING:
    from rollchat.session.core import Session


def after_refusal(session: Session, answer: Answer, pending: Message, text: str,
                  block: str = "") -> Generator[Event, None, Answer]:
    """``answer`` is the unanswered turn of ``pending`` (the user's ``text`` after its context
    ``block``), refused as too long. Learns the
    window (the one the server states, else half the assumption), then compacts and sends
    once more when that can help; returns the answer the user gets."""
    assert isinstance(answer.error, ContextTooLongError)
    learned = session.windows.refused(answer.error, session.estimate([pending]))
    if session.auto_mode == "off":
        if learned is not None:
            yield Notice("warning", learned.line("automatic compaction is off, so the message "
                                                 "was not sent again"))
        return answer
    yield AnswerAborted()
    yield Notice("warning", "The provider says the context is too long.")
    size = session.counter.count_messages(session.engine.context.system, [pending],
                                          [t.spec for t in session.engine.tools.values()])
    alone = policy.too_big(size, session.budget, session.engine.model)
    compacted = False
    if alone is None:
        retry = policy.plan(session._situation(pending, refused=True))
        if retry.compact:
            compacted = yield from session._auto_compact(retry, pending)
    if not compacted:
        if learned is not None:
            why = (f"your message alone is about {size:,} tokens" if alone is not None
                   else "compacting did not help")
            yield Notice("warning", learned.line(f"{why}; it was not sent again"))
        return answer
    yield Notice("info", learned.line("compacted and retried") if learned is not None
                 else "Sending your message again.")
    yield AnswerStarted(session.agent.name)
    again: Answer = yield from session.engine.chat(text, block)
    if again.turn.status == "unanswered" and isinstance(again.error, ContextTooLongError):
        more = session.windows.refused(again.error, session.estimate([pending]))
        if more is not None:  # remembered for the next message; not sent a third time
            yield Notice("warning", more.line("refused again; not sent a third time"))
    return again
