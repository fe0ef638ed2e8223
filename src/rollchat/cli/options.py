"""What the commands share: the options several of them take, what was given before a
subcommand, the one config loader (flags -> Config) and the one way to fail (one line, exit 2)."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, NoReturn, Optional

import typer

from rollchat.errors import ConfigError

if TYPE_CHECKING:
    from rollchat.config.settings import Config

SessionsDirOpt = Annotated[
    Optional[Path],  # noqa: UP045 - typer needs Optional on 3.10
    typer.Option("--sessions-dir", help="Sessions directory (default: ./sessions)."),
]
ConfigOpt = Annotated[
    Optional[Path],  # noqa: UP045
    typer.Option("--config", help="Config file (default: $ROLLCHAT_CONFIG, ./rollchat.yml, "
                 "then the user config directory)."),
]
SessionArg = Annotated[str, typer.Argument(
    metavar="SESSION", help="Session number (see 'sessions'), id or id prefix.")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Machine-readable output.")]
# the chat's, and fork's (which starts the chat)
AgentOpt = Annotated[Optional[str],  # noqa: UP045
                     typer.Option(help="Agent name from the config.")]
ModelOpt = Annotated[Optional[str], typer.Option(help="Model name.")]  # noqa: UP045
YesOpt = Annotated[bool, typer.Option("--yes", "-y", help=(
    "Approve every tool call without asking (and answer yes to forking a session open "
    "elsewhere). It says nothing about piped input: see --trust-input."))]
TrustInputOpt = Annotated[bool, typer.Option("--trust-input", help=(
    "Piped input is yours: memory takes facts and 'remember' lines from it (without it, "
    "piped text may be a document, and nothing in it is stored as your own)."))]


def fail(message: str, code: int = 2) -> NoReturn:
    """End the command with one line on stderr: exit 2 for a mistake in what was typed or
    configured, 1 (``code``) when what it works on is wrong."""
    from rollchat.ui.sanitize import harmless  # a message may quote a config or session file

    sys.stderr.write(f"rollchat: error: {harmless(message)}\n")
    raise typer.Exit(code)


@dataclass(frozen=True)
class ChatFlags:
    """The chat's own options (``rollchat --yes pick``: they count for the commands that start
    the chat)."""

    agent: str | None = None
    provider: str | None = None
    model: str | None = None
    base_url: str | None = None
    no_save: bool = False
    yes: bool = False
    trust_input: bool = False  # piped input is the user speaking (memory)
    no_fork: bool = False
    agent_file: Path | None = None
    show_tools: bool = False
    exit_summary: str | None = None  # --exit-summary, --no-exit-summary (skip)
    no_memory: bool = False


@dataclass(frozen=True)
class Given:
    """What was given before a subcommand (``rollchat --config X sessions``: X counts for it),
    kept on typer's context object; the subcommand's own options win (``override``)."""

    config: Path | None = None
    sessions_dir: Path | None = None
    # an --agent given to a group before its subcommand (``rollchat memory --agent X forget 3``);
    # the chat's --agent is in ``chat``, read only by the commands that start the chat
    agent: str | None = None
    starts: tuple[str, ...] = ()  # the options that start from a session (--resume, -c)
    chat: ChatFlags = field(default_factory=ChatFlags)

    def override(self, *, config: Path | None = None, sessions_dir: Path | None = None,
                 agent: str | None = None) -> Given:
        """These, with the subcommand's own options where it was given them."""
        return replace(self, config=config if config is not None else self.config,
                       sessions_dir=sessions_dir if sessions_dir is not None
                       else self.sessions_dir,
                       agent=agent if agent is not None else self.agent)


def given(ctx: typer.Context) -> Given:
    """What was given before the subcommand (nothing, when it was invoked on its own)."""
    before = ctx.obj
    return before if isinstance(before, Given) else Given()


def command_config(ctx: typer.Context, config: Path | None = None,
                sessions_dir: Path | None = None, *, agent: str | None = None,
                trust_warning: bool = True) -> Config:
    """The config a subcommand's options (else those given before it) name: defaults < file <
    environment < flags. A mistake in it ends the command (one line, exit 2). The notice of
    settings an untrusted project file may not make goes to stderr (``trust_warning``: audit,
    prune and import have never shown it)."""
    from rollchat.config.load import load_config
    from rollchat.config.settings import ConfigOverrides

    options = given(ctx).override(config=config, sessions_dir=sessions_dir, agent=agent)
    try:
        cfg = load_config(config_path=options.config, env=os.environ, cwd=Path.cwd(),
                          overrides=ConfigOverrides(agent=options.agent,
                                                    sessions_dir=options.sessions_dir))
    except ConfigError as exc:
        fail(str(exc))
    for line in cfg.warnings if trust_warning else ():
        sys.stderr.write(f"rollchat: warning: {line}\n")
    return cfg
