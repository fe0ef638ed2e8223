"""The ``rollchat`` Typer app: the chat as its callback, and every subcommand registered here,
by name, in the order ``--help`` lists them."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

import click
import typer
import typer.core

from rollchat.cli.chat import chat_command

# Plain help (rich_markup_mode=None, so that neither --help nor the chat's start imports rich).
# Typer still escapes each parameter's "[required]" / "[default: …]" for rich whenever rich is
# installed, importing it to do so, and the plain help then shows "\[required]". Its other uses
# of this flag (rich help and errors) are off with rich_markup_mode=None anyway.
typer.core.HAS_RICH = False

# click 8.5 suggests a close command name itself ("Did you mean 'rename'?"); typer (<0.21) adds
# the same suggestion again unless told not to.
_CLICK_SUGGESTS = hasattr(click.exceptions, "NoSuchCommand")
# What a word that names no subcommand but one of the chat's options was meant to do.
_OPTION_WORDS = {
    "resume": "to resume a session: rollchat --resume SESSION (or 'rollchat pick' to choose "
              "it in a picker)",
    "continue": "to continue the most recent session: rollchat -c",
}
_typer_argument_init = typer.core.TyperArgument.__init__


def _argument_init(self: typer.core.TyperArgument, *args: Any, help: str | None = None,
                   **kwargs: Any) -> None:
    _typer_argument_init(self, *args, help=help, **kwargs)
    self.help = help  # click 8.5's Argument took a help of its own and reset typer's to None


def _no_arguments_section(self: click.Command, ctx: click.Context,
                          formatter: click.HelpFormatter) -> None:
    """typer lists the arguments in its own section; click 8.5 would list them again."""


setattr(typer.core.TyperArgument, "__init__", _argument_init)  # noqa: B010 (a method)
for _command in (typer.core.TyperCommand, typer.core.TyperGroup):
    setattr(_command, "format_arguments", _no_arguments_section)  # noqa: B010


class _Group(typer.core.TyperGroup):
    """Typer's group, telling a subcommand typed for one of the chat's options (``rollchat
    resume``) what to type instead, and saying every usage error in one line (click's block
    of usage, hint and error is four)."""

    def main(self, args: Sequence[str] | None = None, prog_name: str | None = None,
             complete_var: str | None = None, standalone_mode: bool = True,
             windows_expand_args: bool = True, **extra: Any) -> Any:
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, False, windows_expand_args,
                                **extra)
        try:
            done = super().main(args, prog_name, complete_var, False, windows_expand_args,
                                **extra)
        except click.UsageError as exc:
            sys.stderr.write(f"rollchat: error: {usage_line(exc)}\n")
            sys.exit(exc.exit_code)
        except click.ClickException as exc:
            sys.stderr.write(f"rollchat: error: {exc.format_message()}\n")
            sys.exit(exc.exit_code)
        except click.Abort:  # end of input at a question no one answers (typer.prompt)
            sys.stderr.write("Aborted!\n")
            sys.exit(1)
        sys.exit(done if isinstance(done, int) else 0)  # (typer.Exit's code, else 0)

    def resolve_command(self, ctx: click.Context, args: list[str],
                        ) -> tuple[str | None, click.Command | None, list[str]]:
        try:
            return super().resolve_command(ctx, args)
        except click.UsageError as exc:
            hint = _OPTION_WORDS.get(args[0]) if args else None
            if hint is None:
                raise
            raise click.UsageError(f"No such command {args[0]!r}; {hint}.", ctx) from exc


def usage_line(exc: click.UsageError) -> str:
    """A usage error as one line that says what to do: an unknown option with the closest
    one and where the options are listed, any other with the command's --help."""
    path = exc.ctx.command_path if exc.ctx is not None else "rollchat"
    if isinstance(exc, click.NoSuchOption):
        near = sorted(exc.possibilities or ())
        meant = f" (did you mean {' or '.join(near[:2])}?)" if near else ""
        return f"no such option {exc.option_name}{meant}; {path} --help lists them"
    message = " ".join(exc.format_message().split())
    message = message[:1].lower() + message[1:] if message[1:2].islower() else message
    return f"{message.rstrip('.')} (see {path} --help)"


def build_cli(*, subcommands: bool = True) -> typer.Typer:
    """The app. Without ``subcommands`` only the chat (for a command line that can name none,
    see ``argv.chat_only``): typer builds a click command for each registered one at start."""
    app = typer.Typer(
        add_completion=False,
        help="A terminal chat loop for LLM agents that never runs out of context.",
        context_settings={"help_option_names": ["-h", "--help"]},
        rich_markup_mode=None,
        pretty_exceptions_enable=False,
        suggest_commands=not _CLICK_SUGGESTS,
        cls=_Group,
    )
    app.callback(invoke_without_command=True)(chat_command)
    if subcommands:
        _register_subcommands(app)
    return app


def _register_subcommands(app: typer.Typer) -> None:
    """Each subcommand's module is imported only here: the chat's start needs none of them."""
    from rollchat.cli import (
        agents,
        chat,
        compact,
        importing,
        memory,
        prune,
        reading,
        sessions,
        setup,
    )

    app.command("import")(importing.import_command)
    app.command("pick")(chat.pick_command)
    app.command("show")(reading.show_command)
    app.command("export")(reading.export_command)
    app.command("sessions")(sessions.sessions_command)
    app.command("rename")(sessions.rename_command)
    app.command("search")(sessions.search_command)
    app.command("init-agent")(setup.init_agent_command)
    app.command("audit")(compact.audit_command)
    app.command("trust")(setup.trust_command)
    app.command("compact")(compact.compact_command)
    app.command("mcp")(compact.mcp_command)
    app.command("prune")(prune.prune_command)
    app.command("fork")(chat.fork_command)
    app.add_typer(memory.build_memory_app(), name="memory")
    app.add_typer(agents.build_agents_app(), name="agents")
