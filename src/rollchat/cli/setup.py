"""The ``rollchat`` subcommands that set a project up: ``trust`` (a project config file) and
``init-agent`` (an example agent file). Each imports what it needs when it runs."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from rollchat.cli.options import fail
from rollchat.errors import ConfigError, UsageError


def init_agent_command(
    path: Annotated[Path, typer.Argument(help="Where to write the agent file.")],
) -> None:
    """Write a commented example agent file with one tool (never over an existing file)."""
    from rollchat.agents.setup import init_agent

    try:
        print(init_agent(path))
    except UsageError as exc:
        fail(str(exc), 1)


def trust_command(
    path: Annotated[
        Optional[Path],  # noqa: UP045 - typer needs Optional on 3.10
        typer.Argument(help="The project config file (default: ./rollchat.yml)."),
    ] = None,
) -> None:
    """Trust a project config file: its base_url, api_key_env and paths outside its directory
    apply from now on, until the file changes."""
    from rollchat.config.load import trust_file
    from rollchat.config.settings import PROJECT_FILE, default_user_config_dir

    try:
        print(trust_file(path or Path(PROJECT_FILE), cwd=Path.cwd(),
                         user_config_dir=default_user_config_dir()))
    except ConfigError as exc:
        fail(str(exc))
