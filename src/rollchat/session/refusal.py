"""A chat request refused as too long: learn the model's real window from the refusal, compact
with it, and send the message again once. Never the same oversized request twice."""

from __future__ import annotations

from collections.abc import Generator

from rollchat.compaction import policy
from rollchat.domain import Message
from rollchat.engine.core import Answer
from rollchat.events import AnswerAborted, AnswerStarted, Event, Notice
from rollchat.providers.base import ContextTooLongError
from rollchat.session.compactor import Compactor
from rollchat.session.state import SessionState


def after_refusal(compactor: Compactor, state: SessionState, answer: Answer, pending: Message,
                  text: str, block: str = "") -> Generator[Event, None, Answer]:
    """``answer`` is the unanswered turn of ``pending`` (the user's ``text`` after its context
    ``block``), refused as too long. Learns the window (the one the server states, else half
    the assumption), then compacts and sends once more when that can help; returns the answer
    the user gets (the session continues in a child when it compacted)."""
    assert isinstance(answer.error, ContextTooLongError)
    engine = compactor.engine
    learned = compactor.windows.refused(answer.error, compactor.estimate([pending]))
    if compactor.auto_mode == "off":
        if learned is not None:
            yield Notice("warning", learned.line("automatic compaction is off, so the message "
                                                 "was not sent again"))
        return answer
    yield AnswerAborted()
    yield Notice("warning", "The provider says the context is too long.")
    size = compactor.counter.count_messages(engine.context.system, [pending],
                                            [t.spec for t in engine.tools.values()])
    alone = policy.too_big(size, compactor.budget, engine.model)
    compacted = False
    if alone is None:
        retry = policy.plan(compactor.situation(state, pending, refused=True))
        if retry.compact:
            compacted = yield from compactor.auto_compact(state, retry, pending)
    if not compacted:
        if learned is not None:
            why = (f"your message alone is about {size:,} tokens" if alone is not None
                   else "compacting did not help")
            yield Notice("warning", learned.line(f"{why}; it was not sent again"))
        return answer
    yield Notice("info", learned.line("compacted and retried") if learned is not None
                 else "Sending your message again.")
    yield AnswerStarted(compactor.agent.name)
    again: Answer = yield from engine.chat(text, block, pending.images)
    if again.turn.status == "unanswered" and isinstance(again.error, ContextTooLongError):
        more = compactor.windows.refused(again.error, compactor.estimate([pending]))
        if more is not None:  # remembered for the next message; not sent a third time
            yield Notice("warning", more.line("refused again; not sent a third time"))
    return again
