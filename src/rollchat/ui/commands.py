"""In-chat commands: a registry of name -> Command, and the rule that tells commands from chat.

A command works with a slash (``/exit``) or as a bare word when it is the whole line (``exit``);
commands that take an argument also work bare (``compact keep the API details``, ``resume 3``).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, cast

from rollchat.errors import UsageError
from rollchat.providers.names import ANTHROPIC, OPENAI
from rollchat.text.wording import billed_breakdown, context_size, plural
from rollchat.ui.model_command import run_model

if TYPE_CHECKING:
    from rollchat.config.settings import AutoCompact
    from rollchat.ui.app import ChatApp

_REF = re.compile(r"^\S+$")  # one word: "resume ../x" is rejected, never sent to the model
# "remember when we fixed the bug": reminiscing or asking, not a fact to keep (it goes to the
# model; "/remember ..." always keeps it)
_RECALLING = re.compile(r"(?:when|what|what's|whats|how|why|where|who|whom|whose|which|whether|"
                        r"if|me|us|him|her|them|that\s+(?:time|day|bug|one|thing)|"
                        r"the\s+(?:time|day))\b", re.I)


def _remember_bare(arg: str) -> bool:
    """Whether a bare ``remember ARG`` line is the command: not a question, not reminiscing."""
    text = arg.strip()
    return not text.rstrip().endswith("?") and _RECALLING.match(text) is None


@dataclass(frozen=True)
class Command:
    name: str
    usage: str
    help: str
    run: Callable[[ChatApp, str], bool]  # returns True when the chat should end
    takes_arg: bool = False
    bare_arg: Callable[[str], bool] = lambda arg: True  # which bare arguments it claims


@dataclass(frozen=True)
class Mention:
    """``@NAME message``: the conversation handed to agent NAME (session/handoff.py)."""

    agent: str
    message: str


# ``@NAME`` opening a line, NAME an agent key (config_file's rule), then a space or the end:
# "@" alone, "me@x.com" or "@x.com" are chat text.
_MENTION = re.compile(r"@([A-Za-z0-9][A-Za-z0-9_-]{0,63})(?=\s|$)")


def mention(line: str) -> Mention | None:
    """The handoff ``line`` asks for when it starts with ``@NAME``; None for anything else."""
    text = line.strip()
    m = _MENTION.match(text)
    if m is None:
        return None
    return Mention(m[1], text[m.end():].strip())


@dataclass(frozen=True)
class Unknown:
    """A ``/word`` no built-in command takes (a saved prompt's, or a mistake), and the rest of
    the line."""

    word: str
    arg: str = ""


def _exit(app: ChatApp, arg: str) -> bool:
    return True


def _help(app: ChatApp, arg: str) -> bool:
    for command in COMMANDS.values():
        if command.name != "quit":
            usage = "exit, quit" if command.name == "exit" else command.usage
            app.out.entry(usage, command.help)
    for prompt in app.prompts.commands.values():
        hint = f" {prompt.argument_hint}" if prompt.argument_hint else ""
        app.out.entry(f"/{prompt.name}{hint}", f"{prompt.description or 'a saved prompt'} "
                      f"({prompt.display})")
    agents = app.session.config.agents
    if len(agents) > 1:  # one agent: nobody to hand over to
        app.out.entry("@NAME MESSAGE", "hand the conversation to another agent, who answers "
                      f"from now on; agents: {', '.join(agents)}")
    app.out.dim("Commands work bare (exit) or with a slash (/exit); Tab completes them. "
                "SESSION is a session's number in 'sessions', its id or an id prefix. Enter "
                "sends; Alt+Enter (or Esc then Enter) inserts a newline; Up recalls earlier "
                "input; Ctrl-C stops an answer or clears the line; Ctrl-D exits.")
    return False


def _context(app: ChatApp, arg: str) -> bool:
    from rollchat.session.breakdown import DETAIL_COLUMN, breakdown, lines

    session = app.session
    for line in lines(breakdown(session), model=session.model,
                      method=session.counter.method, auto=session.auto_mode != "off"):
        row = line[DETAIL_COLUMN - 3:DETAIL_COLUMN] == "  ("  # a layer's row with its detail
        app.out.line((line, ""), hang=DETAIL_COLUMN if row else 2)
    state = session.state
    app.out.dim(f"Now: {context_size(session.context_tokens, session.budget.window)}")
    app.out.dim("Session: " + billed_breakdown(state.queries, state.tokens,
                                               state.restoration_tokens, state.summary_tokens,
                                               state.memory_tokens))
    return False


_AUTO_SAYS = {
    "on": "compacts automatically when the next prompt would pass the budget",
    "off": "never compacts on its own ('compact' still does)",
    "ask": "asks at the budget: compact now, later, or off for this session",
}


def _auto(app: ChatApp, arg: str) -> bool:
    session = app.session
    budget = f"the budget is {session.budget.tokens:,} tokens"
    mode = arg.strip().lower()
    if not mode:
        where = "set in this chat" if session.auto_override else "from the config"
        app.out.info(f"Automatic compaction: {session.auto_mode} ({where}): "
                     f"{_AUTO_SAYS[session.auto_mode]}; {budget}. 'auto on|off|ask' "
                     "changes it for this session.")
        return False
    if mode not in _AUTO_SAYS:
        raise UsageError(f"usage: auto [on|off|ask] (got {arg.strip()[:40]!r})")
    previous = session.set_auto(cast("AutoCompact", mode))
    change = "unchanged" if previous == mode else f"was {previous}"
    put_off = session.guards.put_off_level
    still = ""
    if previous == mode == "ask" and put_off is not None:
        from rollchat.compaction.policy import asked_again

        still = f"; the compaction put off is proposed again when {asked_again(put_off)}"
    app.out.info(f"Automatic compaction: {mode} for this session ({change}): "
                 f"{_AUTO_SAYS[mode]}{still}.")
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
    from rollchat.storage.listing import DEFAULT_LIMIT
    from rollchat.ui.table import more_line

    current = app.session.state.session_id  # listed and marked, never left out
    page = app.session.sessions_page(None if choice == "all" else int(choice or DEFAULT_LIMIT))
    infos, problems = page.sessions, page.problems
    more = more_line(page, "'sessions all' lists them all, 'sessions N' the N most recent")
    app.out.sessions(infos, problems, current)
    if more:
        app.out.dim(more)
    if current and not any(i.session_id == current for i in infos) and not more:
        app.out.dim(f"The current session, {current}, is saved with its first message."
                    if not app.session.state.live else f"The current session is {current}.")
    return False


def _attach(app: ChatApp, arg: str) -> bool:
    name = arg.strip()
    if name:
        quoted = len(name) > 1 and name[0] == name[-1] and name[0] in "'\""
        app.attach(name[1:-1] if quoted else name)
    elif app.attachments:
        app.out.info("Attached to your next message: "
                     + ", ".join(a.describe() for a in app.attachments))
        app.out.dim("'detach' drops them.")
    else:
        app.out.info("Nothing attached. 'attach PATH' sends a text file or an image (png, "
                     "jpeg, gif, webp) with your next message.")
    return False


def _detach(app: ChatApp, arg: str) -> bool:
    dropped, app.attachments = len(app.attachments), []
    app.out.info(f"Dropped {plural(dropped, 'attachment')}." if dropped else
                 "Nothing was attached.")
    return False


def _is_file(arg: str) -> bool:
    """Whether a bare ``attach ARG`` is the command: one word or a quoted path, or the name
    of a file (``attach the logs please`` is chat text)."""
    name = arg.strip()
    quoted = len(name) > 1 and name[0] == name[-1] and name[0] in "'\""
    return bool(_REF.match(name)) or quoted or Path(name).expanduser().is_file()


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
    hits = app.session.search(text)
    if hits is None:
        app.out.info("Nothing is saved in this chat (--no-save): there are no saved sessions "
                     "to search.")
        return False
    from rollchat.ui.table import ROW_INDENT, hit_rows

    current = app.session.state.session_id
    if not hits:
        app.out.info(f"No saved session matches {text!r}.")
    for hit in hits:
        for row in hit_rows(hit, app.out.terminal, current):
            app.out.line(*row, hang=ROW_INDENT)
    if any(hit.session_id != current for hit in hits):
        app.out.dim("'resume N' continues one of them (the numbers are those of 'sessions').")
    return False


def _fork(app: ChatApp, arg: str) -> bool:
    app.fork(arg.strip() or None)
    return False


def _clear(app: ChatApp, arg: str) -> bool:
    app.clear()
    return False


def _undo(app: ChatApp, arg: str) -> bool:
    app.undo()
    return False


def _summary(app: ChatApp, arg: str) -> bool:
    word = arg.strip().lower()
    if word not in ("", "edit"):
        raise UsageError("usage: summary [edit]")
    app.summary(edit=word == "edit")
    return False


def _resume(app: ChatApp, arg: str) -> bool:
    ref = arg.strip() or app.pick_session()  # bare: the picker, in a terminal
    if ref is not None:
        app.resume(ref)
    return False


def _remember(app: ChatApp, arg: str) -> bool:
    if not arg.strip():
        raise UsageError("usage: remember TEXT (or remember CATEGORY: TEXT; categories: "
                         "preference, background, project, decision, contact, pattern)")
    app.remember(arg.strip())
    return False


def _forget(app: ChatApp, arg: str) -> bool:
    ref = arg.strip()
    if not ref.isdigit():
        raise UsageError("usage: forget ID (the number 'memory' shows)")
    app.forget(int(ref))
    return False


def _instructions(app: ChatApp, arg: str) -> bool:
    from rollchat.session.instructed import listing

    word = arg.strip().lower()
    if word not in ("", "reload"):
        raise UsageError("usage: instructions [reload]")
    session = app.session
    if word == "reload":
        before = session.system_prompt
        app.run(session.reload_instructions())
        if session.system_prompt == before:
            app.out.info("Project instructions reloaded: unchanged (the prompt cache keeps "
                         "hitting).")
        return False
    for line in listing(session.instructions.current, Path.cwd(), Path.home()):
        app.out.info(line)
    return False


def _thinking(app: ChatApp, arg: str) -> bool:
    """``thinking``: the latest answer's thinking in full (the screen folds it to one line);
    ``thinking on|off|auto|N``: how much the model thinks from the next message on."""
    from rollchat.config.fields import parse_thinking
    from rollchat.domain import Thinking

    if arg.strip():
        try:
            setting = parse_thinking(arg)
        except ValueError as exc:
            raise UsageError(f"usage: thinking [on|off|auto|BUDGET]: {exc}") from None
        app.session.think(setting)
        said = {None: "auto (the model's default)", "on": "on (adaptive where the model has "
                "it)", "off": "off"}.get(setting) if not isinstance(setting, int) else \
            f"a budget of {setting:,} tokens"
        app.out.info(f"Thinking: {said}, from the next message on.")
        if setting == "off" and app.session.provider_name == ANTHROPIC:
            from rollchat.providers.anthropic import off_note

            note = off_note(app.session.model)
            if note is not None:
                app.out.dim(note)
        elif setting != "off" and app.session.provider_name == OPENAI:
            from rollchat.providers.model_params import tools_note

            note = tools_note(app.session.model)
            if note is not None:
                app.out.dim(note)
        return False
    for turn in reversed(app.session.state.turns):
        thoughts = [b.text for b in turn.blocks if isinstance(b, Thinking)]
        if thoughts:
            for text in thoughts:
                app.out.dim(text)
            return False
    app.out.info("No answer in this session came with thinking.")
    return False


def _copy(app: ChatApp, arg: str) -> bool:
    from rollchat.ui.copy_command import run_copy

    return run_copy(app, arg)


def _copy_bare(arg: str) -> bool:
    """``copy all``, ``copy code``, ``copy code 2``: the command; ``copy this file`` is chat."""
    words = arg.lower().split()
    return words == ["all"] or (words[:1] == ["code"] and (
        len(words) == 1 or (len(words) == 2 and words[1].isdigit())))


def _memory(app: ChatApp, arg: str) -> bool:
    from rollchat.ui.memory_view import show_facts

    show_facts(app)
    return False


COMMANDS: dict[str, Command] = {
    c.name: c
    for c in (
        Command("help", "help", "show this help", _help),
        Command("context", "context", "what the next request holds: system prompt, tools, "
                "summary, turns, tool results, free space", _context),
        Command("instructions", "instructions [reload]", "list the project instructions "
                "loaded (AGENTS.md, ...); reload reads them again now", _instructions,
                takes_arg=True, bare_arg=lambda a: a.strip().lower() == "reload"),
        Command("summary", "summary [edit]", "show the summary this session was restored "
                "from; edit opens it in $EDITOR", _summary, takes_arg=True,
                bare_arg=lambda a: a.strip().lower() == "edit"),
        Command("compact", "compact [focus]", "summarize this session and continue in a new "
                "one (focus text steers the summary)", _compact, takes_arg=True),
        Command("undo", "undo", "right after compact: go back to the session as it was",
                _undo),
        Command("fork", "fork [SESSION]", "continue in a new session from this one's summary (or "
                "a saved one's), leaving it open", _fork, takes_arg=True,
                bare_arg=lambda a: bool(_REF.match(a.strip()))),
        Command("clear", "clear", "save this session and start a fresh one, nothing carried",
                _clear),
        Command("sessions", "sessions [all|N]", "list saved sessions, most recent first (20, "
                "all, or the N most recent)", _sessions, takes_arg=True,
                bare_arg=lambda a: a.strip().lower() == "all" or a.strip().isdigit()),
        Command("title", "title [TEXT]", "show this session's title, or change it",
                _title, takes_arg=True),
        Command("attach", "attach [PATH]", "send a text file or an image with your next "
                "message (bare: list what is attached)", _attach, takes_arg=True,
                bare_arg=_is_file),
        Command("detach", "detach", "drop the files attached to your next message", _detach),
        Command("search", "search TEXT", "search the saved sessions (transcripts, summaries, "
                "titles)", _search, takes_arg=True),
        Command("resume", "resume [SESSION]", "continue a saved session from its summary (bare: "
                "choose it in a picker)", _resume,
                takes_arg=True, bare_arg=lambda a: bool(_REF.match(a.strip()))),
        Command("auto", "auto [on|off|ask]", "automatic compaction for this session: show it, "
                "or turn it on, off, or ask first", _auto, takes_arg=True,
                bare_arg=lambda a: a.strip().lower() in _AUTO_SAYS),
        Command("model", "model [NAME]", "show the model and the choices, or switch to NAME "
                "for the rest of this chat", run_model, True, lambda a: bool(_REF.match(a))),
        Command("tools", "tools [verbose|quiet|restart SERVER]", "list the agent's tools and "
                "what each call needs; verbose shows calls in full; restart an MCP server",
                _tools, takes_arg=True, bare_arg=lambda a: a.strip().lower() in (
                    "verbose", "quiet") or a.lower().startswith("restart ")),
        Command("thinking", "thinking [on|off|auto|N]", "show the latest answer's thinking in "
                "full (the screen folds it to one line); on, off, auto or a budget of N tokens "
                "sets how much the model thinks", _thinking, takes_arg=True,
                bare_arg=lambda a: a.strip().lower() in ("on", "off", "auto")
                or a.strip().replace(",", "").isdigit()),
        Command("copy", "copy [code [N]|all]", "put the last answer on the clipboard; code: its "
                "last code block (or the Nth); all: the session as markdown", _copy,
                takes_arg=True, bare_arg=_copy_bare),
        Command("memory", "memory", "list the facts remembered across sessions", _memory),
        Command("remember", "remember TEXT", "remember a fact in later sessions (CATEGORY: "
                "TEXT names its category)", _remember, takes_arg=True,
                bare_arg=_remember_bare),
        Command("forget", "forget ID", "forget a remembered fact for good", _forget,
                takes_arg=True, bare_arg=lambda a: a.strip().isdigit()),
        Command("exit", "exit", "save (with a summary) and quit", _exit),
        Command("quit", "quit", "same as exit", _exit),
    )
}


def parse(line: str) -> tuple[Command, str] | Mention | Unknown | None:
    """The command a line invokes, a Mention for ``@NAME message``, Unknown for an unknown
    ``/word``, None for chat text."""
    stripped = line.strip()
    if not stripped:
        return None
    handed = mention(stripped)
    if handed is not None:
        return handed
    slash = stripped.startswith("/")
    word, _, arg = stripped.lstrip("/").partition(" ") if slash else stripped.partition(" ")
    if "\n" in word:
        word, _, rest = word.partition("\n")
        arg = rest + (" " + arg if arg else "")
    command = COMMANDS.get(word.lower())
    if slash:
        if command is None:
            return Unknown(word, arg.strip())
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
