"""The ``rollchat`` Typer app: the chat as its callback, and every subcommand registered here,
by name, in the order ``--help`` lists them."""

from __future__ import annotations

import typer
import typer.core

from rollchat.cli.chat import chat_command

# Plain help (rich_markup_mode=None, so that neither --help nor the chat's start imports rich).
# Typer still escapes each parameter's "[required]" / "[default: …]" for rich whenever rich is
# installed, importing it to do so, and the plain help then shows "\[required]". Its other uses
# of this flag (rich help and errors) are off with rich_markup_mode=None anyway.
typer.core.HAS_RICH = False


def build_cli(*, subcommands: bool = True) -> typer.Typer:
    """The app. Without ``subcommands`` only the chat (for a command line that can name none,
    see ``argv.chat_only``): typer builds a click command for each registered one at start."""
    app = typer.Typer(
        add_completion=False,
        help="A terminal chat loop for LLM agents that never runs out of context.",
        context_settings={"help_option_names": ["-h", "--help"]},
        rich_markup_mode=None,
        pretty_exceptions_enable=False,
    )
    app.callback(invoke_without_command=True)(chat_command)
    if subcommands:
        _register_subcommands(app)
    return app


def _register_subcommands(app: typer.Typer) -> None:
    """Each subcommand's module is imported only here: the chat's start needs none of them."""
    from rollchat.cli import chat, compact, importing, memory, prune, reading, sessions, setup

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
