"""``rollchat -p``: one question answered, the session saved (with the local summary unless
``summary.one_shot: model``), and an exit status saying how it went (docs/oneshot.md). Tools
run only as the approval rules allow: a call that would ask is refused, and the model sees it."""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable, Generator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING

from rollchat.cli.oneshot_output import INTERRUPTED, USAGE, Outcome, Output
from rollchat.errors import RollchatError, UsageError
from rollchat.events import Ended, Event, Notice, Saved, TurnFinished
from rollchat.ui.render import Renderer, Segment

if TYPE_CHECKING:
    from rollchat.agents.file import LoadedAgent
    from rollchat.config.settings import Config, ConfigOverrides
    from rollchat.session.core import Session
    from rollchat.session.forks import Forking

__all__ = ["USAGE", "join_context", "read_prompt", "run_one_shot"]


class StderrRenderer(Renderer):
    """Every line the session has for the user (notices, warnings, errors) on stderr, plain:
    stdout holds the answer only."""

    def __init__(self) -> None:
        super().__init__(interactive=False)

    def line(self, *segments: Segment, hang: int = 0) -> None:
        from rollchat.ui.sanitize import harmless

        sys.stderr.write(harmless("".join(text for text, _ in segments)) + "\n")
        sys.stderr.flush()


def join_context(prompt: str, context: str) -> str:
    """The question, then what was piped in a fenced block (a fence longer than any backtick
    run inside it, so that the context cannot close it)."""
    if not context.strip():
        return prompt
    longest = max((len(run) for run in re.findall("`+", context)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{prompt}\n\n{fence}\n{context.rstrip(chr(10))}\n{fence}"


def read_prompt(prompt: str | None, stdin: IO[bytes] | None) -> str:
    """The message to send: ``prompt`` with piped ``stdin`` as its context, or, with no
    ``prompt``, stdin itself (None: stdin is a terminal, nothing was piped). UsageError when
    there is no question."""
    from rollchat.text.normalize import clean_bytes

    piped = clean_bytes(stdin.read()) if stdin is not None else ""
    if prompt is None:
        if stdin is None:
            raise UsageError('-p with no prompt reads it from stdin, and stdin is a terminal: '
                             'rollchat -p "question", or pipe the question in')
        if not piped.strip():
            raise UsageError("-p read an empty prompt from stdin: nothing to ask")
        return piped.strip("\n")
    if not prompt.strip():
        raise UsageError('-p was given an empty prompt: rollchat -p "question"')
    return join_context(prompt, piped)


def run_one_shot(config_path: Path | None, overrides: ConfigOverrides, *, prompt: str | None,
                 output_format: str, resume: str | None, last: bool, yes: bool,
                 agent_file: Path | None, fork: str | None = None,
                 trust_input: bool = False) -> int:
    """Answer one question and save it; the exit status (see oneshot_output). ``resume``
    (``last``: the session used last) continues a saved session, ``fork`` branches off one.
    ConfigError / UsageError for a mistake in what was given."""
    from rollchat.cli import start
    from rollchat.config.load import load_config

    env = dict(os.environ)
    cfg = load_config(config_path=config_path, env=env, cwd=Path.cwd(), overrides=overrides)
    text = read_prompt(prompt, None if sys.stdin.isatty() else sys.stdin.buffer)
    cfg, loaded = start.load_agent_file(cfg, agent_file, overrides, env)
    name, reason, model = start.checked_provider(cfg, env, loaded)
    if last:
        from rollchat.cli.reading import choose_session

        try:
            resume = choose_session(cfg, "last", interactive=False)
        except RollchatError as exc:  # nothing to continue: as a session not found
            raise UsageError(str(exc)) from None
    out = StderrRenderer()
    for line in cfg.warnings:
        out.warn(line)
    if (note := start.offline_model_note(name, model, reason)) is not None:
        out.warn(note)
    outcome = Outcome(model=model, provider=name, agent=cfg.agent.name)
    output = Output(output_format, outcome)
    question = Question(cfg, env, name, model, text, resume, yes, loaded, fork=fork,
                        forking=one_shot_forking("-c" if last else "--resume", yes=yes),
                        trust_input=trust_input)
    code = _answered(question, out, output)
    output.done()
    return code if code is not None else outcome.exit_code


@dataclass(frozen=True)
class Question:
    """What the one-shot run asks, and of whom."""

    cfg: Config
    env: dict[str, str]
    provider: str
    model: str
    text: str
    resume: str | None
    yes: bool
    loaded: LoadedAgent | None
    fork: str | None  # the saved session to branch off (--fork), left as it is
    forking: Forking  # a resumed session open elsewhere: forked with --yes, else why not
    trust_input: bool = False  # --trust-input: piped text is the user speaking (memory)


def one_shot_forking(given: str, *, yes: bool) -> Forking:
    """How a one-shot resume treats a session open in another process, and how it says to
    branch off an older state: with the option a script types (``--fork ID``), not the chat's
    ``fork N`` (numbers move as sessions are made; the id stays). Without --yes a session open
    elsewhere is not forked unasked, and --yes here also approves every tool call, so the
    refusal names ``--fork``, which forks and approves nothing. ``given``: the option that
    chose the session (--resume or -c)."""
    from rollchat.session.forks import Forking

    def refusal(session_id: str) -> str:
        return (f"without a terminal a fork needs --yes, which in a one-shot run also approves "
                f"every tool call: to continue in a fork of it, give --fork {session_id} in "
                f"place of {given} (or exit it there first)")

    return Forking(refusal=None if yes else refusal,
                   words=lambda info: f"--fork {info.session_id}")


def _answered(question: Question, out: Renderer, output: Output) -> int | None:
    """Ask the question (in the resumed session, if one was named), then save the session with
    its summary. The exit status when a signal or a Ctrl-C outside the answer ended it (None:
    as the answer says)."""
    from rollchat.cli import start
    from rollchat.interrupts import ending, ending_signals

    closers: list[Callable[[], None]] = []
    session = None
    code = None
    with ending_signals():
        try:
            session = _session(question, out, closers)
            if question.resume is not None:
                _restored(session.resume(question.resume), session, out)
            elif question.fork is not None:
                _restored(session.fork(question.fork), session, out)
            output.start()
            _drive(session.turn(question.text), out, output.outcome, output.event)
        except KeyboardInterrupt:  # (a signal, too) before the question was asked
            code = INTERRUPTED
            if session is not None and output.outcome.turn is None:  # kept all the same
                _drive(session.unsent(question.text), out, output.outcome)
        finally:
            try:
                if session is not None:
                    _finish(session, out, output.outcome,
                            local=question.cfg.summary.one_shot == "local")
            finally:
                start.close_all(closers)
    signum = ending()
    return 128 + signum if signum is not None else code


def _session(question: Question, out: Renderer, closers: list[Callable[[], None]]) -> Session:
    """The session the question goes to: the chat's, built with nobody to ask."""
    from rollchat.cli import start

    cfg = question.cfg
    store, problem = start.open_store(cfg)
    if problem is not None:
        raise RollchatError(problem)
    build = start.SessionBuilder(question.env, out, store, interactive=False, yes=question.yes,
                                 no_fork=False, closers=closers, save_failed=False,
                                 forking=question.forking, trust_input=question.trust_input)
    session = build.session(cfg, question.provider, question.model,
                            start.equipment_of(cfg.agent, question.loaded))
    for note in session.memory.notes if session.memory is not None else ():
        out.warn(note)  # memory found in the project, facts to review
    return session


def _restored(flow: Generator[Event, None, None], session: Session, out: Renderer) -> None:
    """Run ``flow``, the session's resume or fork of a saved session (as in the chat: in a new
    linked session); a session it cannot find is a usage error. A Ctrl-C that cut the
    restoration short ends the run (KeyboardInterrupt), where the chat would go on."""
    from rollchat.providers.base import ProviderError

    try:
        _drive(flow, out)
        restored = session.state.restored
        if restored is not None and restored.status == "interrupted":
            raise KeyboardInterrupt  # Ctrl-C stopped the restoration: the run, not just that
    except ProviderError:
        raise
    except UsageError:
        raise
    except RollchatError as exc:
        raise UsageError(str(exc)) from None


def _drive(flow: Generator[Event, None, None], out: Renderer, outcome: Outcome | None = None,
           each: Callable[[Event], None] | None = None) -> None:
    """Run ``flow``: its notices on stderr, the events to ``each``; a Ctrl-C while an event
    is handled goes to the flow where it stopped (an answer records itself as interrupted)."""
    resume: Callable[[], Event] = flow.__next__
    while True:
        try:
            event = resume()
        except StopIteration:
            return
        try:
            _seen(event, out, outcome)
            if each is not None:
                each(event)
            resume = flow.__next__
        except KeyboardInterrupt:
            resume = _thrower(flow)


def _thrower(flow: Generator[Event, None, None]) -> Callable[[], Event]:
    def throw() -> Event:
        return flow.throw(KeyboardInterrupt())
    return throw


def _seen(event: Event, out: Renderer, outcome: Outcome | None) -> None:
    if isinstance(event, Notice):
        {"info": out.dim, "detail": out.dim, "warning": out.warn,
         "error": out.error}[event.level](event.text)
    elif outcome is None:
        return
    elif isinstance(event, TurnFinished):
        outcome.turn, outcome.cost = event.turn, event.cost
        if event.turn.status in ("unanswered", "error") and event.turn.error and \
                " tokens reached (" not in event.turn.error:  # (a cut-off: its warning said
            out.error(event.turn.error)  # it, and the answer is there: exit 0, see docs)
        if event.hint and "Up and Enter" not in event.hint and "history" not in event.hint:
            out.dim(event.hint)  # (those two speak of the chat's prompt)
    elif isinstance(event, Saved):
        outcome.session_id = event.session_id
    elif isinstance(event, Ended):
        outcome.session_id = event.session_id or outcome.session_id
        outcome.total_usage, outcome.total_cost = event.run_usage, event.run_cost


def _finish(session: Session | None, out: Renderer, outcome: Outcome, *, local: bool) -> None:
    """Save the session with its summary (``local``: the local one) and note where it is. A
    Ctrl-C now cannot cut it short."""
    from rollchat.interrupts import settle, sigint_deferred

    if session is None:
        return
    with sigint_deferred(deliver=False):
        _drive(session.exit(how="local" if local else "model"), out, outcome)
    settle()
    store = session.store
    if outcome.session_id is not None and hasattr(store, "path_for"):
        outcome.session_path = str(store.path_for(outcome.session_id))

