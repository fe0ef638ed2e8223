"""The two front ends of a chat: the prompt_toolkit REPL for a terminal, and piped input.

Both route each line to a command or to the model through ``handle_line``.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rollchat.clean import decode
from rollchat.errors import RollchatError
from rollchat.text import plural
from rollchat.tokens import human_tokens
from rollchat.ui import commands
from rollchat.ui.sanitize import harmless

if TYPE_CHECKING:
    from prompt_toolkit.input import Input
    from prompt_toolkit.output import Output

    from rollchat.ui.app import ChatApp


def handle_line(app: ChatApp, line: str) -> bool:
    """Run one line of input. Returns True when the chat should end. Whatever happens, an
    answer left open is closed and the terminal gets its echo back."""
    try:
        return _run_line(app, line)
    finally:
        app.out.close()


def _run_line(app: ChatApp, line: str) -> bool:
    parsed = commands.parse(line)
    if parsed is None:
        if line.strip():
            app.send(line)
        return False
    if isinstance(parsed, commands.Unknown):
        app.out.error(f"unknown command /{parsed.word} (not sent to the model); "
                      "type 'help' for the commands")
        return False
    command, arg = parsed
    try:
        return command.run(app, arg)
    except RollchatError as exc:
        app.out.error(str(exc))
        return False


def finish(app: ChatApp) -> None:
    """End the chat: save with a summary. Ctrl-C here falls back, never loses the file."""
    try:
        app.exit()
    except KeyboardInterrupt:
        app.out.warn("interrupted while saving; the transcript is on disk")
    finally:
        app.out.close()


def run_piped(app: ChatApp, lines: Iterable[bytes]) -> None:
    """Answer each line of a non-terminal input (bytes: what is not UTF-8 becomes U+FFFD, see
    rollchat.clean), then save and exit."""
    try:
        for raw in lines:
            line = decode(raw.rstrip(b"\r\n"))
            if line.strip():
                app.out.dim(f"You: {line}")
            if handle_line(app, line):
                break
    except KeyboardInterrupt:
        app.out.warn("interrupted")
    finish(app)


def toolbar_text(app: ChatApp) -> str:
    """Context use first (it matters most and survives a narrow terminal), then the rest.
    Before any usage report (start, after compact or resume) the figure is the estimate."""
    session = app.session
    window = session.budget.window
    used = session.engine.context.last_prompt_tokens
    approx = "" if used is not None else "~"
    if used is None:  # (no count before the first message: the tokenizer loads after the prompt)
        used = session.estimate() if session.engine.context.messages else 0
    queries = session.state.queries
    sid = session.state.session_id or "new session"
    return harmless(f" context {approx}{human_tokens(used)}/{human_tokens(window)} "
            f"({used / window:.0%}) · {plural(queries, 'query')} · "
            f"{session.agent.name} · {session.engine.model} · {sid} ")


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
    app: ChatApp,
    *,
    history_file: Path,
    on_first_prompt: Callable[[], None] | None = None,
    input: Input | None = None,
    output: Output | None = None,
) -> None:
    """The REPL: Enter sends, Alt+Enter / Esc Enter inserts a newline, Ctrl-C clears the
    line (or stops an answer), Ctrl-D exits."""
    from prompt_toolkit import PromptSession
    from prompt_toolkit.completion import WordCompleter
    from prompt_toolkit.history import FileHistory, InMemoryHistory
    from prompt_toolkit.key_binding import KeyBindings

    bindings = KeyBindings()

    @bindings.add("escape", "enter")
    def _newline(event: Any) -> None:
        event.current_buffer.insert_text("\n")

    try:
        history: FileHistory | InMemoryHistory = FileHistory(
            str(_private_history_file(history_file)))
    except OSError as exc:
        app.out.warn(f"input history not saved ({history_file}: {exc.strerror})")
        history = InMemoryHistory()
    session: PromptSession[str] = PromptSession(
        history=history,
        completer=WordCompleter(commands.completions(), sentence=True),
        complete_while_typing=False,
        key_bindings=bindings,
        bottom_toolbar=lambda: toolbar_text(app),
        input=input,
        output=output,
    )
    first = [on_first_prompt]

    def pre_run() -> None:
        if first[0] is not None:
            first[0]()
            first[0] = None

    while True:
        try:
            line = session.prompt("You: ", pre_run=pre_run)
        except KeyboardInterrupt:
            continue
        except EOFError:
            break
        try:
            if handle_line(app, line):
                break
        except KeyboardInterrupt:
            app.out.warn("interrupted")
    finish(app)
