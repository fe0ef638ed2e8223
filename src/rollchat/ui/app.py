"""The chat in a terminal: feeds input to the Session and draws the events of its flows.

No decisions here: the session decides, this adapter only shows what happened.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Generator
from contextlib import ExitStack
from pathlib import Path

from rollchat.config.saved_prompts import SavedPrompt, SavedPrompts
from rollchat.domain import ToolCall
from rollchat.errors import RollchatError, StoreError, UsageError
from rollchat.events import (
    AnswerAborted,
    AnswerStarted,
    CompactionFinished,
    CompactionStarted,
    Document,
    Ended,
    Event,
    FactRemembered,
    Notice,
    Retrying,
    ServersStarting,
    SummaryFinished,
    SummaryStarted,
    ToolFinished,
    ToolStarted,
    TurnFinished,
)
from rollchat.models.prices import money
from rollchat.providers.base import TextDelta, ThinkingDelta
from rollchat.providers.names import OFFLINE
from rollchat.session.attach import Attachment, message_with, read_attachment
from rollchat.session.core import Session
from rollchat.session.saved_prompt import fill_prompt
from rollchat.session.steps import kept_in_memory
from rollchat.text.wording import billed_breakdown, human_tokens, plural
from rollchat.ui.render import Renderer, Step
from rollchat.ui.starting_servers import StartingLine

SUMMARY_STEP = "Generating session summary..."


class ChatApp:
    """One chat on one screen: runs the session's flows and draws their events. ``session``
    is the agent the chat talks to; ``@NAME message`` hands the conversation to another
    agent's session (made by ``build`` from its key), which the chat talks to from then on."""

    def __init__(self, session: Session, renderer: Renderer,
                 build: Callable[[str], Session] | None = None,
                 prompts: SavedPrompts | None = None) -> None:
        self.session = session
        self.prompts = prompts or SavedPrompts()  # ``/NAME``: the saved prompts found
        self.out = renderer
        self.build = build
        self.sessions: dict[str, Session] = {session.agent.key: session}  # this chat's agents
        self.handed = False  # a handoff happened: the prompt names the agent
        self.unsent_input: str | None = None  # typed text not sent, for the next prompt
        self.attachments: list[Attachment] = []  # ``attach``: sent with the next message
        self.outside_allowed: set[Path] = set()  # files outside the project the user allowed
        self._spinner = ExitStack()
        self._step: Step | None = None
        self._starting = StartingLine(self.out)  # MCP servers the first message waits for
        self._stopped = False  # the last turn drawn was stopped by the user (Ctrl-C): no bell

    @property
    def recorded(self) -> int:
        """User messages recorded by all of this chat's sessions."""
        return sum(s.recorded for s in self.sessions.values())

    def take_unsent(self) -> str:
        text, self.unsent_input = self.unsent_input or "", None
        return text

    # ------------------------------------------------------------------ flows
    def send(self, text: str) -> None:
        """Send ``text`` with the files attached since the last message."""
        if not self.attachments:
            self.answer(self.session.turn(text))
            return
        sent, images = message_with(text, self.attachments)
        self.attachments = []
        self.answer(self.session.turn(sent, attached=images))

    def send_prompt(self, prompt: SavedPrompt, args: str, typed: str) -> None:
        """Send the saved ``prompt`` filled with ``args`` (with the files attached), its
        ``allowed-tools`` allowed for this one turn; the transcript keeps ``typed`` beside it.
        What the prompt's front matter asks and rollchat cannot do is said first."""
        for note in prompt.notes:
            self.out.dim(note)
        if not prompt.expand(args).strip():
            raise UsageError(f"{prompt.display} is empty: nothing to send")
        with ExitStack() as scope:
            if prompt.model is not None:
                self._prompt_model(scope, prompt)
            filled = fill_prompt(prompt, args, gate=self.session.gate, cwd=Path.cwd())
            for line in filled.lines:
                self.out.dim(line)
            attached = [*self.attachments, *filled.attachments]
            sent, images = (message_with(filled.text, attached) if attached
                            else (filled.text, ()))
            self.attachments = []
            scope.enter_context(self.session.allowing(prompt.allowed))
            self.answer(self.session.turn(sent, attached=images, typed=typed))

    def _prompt_model(self, scope: ExitStack, prompt: SavedPrompt) -> None:
        """The saved ``prompt``'s ``model:`` answers its turn only (said in one line); one the
        provider does not serve refuses the prompt (UsageError). The offline model has no
        other model: it answers, and says so."""
        model, session = prompt.model or "", self.session
        if session.provider_name == OFFLINE:
            self.out.dim(f"/{prompt.name} asks for the model {model}: the offline model "
                         "answers it (it has no other)")
            return
        try:
            chat_model = scope.enter_context(session.model_for_turn(model, f"/{prompt.name}"))
        except UsageError as exc:
            raise UsageError(f"/{prompt.name} not sent ({prompt.display} asks for it): "
                             f"{exc}") from None
        if chat_model != model:
            self.out.dim(f"{model} answers /{prompt.name} (its front matter asks for it); "
                         f"{chat_model} again after it")

    def attach(self, name: str) -> None:
        """Attach the file ``name`` to the next message (UsageError when it cannot be)."""
        attachment = read_attachment(name, Path.cwd(),
                                     self._allow_outside if self.out.interactive else None)
        self.attachments.append(attachment)
        self.out.info(f"Attached {attachment.describe()}: it goes with your next message.")

    def _allow_outside(self, path: Path) -> bool:
        """Whether the user lets ``attach`` read ``path``, outside the project: asked once
        per file in a chat (no by default)."""
        if path not in self.outside_allowed:
            from rollchat.ui.ask import ask

            if not ask(f"{path} is outside this project. Send it to the model?",
                       {"y": True, "yes": True, "n": False, "no": False}, "y/N", self.out,
                       safe=False, default=False):
                return False
            self.outside_allowed.add(path)
        return True

    def compact(self, focus: str | None = None) -> None:
        self.run(self.session.compact(focus, undoable=True))

    def fork(self, ref: str | None = None) -> None:
        self.run(self.session.fork(ref))

    def clear(self) -> None:
        self.run(self.session.clear())

    def undo(self) -> None:
        self.run(self.session.undo())

    def summary(self, edit: bool = False) -> None:
        if not edit:
            self.run(self.session.show_summary())
            return
        from rollchat.ui.editor import edit_text

        self.run(self.session.edit_summary(edit_text))

    def resume(self, ref: str) -> None:
        self.run(self.session.resume(ref))

    def pick_session(self) -> str | None:
        """The id of a saved session chosen in the picker (a bare ``resume``), or None when
        there is none to choose or the picker was cancelled. Only in a terminal: UsageError
        otherwise (a piped chat says ``resume SESSION``)."""
        if not self.out.interactive:
            raise UsageError("usage: resume SESSION (its number in 'sessions', its id or an "
                             "id prefix; in a terminal a bare 'resume' opens the picker)")
        current = self.session.state.session_id
        sessions, _ = self.session.list_sessions()  # this session too, marked
        if not any(s.session_id != current for s in sessions):
            self.out.info("No other saved session to resume.")
            return None
        from rollchat.ui.picker import pick

        picked = pick(sessions, self.session.store.load_summary, current=current)
        if picked.info is None:
            self.out.info("No session chosen.")
            return None
        return picked.info.session_id

    def remember(self, text: str) -> None:
        self.run(self.session.remember(text))

    def forget(self, fact_id: int) -> None:
        self.run(self.session.forget(fact_id))

    def keep_unsent(self, text: str) -> None:
        self.run(self.session.unsent(text))

    def handoff(self, key: str, message: str, line: str) -> None:
        """``@key message``: hand the conversation to agent ``key`` (see handoff.py) and talk
        to it from now on. An unknown agent or a missing message sends nothing and puts
        ``line`` back in the input."""
        from rollchat.session.handoff import hand_off, latest_in_chain

        agents = self.session.config.agents
        if key not in agents:
            folded = [k for k in agents if k.casefold() == key.casefold()]
            key = folded[0] if len(folded) == 1 else key
        if key not in agents:
            self.unsent_input = line
            self.out.error(f"no agent {key}; agents: {', '.join(agents)} (nothing was sent)")
            return
        if not message:
            self.unsent_input = line
            self.out.error(f"@{key} needs a message: @{key} MESSAGE (nothing was sent)")
            return
        if key == self.session.agent.key:
            self.out.info(f"Already talking to {self.session.agent.name}.")
            self.send(message)
            return
        target, previous = self.sessions.get(key), None
        if target is None:
            try:
                if self.build is None:
                    raise RollchatError("this chat cannot hand over to another agent")
                target = self.build(key)
                previous = latest_in_chain(target.store, self.session.state, target.agent)
            except StoreError as exc:
                self.out.warn(f"earlier sessions of {key} not looked up: {exc}")
            except RollchatError as exc:
                self.unsent_input = line
                self.out.error(f"cannot hand over to {key}: {exc} (nothing was sent)")
                return
        assert target is not None
        before = target.recorded
        try:
            self.answer(hand_off(self.session, target, message, previous))
        except RollchatError:  # e.g. its earlier session could not be resumed: not sent
            if target.recorded == before:
                self.unsent_input = line
            raise
        finally:
            if target.recorded > before:  # the message is the target's now: talk to it
                self.sessions[key] = self.session = target
                self.handed = True

    def exit(self, within: float | None = None) -> None:
        """Save every session of the chat with its summary, the current one last."""
        for other in list(self.sessions.values()):
            if other is not self.session:
                self.run(_ended_quietly(other.exit(within)))
        self.run(self.session.exit(within))

    def answer(self, flow: Generator[Event, None, None]) -> None:
        """``run`` a turn's flow; when it took at least ``ui.notify_after_seconds`` (0: never),
        ring the terminal's bell (with a desktop notification where the terminal shows one),
        so a user who switched windows hears it. Only in a terminal: never piped; never for a
        turn the user stopped with Ctrl-C (they are looking at it)."""
        after = self.session.config.ui.notify_after_seconds
        started = time.monotonic()
        self._stopped = False
        try:
            self.run(flow)
        except KeyboardInterrupt:
            self._stopped = True
            raise
        finally:
            seconds = time.monotonic() - started
            if after and seconds >= after and self.out.interactive and not self._stopped:
                from rollchat.ui.bell import bell_bytes, took

                self.out.control(bell_bytes(os.environ, f"{self.session.agent.name} answered "
                                            f"(took {took(seconds)})"))

    def run(self, flow: Generator[Event, None, None]) -> None:
        """Draw every event of ``flow``. Ctrl-C while an event is drawn is handed to the flow
        at the point it stopped (an answer streaming records itself as interrupted)."""
        resume: Callable[[], Event] = flow.__next__
        try:
            while True:
                try:
                    event = resume()
                except StopIteration:
                    for found in self.session.take_memory_events():  # (in the background)
                        self.draw(found)
                    return
                try:
                    self.draw(event)
                    resume = flow.__next__
                except KeyboardInterrupt:
                    resume = _thrower(flow)
        finally:
            self._starting.end()
            self._end_spinner()

    # ------------------------------------------------------------------ drawing
    def draw(self, event: Event) -> None:
        out = self.out
        if isinstance(event, ServersStarting):
            self._starting.show(event)
            return
        self._starting.end()  # (a Ctrl-C during the wait: the next event ends the line)
        if isinstance(event, TextDelta):
            out.answer_delta(event.text)
        elif isinstance(event, ThinkingDelta):
            out.thinking_delta(event.text)
        elif isinstance(event, AnswerStarted):
            out.answer_start(event.agent)
        elif isinstance(event, TurnFinished):
            self._stopped = event.turn.status == "interrupted"
            out.answer_end(event.turn, event.hint, event.cost, event.cost_unknown)
        elif isinstance(event, AnswerAborted):
            out.answer_abort()
        elif isinstance(event, Notice):
            {"info": out.info, "detail": out.dim, "warning": out.warn,
             "error": out.error}[event.level](event.text)
        elif isinstance(event, Document):
            out.document(event.text)
        elif isinstance(event, Retrying) and event.attempt == 1:  # said once: later attempts
            out.dim(f"{event.error}; retrying in {event.wait:.1f}s (attempt 1)")  # are quiet
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
            lines = [billed_breakdown(end.queries, end.tokens, end.restoration_tokens,
                                      end.summary_tokens, end.memory_tokens), *_costs(end)]
            if end.session_id and end.in_memory:
                self.out.info(kept_in_memory(end.session_id))
            elif end.session_id and end.save_failed:
                self.out.warn(f"Session {end.session_id} holds only the turns saved before "
                              "the error; the later ones were not saved")
            elif end.session_id and end.summary_failed:
                self.out.warn(f"Session {end.session_id} holds every turn but no summary; "
                              "resuming it summarizes it then")
            elif end.session_id:
                self.out.info(f"Saved session: {end.session_id}")
            self.out.info(" | ".join(lines))
        self.out.info("Goodbye!")


def _costs(end: Ended) -> list[str]:
    """The session's cost and its chain's, when the price is known; that it is unknown for a
    remote model with no price (never $0)."""
    if end.cost is None:
        return [] if end.unpriced_model is None else [
            f"Cost: unknown (no price for {end.unpriced_model}; set one with models: "
            f"{end.unpriced_model}: price: in the config)"]
    out = [f"Cost: {money(end.cost)}"]
    if end.chain_sessions > 1 and end.chain_cost is not None:
        unpriced = (f"; {plural(end.chain_unpriced, 'session')} without a recorded cost"
                    if end.chain_unpriced else "")
        out.append(f"Chain ({end.chain_sessions} sessions{unpriced}): {money(end.chain_cost)}")
    return out


def _ended_quietly(flow: Generator[Event, None, None]) -> Generator[Event, None, None]:
    """An exit flow of a session the chat no longer talks to, its end told in one line (no
    goodbye); a Ctrl-C while an event is drawn goes on to the flow, as ``run`` does."""
    try:
        event = next(flow)
        while True:
            shown: Event | None = event
            if isinstance(event, Ended):
                shown = None if not event.session_id else Notice(
                    "info", kept_in_memory(event.session_id) if event.in_memory
                    else f"Saved session: {event.session_id}")
            try:
                if shown is not None:
                    yield shown
            except GeneratorExit:
                flow.close()
                raise
            except BaseException as exc:  # handed to the flow where it stopped
                event = flow.throw(exc)
            else:
                event = next(flow)
    except StopIteration:
        return


def _thrower(flow: Generator[Event, None, None]) -> Callable[[], Event]:
    def throw() -> Event:
        return flow.throw(KeyboardInterrupt())
    return throw


def describe_call(call: ToolCall, *, full: bool = False, limit: int = 100) -> str:
    """``name(arguments)``: compact (long values cut to ``limit`` characters), or ``full``."""
    args = json.dumps(dict(call.arguments), ensure_ascii=False, indent=2 if full else None)
    if not full and len(args) > limit:
        args = args[:limit - 1] + "…"
    return f"{call.name}({args})"
