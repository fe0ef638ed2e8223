"""The command line as typed, before typer reads it: made parseable (``chat_args``), and whether
it can name a subcommand at all (``chat_only``: when not, none is registered)."""

from __future__ import annotations

# the chat's options that take a value, and those that take none
_TAKES_VALUE = frozenset({"--agent", "--provider", "--model", "--base-url", "--config",
                          "--sessions-dir", "--resume", "--agent-file"})
_CHAT_FLAGS = frozenset({"--no-save", "--continue", "-c", "--pick", "--yes", "-y",
                         "--show-tools", "--no-fork", "--version"})


def chat_args(args: list[str]) -> list[str]:
    """The command line as typed, made parseable: a bare ``--resume`` (last, or followed by an
    option) is ``--pick``, and ``rollchat path/to/agent.py`` is ``--agent-file`` (click has no
    option whose value may be left out)."""
    out = list(args)
    takes_value = _TAKES_VALUE - {"--resume"}
    index = 0
    while index < len(out):
        word = out[index]
        if word == "--":
            break
        if word in takes_value:
            index += 2
            continue
        if word == "--resume":
            if index + 1 == len(out) or out[index + 1].startswith("-"):
                out[index] = "--pick"
            else:
                index += 1
        elif not word.startswith("-"):
            break  # a subcommand, an agent file or a mistake
        index += 1
    return agent_file_as_option(out)


def agent_file_as_option(args: list[str]) -> list[str]:
    """``rollchat path/to/agent.py ...`` is ``rollchat --agent-file path/to/agent.py ...``:
    the first word that is not an option or an option's value, when it names a .py file."""
    index = 0
    while index < len(args):
        word = args[index]
        if word == "--":
            return args
        if word in _TAKES_VALUE:
            index += 2
            continue
        if not word.startswith("-"):
            if word.endswith(".py"):
                return [*args[:index], "--agent-file", word, *args[index + 1:]]
            return args  # a subcommand (sessions, trust, init-agent) or a mistake
        index += 1
    return args


def chat_only(args: list[str]) -> bool:
    """Whether the command line (after ``chat_args``) holds the chat's options and nothing
    else: no subcommand, no --help. Then the subcommands are not registered, because typer
    builds a click command for every registered one at each start (about 15 ms for them, on
    the way to the first prompt)."""
    index = 0
    while index < len(args):
        word = args[index]
        name = word.split("=", 1)[0]
        if name in _TAKES_VALUE:
            index += 1 if "=" in word else 2
        elif word in _CHAT_FLAGS:
            index += 1
        else:
            return False
    return True
