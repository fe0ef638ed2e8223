"""The chat in a terminal: feeds input to the Session and draws the events of its flows.

No decisions here: the session decides, this adapter only shows what happened.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from contextlib import ExitStack

from rollchat.engine import describe_call
from rollchat.events import (
    AnswerAborted,
    AnswerStarted,
    CompactionFinished,
    CompactionStarted,
    Ended,
    Event,
    FactRemembered,
    Notice,
    Retrying,
    SummaryFinished,
    SummaryStarted,
    ToolFinished,
    ToolStarted,
    TurnFinished,
)
from rollchat.providers.base import TextDelta
from rollchat.session import Session
from rollchat.text import human_tokens, plural
from rollchat.ui.render import Renderer, Step

SUMMARY_STEP = "Generating session summary..."


class ChatApp:
    """One chat on one screen: runs the session's flows and draws their events."""

    def __init__(self, session: Session, renderer: Renderer) -> None:
        self.session = session
        self.out = renderer
        self._spinner = ExitStack()
        self._step: Step | None = None

    # ------------------------------------------------------------------ flows
    def send(self, text: str) -> None:
        self.run(self.session.turn(text))

    def compact(self, focus: str | None = None) -> None:
        self.run(self.session.compact(focus))

    def resume(self, ref: str) -> None:
        self.run(self.session.resume(ref))

    def remember(self, text: str) -> None:
        self.run(self.session.remember(text))

    def forget(self, fact_id: int) -> None:
        self.run(self.session.forget(fact_id))

    def keep_unsent(self, text: str) -> None:
        self.run(self.session.unsent(text))

    def exit(self, within: float | None = None) -> None:
        self.run(self.session.exit(within))

    def run(self, flow: Generator[Event, None, None]) -> None:
        """Draw every event of ``flow``. Ctrl-C while an event is drawn is handed to the flow
        at the point it stopped (an answer streaming records itself as interrupted)."""
        resume: Callable[[], Event] = flow.__next__
        try:
            while True:
                try:
                    event = resume()
                except StopIteration:
                    return
                try:
                    self.draw(event)
                    resume = flow.__next__
                except KeyboardInterrupt:
                    resume = _thrower(flow)
        finally:
            self._end_spinner()

    # ------------------------------------------------------------------ drawing
    def draw(self, event: Event) -> None:
        out = self.out
        if isinstance(event, TextDelta):
            out.answer_delta(event.text)
        elif isinstance(event, AnswerStarted):
            out.answer_start(event.agent)
        elif isinstance(event, TurnFinished):
            out.answer_end(event.turn, event.hint)
        elif isinstance(event, AnswerAborted):
            out.answer_abort()
        elif isinstance(event, Notice):
            {"info": out.info, "detail": out.dim, "warning": out.warn,
             "error": out.error}[event.level](event.text)
        elif isinstance(event, Retrying):
            out.dim(f"{event.error}; retrying in {event.wait:.1f}s (attempt {event.attempt})")
        elif isinstance(event, ToolStarted):
            out.tool_call(describe_call(event.call, full=out.show_tools))
        elif isinstance(event, ToolFinished):
            out.tool_result(event.call.name, event.result, event.elapsed, event.status)
        elif isinstance(event, SummaryStarted):
            self._step = self._spinner.enter_context(out.spinner(SUMMARY_STEP))
        elif isinstance(event, SummaryFinished):
            if self._step is not None and event.fallback is None:
                self._step.done_text = "done"  # a fallback is told by a warning
            self._end_spinner()
        elif isinstance(event, CompactionStarted) and event.automatic:
            out.info(f"{event.reason[:1].upper()}{event.reason[1:]}: compacting "
                     f"(window {human_tokens(event.window)}).")
        elif isinstance(event, CompactionFinished) and event.automatic:
            kept = (f"the last {plural(event.kept, 'turn')} kept verbatim" if event.kept
                    else "no recent turn kept: too large for this window")
            out.info(f"Compacted {event.parent_id or 'this session'} into a summary; "
                     f"continuing in a new session ({kept}).")
        elif isinstance(event, FactRemembered):
            out.dim(f"Remembered: {event.fact.text} (forget {event.fact.id})")
        elif isinstance(event, Ended):
            self._goodbye(event)

    def _end_spinner(self) -> None:
        self._step = None
        self._spinner.close()

    def _goodbye(self, end: Ended) -> None:
        if end.queries or end.restored:
            billed = f"Tokens billed: {end.tokens + end.restoration_tokens:,}"
            if end.restoration_tokens:
                billed += (f" ({end.tokens:,} for the queries, {end.restoration_tokens:,} "
                           "restoring the context)")
            lines = [f"Queries: {end.queries}", billed]
            if end.session_id and end.save_failed:
                self.out.warn(f"Session {end.session_id} holds only the turns saved before "
                              "the error; the later ones were not saved")
            elif end.session_id and end.summary_failed:
                self.out.warn(f"Session {end.session_id} holds every turn but no summary; "
                              "resuming it summarizes it then")
            elif end.session_id:
                self.out.info(f"Saved session: {end.session_id}")
            self.out.info(" | ".join(lines))
        self.out.info("Goodbye!")


def _thrower(flow: Generator[Event, None, None]) -> Callable[[], Event]:
    def throw() -> Event:
        return flow.throw(KeyboardInterrupt())
    return throw
