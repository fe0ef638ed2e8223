"""The two front ends of a chat: the prompt_toolkit REPL for a terminal, and piped input.

Both route each line to a command or to the model through ``handle_line``.
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rollchat.errors import RollchatError
from rollchat.interrupts import (
    ENDING_SUMMARY_SECONDS,
    Terminated,
    at_prompt,
    ending,
    raise_ending,
    settle,
)
from rollchat.text.normalize import clean_bytes
from rollchat.text.wording import context_size, plural
from rollchat.ui import commands
from rollchat.ui.idle import IdleExtraction
from rollchat.ui.sanitize import harmless

if TYPE_CHECKING:
    from prompt_toolkit import PromptSession
    from prompt_toolkit.formatted_text import AnyFormattedText, StyleAndTextTuples
    from prompt_toolkit.input import Input
    from prompt_toolkit.output import Output

    from rollchat.storage.listing import SessionInfo
    from rollchat.ui.app import ChatApp
    from rollchat.ui.starting import Starting


def _note_typing(text: str) -> None:
    """Tell the provider lanes the prompt's text changed (imported at the first keystroke, not
    before the first prompt: the lanes import the value types)."""
    from rollchat.providers.lanes import note_typing

    note_typing(text)


def handle_line(app: ChatApp, line: str) -> bool:
    """Run one line of input. Returns True when the chat should end. Whatever happens, an
    answer left open is closed and the terminal gets its echo back."""
    try:
        return _run_line(app, line)
    finally:
        app.out.close()


def _run_line(app: ChatApp, line: str) -> bool:
    parsed = commands.parse(line)
    if isinstance(parsed, commands.Mention):  # hand the conversation to agent NAME
        app.handoff(parsed.agent, parsed.message, line)
        return False
    if parsed is None:
        if line.strip():
            app.send(line)
        return False
    try:
        if isinstance(parsed, commands.Unknown):
            prompt = app.prompts.find(parsed.word)
            if prompt is None:
                app.out.error(f"unknown command /{parsed.word} (not sent to the model); "
                              "type 'help' for the commands and saved prompts")
                return False
            app.send_prompt(prompt, parsed.arg, line.strip())
            return False
        command, arg = parsed
        return command.run(app, arg)
    except RollchatError as exc:
        app.out.error(str(exc))
        return False


def finish(app: ChatApp) -> None:
    """End the chat: save with a summary. Ctrl-C here falls back, never loses the file. Ending
    on a signal (SIGTERM, SIGHUP) the summary is the model's only if it comes quickly."""
    signum = ending()
    try:
        if app.session.finished:  # (a signal after the chat ended)
            return
        if signum is not None:
            settle()
            app.out.warn(f"{signal.Signals(signum).name} received: saving the session, then "
                         "exiting")
        app.exit(ENDING_SUMMARY_SECONDS if signum is not None else None)
    except KeyboardInterrupt:
        app.out.warn("interrupted while saving; the transcript is on disk")
    finally:
        settle()  # the chat is over: a signal from now on only sets the exit status
        app.out.close()


def run_piped(chat: Starting, lines: Iterable[bytes]) -> None:
    """Answer each line of a non-terminal input (bytes: what is not UTF-8 becomes U+FFFD, see
    rollchat.text.normalize), then save and exit. A Ctrl-C ends it (after saving)."""
    try:
        for raw in lines:
            line = clean_bytes(raw.rstrip(b"\r\n"))
            if line.strip():
                chat.out.dim(f"You: {line}")
            _note_typing("")  # sent: what it asks goes at once (providers/lanes.py)
            if _handle(chat, line, stop_on_interrupt=True) or ending():
                break
    except KeyboardInterrupt:  # while reading the input
        if not ending():
            chat.out.warn("interrupted")
    finish(chat.get())


# The gauge's hint and style per level (see policy.gauge_level: 70%, 85%, 95% of the window).
GAUGE_HINTS = (None, "compact soon", "type compact", "type compact now")
GAUGE_STYLES = ("", "noreverse bg:ansiyellow fg:ansiblack",
                "noreverse bg:#ff8700 fg:ansiblack bold", "noreverse bg:ansired fg:ansiwhite bold")


def gauge(used: int, window: int) -> tuple[int, str | None]:
    """The context gauge's level (0-3) and its hint (None below 70% of the window)."""
    from rollchat.compaction.policy import gauge_level

    level = gauge_level(used, window)
    return level, GAUGE_HINTS[level]


def toolbar_parts(app: ChatApp, width: int | None = None) -> StyleAndTextTuples:
    """The toolbar as (style, text) fragments: context use first (it matters most and
    survives a narrow terminal), coloured from 70% of the window on, with a hint; then the
    rest. Before any usage report (start, after compact or resume) the figure is the
    estimate. In ``width`` columns the agent, then the query count, then the model are left
    out before the session id is cut (``resume`` needs it whole)."""
    session = app.session
    window = session.budget.window
    used = session.context_tokens  # the figure `context` shows too
    level, hint = gauge(used or 0, window)
    figure = f" {context_size(used, window)} "
    if hint:
        figure = f"{figure[:-2]} · {hint}) "
    queries = session.state.queries
    sid = session.state.session_id or "new session"
    parts = [plural(queries, "query"), session.agent.name, session.model, sid]
    for drop in (1, 0, 0):  # the agent, the queries, the model (indexes as the list shrinks)
        if width is None or len(figure) + len(f"· {' · '.join(parts)} ") <= width:
            break
        del parts[drop]
    rest = f"· {' · '.join(parts)} "
    return [(GAUGE_STYLES[level], harmless(figure)), ("", harmless(rest))]


def toolbar_text(app: ChatApp, width: int | None = None) -> str:
    """The toolbar's text (see ``toolbar_parts``)."""
    return "".join(part[1] for part in toolbar_parts(app, width))


def prompt_text(chat: Starting) -> str:
    """The prompt: ``You: ``, and once the conversation was handed to another agent, which
    agent it talks to (``You → Reviewer: ``)."""
    app = chat.ready
    if app is None or not app.handed:
        return "You: "
    return harmless(f"You → {app.session.agent.name}: ")


def history_path(configured: Path | None) -> Path:
    if configured is not None:
        return configured.expanduser()
    import platformdirs

    return Path(platformdirs.user_data_dir("rollchat")) / "history"


def _private_history_file(path: Path) -> Path:
    """Create the history file (and its directory) readable by the owner only."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd = os.open(path, os.O_CREAT | os.O_APPEND | os.O_WRONLY, 0o600)
    os.close(fd)
    os.chmod(path, 0o600)
    return path


def run_interactive(
    chat: Starting,
    *,
    history_file: Path,
    on_ready: Callable[[ChatApp], None] | None = None,
    input: Input | None = None,
    output: Output | None = None,
    agents: Iterable[str] = (),
    idle_seconds: float = 0.0,
    prompts: Iterable[str] = (),
) -> None:
    """The REPL: Enter sends, Alt+Enter / Esc Enter inserts a newline, Ctrl-C clears the
    line (or stops an answer), Ctrl-D exits.

    The chat is built (if it is not yet) once the first prompt is on the screen; ``on_ready``
    then runs in the background (warm-up work the first message would otherwise wait for).
    After ``idle_seconds`` at the prompt (0: never) facts are extracted in the background
    (see ui/idle.py).
    Tab completes commands, ``/`` + the saved ``prompts``' names, ``@`` + the ``agents``' names
    and the sessions after ``resume``.
    """
    entered = _Entered(chat)
    words = [*(f"/{p}" for p in prompts), *(f"@{a}" for a in agents)]
    session = _prompt_session(chat, history_file, words, entered, input=input, output=output)
    drawn = threading.Event()

    def first_render(_: object) -> None:
        if not drawn.is_set():
            drawn.set()
            chat.start(then=ready)

    def ready(app: ChatApp) -> None:
        session.app.invalidate()  # the toolbar's figures (thread-safe)
        if on_ready is not None:
            on_ready(app)

    session.app.after_render += first_render
    idle = IdleExtraction(chat, session.app, idle_seconds)
    try:
        _read_lines(chat, session, idle, entered)
        idle.stop()  # the exit waits for an extraction under way, within its deadline
        finish(chat.get())
    finally:
        idle.disarm()


def _prompt_session(chat: Starting, history_file: Path, words: Iterable[str],
                    entered: _Entered, *, input: Input | None,
                    output: Output | None) -> PromptSession[str]:
    """The prompt: its keys, its history (in memory when the file cannot be used), its
    completions, its toolbar, and ``entered`` noting each line Enter accepts."""
    from prompt_toolkit import PromptSession
    from prompt_toolkit.history import FileHistory, InMemoryHistory
    from prompt_toolkit.key_binding import KeyBindings
    from prompt_toolkit.validation import Validator

    from rollchat.ui.completion import ChatCompleter

    bindings = KeyBindings()

    @bindings.add("escape", "enter")
    def _newline(event: Any) -> None:
        event.current_buffer.insert_text("\n")

    try:
        history: FileHistory | InMemoryHistory = FileHistory(
            str(_private_history_file(history_file)))
    except OSError as exc:
        chat.out.warn(f"input history not saved ({history_file}: {exc.strerror})")
        history = InMemoryHistory()
    session: PromptSession[str] = PromptSession(
        history=history,
        completer=ChatCompleter([*commands.completions(), *words],
                                lambda: _saved_sessions(chat)),
        complete_while_typing=False,
        key_bindings=bindings,
        bottom_toolbar=lambda: _toolbar(chat),
        validator=Validator.from_callable(entered.note),  # (runs as Enter accepts a line)
        validate_while_typing=False,
        input=input,
        output=output,
    )
    # typing holds back a local server's side requests (providers/lanes.py)
    session.default_buffer.on_text_changed += lambda buffer: _note_typing(buffer.text)
    return session


def _saved_sessions(chat: Starting) -> tuple[list[SessionInfo], str | None]:
    """The saved sessions and the chat's current one, for Tab after ``resume`` (none while
    the chat is still being built)."""
    app = chat.ready
    if app is None:
        return [], None
    return app.session.list_sessions()[0], app.session.state.session_id


def _read_lines(chat: Starting, session: PromptSession[str], idle: IdleExtraction,
                entered: _Entered) -> None:
    """Prompt and handle lines until the user or a signal ends the chat; idle extraction armed
    while the prompt waits. A line Enter accepted is kept when a signal ends the chat before
    the prompt returned it or ``_handle`` took it."""
    try:
        while True:
            # A Ctrl-C between two prompts (the terminal is in cooked mode for a moment, so it
            # is a SIGINT, not a key) is one at the prompt: a new prompt, never the chat's end.
            try:
                line = _prompt_once(chat, session, idle, entered)
            except KeyboardInterrupt:
                if ending():
                    return
                continue
            except EOFError:
                return
            if _handle(chat, line) or ending():
                return
    finally:
        if entered.line is not None:
            _keep_unsent(chat, entered.line, entered.recorded)


def _prompt_once(chat: Starting, session: PromptSession[str], idle: IdleExtraction,
                 entered: _Entered) -> str:
    """One prompt, idle extraction armed while it waits. An ending signal (SIGTERM, SIGHUP)
    ends the prompt from inside its event loop and is raised once the loop has ended (see
    interrupts.at_prompt): whether it came as the prompt waited, started or accepted a line."""
    def end(signum: int) -> None:
        app = session.app
        loop = app.loop if app.is_running else None
        if loop is not None:  # (not running yet: ``ended`` sees it as it starts)
            loop.call_soon_threadsafe(ended)

    def ended() -> None:
        app = session.app
        signum = ending()
        if signum is not None and app.is_running and app.future is not None \
                and not app.future.done():  # (a line accepted already: it returns it)
            app.exit(exception=Terminated(signum))

    try:
        idle.arm()
        entered.line = None
        with at_prompt(end):
            line = session.prompt(lambda: prompt_text(chat), default=_unsent(chat),
                                  pre_run=ended)
        raise_ending()
        _note_typing("")  # sent: what it asks goes at once (providers/lanes.py)
        return line
    finally:
        idle.disarm()


def _unsent(chat: Starting) -> str:
    """What the next prompt starts with: text the chat did not send, and what was typed ahead
    of a question (see ui/ask.py: never the question's answer, never sent without Enter)."""
    from rollchat.ui.ask import take_held

    app = chat.ready
    return "\n".join(t for t in (app.take_unsent() if app is not None else "", take_held()) if t)


class _Entered:
    """The line Enter accepted last, noted as it is accepted (the prompt's validator), with
    how many messages the chat had recorded then: a signal may end the prompt after Enter but
    before it returns the line, and the message must not be lost."""

    def __init__(self, chat: Starting) -> None:
        self.chat = chat
        self.line: str | None = None
        self.recorded = 0

    def note(self, text: str) -> bool:
        app = self.chat.ready
        self.line, self.recorded = text, app.recorded if app is not None else 0
        return True


def _handle(chat: Starting, line: str, stop_on_interrupt: bool = False) -> bool:
    """``handle_line`` (True: the chat should end), and when a signal ends the chat before a
    message was recorded (it came right after Enter), the message is kept as a turn
    interrupted before any answer."""
    before = None
    try:
        app = chat.get()
        before = app.recorded
        return handle_line(app, line)
    except KeyboardInterrupt:
        if not ending():
            chat.out.warn("interrupted")
        return stop_on_interrupt
    finally:
        _keep_unsent(chat, line, before)


def _keep_unsent(chat: Starting, line: str, before: int | None) -> None:
    """When the chat is ending on a signal and ``line`` (a message, not a command) was not
    recorded (the chat had recorded ``before`` messages before it; None: unknown), keep it
    as a turn interrupted before any answer. Keeping it counts as recording it, so a second
    call for the same line does nothing."""
    if not (ending() and line.strip()):
        return
    parsed = commands.parse(line)
    if parsed is None or isinstance(parsed, commands.Mention):  # (a handoff's message too)
        app = chat.get()
        if before is None or app.recorded == before:
            app.keep_unsent(line)


def _toolbar(chat: Starting) -> AnyFormattedText:
    app = chat.ready
    if app is None:
        return chat.label
    from prompt_toolkit.application import get_app

    return toolbar_parts(app, get_app().output.get_size().columns)
