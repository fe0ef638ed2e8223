"""In-chat commands: a registry of name -> Command, and the rule that tells commands from chat.

A command works with a slash (``/exit``) or as a bare word when it is the whole line (``exit``);
commands that take an argument also work bare (``compact keep the API details``, ``resume 3``).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from rollchat.errors import UsageError
from rollchat.text import human_tokens, plural

if TYPE_CHECKING:
    from rollchat.ui.app import ChatApp

_REF = re.compile(r"^\S+$")  # one word: "resume ../x" is rejected, never sent to the model


@dataclass(frozen=True)
class Command:
    name: str
    usage: str
    help: str
    run: Callable[[ChatApp, str], bool]  # returns True when the chat should end
    takes_arg: bool = False
    bare_arg: Callable[[str], bool] = lambda arg: True  # which bare arguments it claims


@dataclass(frozen=True)
class Unknown:
    word: str


def _exit(app: ChatApp, arg: str) -> bool:
    return True


def _help(app: ChatApp, arg: str) -> bool:
    for command in COMMANDS.values():
        if command.name != "quit":
            usage = "exit, quit" if command.name == "exit" else command.usage
            app.out.info(f"  {usage:<22} {command.help}")
    app.out.dim("Commands work bare (exit) or with a slash (/exit); Tab completes them. "
                "Enter sends; Alt+Enter (or Esc then Enter) inserts a newline; Up recalls "
                "earlier input; Ctrl-C stops an answer or clears the line; Ctrl-D exits.")
    return False


def _context(app: ChatApp, arg: str) -> bool:
    session = app.session
    ctx = session.engine.context
    budget = session.budget
    window = budget.window
    last = ctx.last_prompt_tokens
    estimate = session.estimate()
    state = session.state
    lines = [
        f"Model: {session.engine.model} (context window {window:,} tokens)",
        f"Budget: {budget.tokens:,} tokens before automatic compaction "
        f"({'on' if session.config.session.auto_compact else 'off'}); "
        f"{budget.max_output_tokens:,} reserved for the answer",
        f"Next prompt (estimate): {estimate:,} tokens ({estimate / window:.0%} of the window, "
        f"{estimate / budget.tokens:.0%} of the budget; counted with {session.counter.method})",
        f"Session: {plural(state.queries, 'query')}, {state.tokens:,} tokens"
        + (f", restoration {state.restoration_tokens:,}" if state.restored else ""),
        f"Working context: {len(ctx.messages)} messages",
    ]
    if last is None:
        lines.append("Last prompt: none reported yet")
    else:
        lines.append(f"Last prompt: {last:,} tokens ({last / window:.0%} of "
                     f"{human_tokens(window)})")
    for line in lines:
        app.out.info(line)
    return False


def _tools(app: ChatApp, arg: str) -> bool:
    from rollchat.ui.tools_command import run_tools

    return run_tools(app, arg)


def _compact(app: ChatApp, arg: str) -> bool:
    app.compact(arg.strip() or None)
    return False


def _sessions(app: ChatApp, arg: str) -> bool:
    choice = arg.strip().lower()
    if choice and choice != "all" and not (choice.isascii() and choice.isdigit()
                                           and int(choice) > 0):
        raise UsageError("usage: sessions [all | N] (the N most recent; default 20)")
    current = app.session.state.session_id
    index = getattr(app.session.store, "index", None)  # None: --no-save keeps no files
    if index is not None:
        from rollchat.index import DEFAULT_LIMIT
        from rollchat.ui.table import more_line

        page = index.page(None if choice == "all" else int(choice or DEFAULT_LIMIT),
                          exclude=current)
        infos, problems = page.sessions, page.problems
        more = more_line(page, "'sessions all' lists them all, 'sessions N' the N most recent")
    else:
        infos, problems = app.session.list_sessions()
        more = None
    if infos or problems:
        app.out.sessions(infos, problems)
    if more:
        app.out.dim(more)
    if current:
        app.out.dim(f"The current session, {current}, is not listed." if infos or problems
                    else f"No other saved sessions (the current one is {current}).")
    elif not infos and not problems:
        app.out.sessions(infos, problems)  # "No saved sessions."
    return False


def _title(app: ChatApp, arg: str) -> bool:
    session = app.session
    if not arg.strip():
        title = session.title
        app.out.info(f"Title: {title}" if title else
                     "This session has no title yet (its first message will be one).")
        app.out.dim("'title NEW TITLE' changes it.")
        return False
    title = session.set_title(arg)
    app.out.info(f"Title: {title}" + ("" if session.state.live else
                                      " (saved with the session's first message)"))
    return False


def _search(app: ChatApp, arg: str) -> bool:
    text = arg.strip()
    if not text:
        raise UsageError("usage: search TEXT (words to look for in the saved sessions)")
    index = getattr(app.session.store, "index", None)
    if index is None:
        app.out.info("Nothing is saved in this chat (--no-save): there are no saved sessions "
                     "to search.")
        return False
    from rollchat.ui.table import hit_rows

    hits = index.search(text)
    if not hits:
        app.out.info(f"No saved session matches {text!r}.")
    for hit in hits:
        for row in hit_rows(hit):
            app.out.line(*row)
    if hits:
        app.out.dim("'resume N' continues one of them.")
    return False


def _resume(app: ChatApp, arg: str) -> bool:
    ref = arg.strip()
    if not ref:
        raise UsageError("usage: resume N | ID | ID-PREFIX (see 'sessions' for the numbers)")
    app.resume(ref)
    return False


COMMANDS: dict[str, Command] = {
    c.name: c
    for c in (
        Command("help", "help", "show this help", _help),
        Command("context", "context", "token figures: session, last prompt, window", _context),
        Command("compact", "compact [focus]", "summarize this session and continue in a new "
                "one (focus text steers the summary)", _compact, takes_arg=True),
        Command("sessions", "sessions [all|N]", "list saved sessions, most recent first (20, "
                "all, or the N most recent)", _sessions, takes_arg=True,
                bare_arg=lambda a: a.strip().lower() == "all" or a.strip().isdigit()),
        Command("title", "title [TEXT]", "show this session's title, or change it",
                _title, takes_arg=True),
        Command("search", "search TEXT", "search the saved sessions (transcripts, summaries, "
                "titles)", _search, takes_arg=True),
        Command("resume", "resume N|ID", "continue a saved session from its summary", _resume,
                takes_arg=True, bare_arg=lambda a: bool(_REF.match(a.strip()))),
        Command("tools", "tools [verbose|quiet]", "list the agent's tools and what each call "
                "needs; verbose shows calls in full", _tools, takes_arg=True,
                bare_arg=lambda a: a.strip().lower() in ("verbose", "quiet")),
        Command("exit", "exit", "save (with a summary) and quit", _exit),
        Command("quit", "quit", "same as exit", _exit),
    )
}


def parse(line: str) -> tuple[Command, str] | Unknown | None:
    """The command a line invokes, Unknown for an unknown ``/word``, None for chat text."""
    stripped = line.strip()
    if not stripped:
        return None
    slash = stripped.startswith("/")
    word, _, arg = stripped.lstrip("/").partition(" ") if slash else stripped.partition(" ")
    if "\n" in word:
        word, _, rest = word.partition("\n")
        arg = rest + (" " + arg if arg else "")
    command = COMMANDS.get(word.lower())
    if slash:
        if command is None:
            return Unknown(word)
        return command, arg.strip()
    if command is None or "\n" in stripped:
        return None
    arg = arg.strip()
    if not arg:
        return command, ""
    if command.takes_arg and command.bare_arg(arg):
        return command, arg
    return None


def completions() -> list[str]:
    return [*COMMANDS, *(f"/{name}" for name in COMMANDS)]
