"""The command line as typed, before typer reads it: made parseable (``chat_args``), and whether
it can name a subcommand at all (``chat_only``: when not, none is registered)."""

from __future__ import annotations

# the chat's options that take a value, and those that take none
_TAKES_VALUE = frozenset({"--agent", "--provider", "--model", "--base-url", "--config",
                          "--sessions-dir", "--resume", "--fork", "--agent-file", "--output-format",
                          "-p", "--print", "--exit-summary"})
_CHAT_FLAGS = frozenset({"--no-save", "--continue", "-c", "--pick", "--yes", "-y",
                         "--trust-input",
                         "--show-tools", "--no-fork", "--version", "--print-stdin",
                         "--no-exit-summary", "--no-memory"})
_PRINT = ("-p", "--print")
TAKES_VALUE = _TAKES_VALUE  # (cli/agents.py reads the command line the same way)


def chat_args(args: list[str]) -> list[str]:
    """The command line as typed, made parseable: a bare ``--resume`` (last, or followed by an
    option) is ``--pick``, a bare ``-p`` is ``--print-stdin`` (see ``print_args``), and
    ``rollchat path/to/agent.py`` is ``--agent-file`` (click has no option whose value may be
    left out)."""
    out = print_args(args)
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


def print_args(args: list[str]) -> list[str]:
    """``-p PROMPT`` as typed; a bare ``-p`` (last, or followed by an option) takes the words
    that are no option's value as its prompt (``rollchat -p --model m "question"``, and after
    ``--`` a prompt that starts with a dash), joined by spaces; with none it is
    ``--print-stdin`` (the prompt is read from stdin). An agent file (.py) stays one."""
    bare, words, index = None, [], 0
    while index < len(args):
        word = args[index]
        if word == "--":
            words += args[index + 1:]
            break
        if word in _PRINT and bare is None and (
                index + 1 == len(args) or args[index + 1].startswith("-")):
            bare = index
        elif word.split("=", 1)[0] in _TAKES_VALUE:
            index += 1 if "=" in word else 2
            continue
        elif not word.startswith("-") and not word.endswith(".py"):
            words.append(word)
        index += 1
    if bare is None:
        return list(args)
    end = args.index("--") if "--" in args else len(args)
    kept = [w for i, w in enumerate(args[:end]) if i != bare and not (
        w in words and _positional(args, i))]
    return [*(["--print", " ".join(words)] if words else ["--print-stdin"]), *kept]


def _positional(args: list[str], index: int) -> bool:
    """Whether ``args[index]`` is no option's value."""
    before = args[index - 1] if index else ""
    return not (before.split("=", 1)[0] in _TAKES_VALUE and "=" not in before
                and before not in _PRINT)
