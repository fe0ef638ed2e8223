"""``rollchat agents``: agent files saved under short names in the user config (list, add,
remove), and ``rollchat NAME`` read as ``--agent NAME`` when NAME is one of them."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from rollchat.cli.options import fail
from rollchat.errors import ConfigError

# the subcommands a name may not shadow (tests/cli/test_agent_aliases.py keeps it equal to
# the ones app.py registers), and the chat's own words
SUBCOMMANDS = frozenset({
    "import", "pick", "show", "export", "sessions", "rename", "search", "init-agent", "audit",
    "trust", "compact", "mcp", "prune", "fork", "memory", "agents", "help"})


def build_agents_app() -> typer.Typer:
    """The ``agents`` group: listing them is what it does without a subcommand."""
    group = typer.Typer(help="Agents saved under a short name in the user config (list, add, "
                             "remove); 'rollchat NAME' starts one from any directory.",
                        no_args_is_help=False, rich_markup_mode=None)
    group.callback(invoke_without_command=True)(agents_list)
    group.command("add")(agents_add)
    group.command("remove")(agents_remove)
    return group


def _config_dir() -> Path:
    from rollchat.config.settings import default_user_config_dir

    return default_user_config_dir()


def agents_list(ctx: typer.Context) -> None:
    """List the agents of the user config, each with its file and where it is set."""
    if ctx.invoked_subcommand is not None:
        return
    from rollchat.config.aliases import aliases, user_config

    try:
        found = aliases(_config_dir())
    except ConfigError as exc:
        fail(str(exc))
    where = user_config(_config_dir())
    if not found:
        print(f"No agents saved in {where}; 'rollchat agents add NAME PATH' saves one.")
        return
    width = max(len(a.name) for a in found)
    for alias in found:
        what = str(alias.file) if alias.file is not None else "(set up in the config)"
        missing = "  (missing!)" if alias.file is not None and not alias.file.is_file() else ""
        print(f"{alias.name:<{width}}  {what}{missing}")
    print(f"From {where}; 'rollchat NAME' or 'rollchat --agent NAME' starts one.")


def agents_add(
    name: Annotated[str, typer.Argument(help="The short name (letters, digits, - and _).")],
    path: Annotated[Path, typer.Argument(help="The agent file (Python).")],
) -> None:
    """Save an agent file under NAME in the user config (its comments and settings kept)."""
    from rollchat.config.aliases import NAME, add

    why = refusal(name)
    if why is not None:
        fail(why)
    if NAME.fullmatch(name) is None:
        fail(f"agent names are 1-64 letters, digits, '-' or '_', starting with a letter or "
             f"digit (got {name!r})")
    target = path.expanduser().resolve()
    if not target.is_file():
        fail(f"{path}: no such file; give the path of an agent file (Python)", 1)
    if target.suffix != ".py":
        fail(f"{path}: not an agent file (a .py file)", 1)
    try:
        written = add(_config_dir(), name, target)
    except ConfigError as exc:
        fail(str(exc), 1)
    print(f"Saved agent {name} ({target}) in {written}; 'rollchat {name}' starts it from any "
          "directory.")


def agents_remove(
    name: Annotated[str, typer.Argument(help="The agent's short name.")],
) -> None:
    """Take an agent saved with 'agents add' out of the user config."""
    from rollchat.config.aliases import remove

    try:
        written = remove(_config_dir(), name)
    except ConfigError as exc:
        fail(str(exc), 1)
    print(f"Removed agent {name} from {written}.")


def refusal(name: str) -> str | None:
    """Why ``name`` cannot be an agent's short name (None: it can): a subcommand's, a file's
    or directory's here, or an agent file's look (``rollchat NAME`` would mean that instead)."""
    if name in SUBCOMMANDS:
        return f"{name} is a rollchat subcommand ('rollchat {name}' runs it); choose another name"
    if name.endswith(".py") or "/" in name or name.startswith("-"):
        return f"{name} looks like an agent file or an option, not a name; choose another name"
    if Path(name).exists():
        return (f"{name} is also a {'directory' if Path(name).is_dir() else 'file'} here "
                "('rollchat NAME' must mean one thing); choose another name")
    return None


def alias_args(args: list[str]) -> list[str]:
    """``rollchat NAME ...`` is ``rollchat --agent NAME ...`` when NAME (the first word, after
    the chat's options) is an agent saved in the user config and no subcommand."""
    index = _first_word(args)
    if index is None or args[index] in SUBCOMMANDS or args[index].endswith(".py"):
        return args
    from rollchat.config.aliases import alias_file

    if alias_file(_config_dir(), args[index]) is None:
        return args
    return [*args[:index], "--agent", args[index], *args[index + 1:]]


def _first_word(args: list[str]) -> int | None:
    """The index of the first word that is no option nor an option's value (None: none)."""
    from rollchat.cli.argv import TAKES_VALUE

    index = 0
    while index < len(args):
        word = args[index]
        if word == "--":
            return None
        if word in TAKES_VALUE:
            index += 2
            continue
        if not word.startswith("-"):
            return index
        index += 1
    return None
