"""The ``rollchat`` subcommands over the saved sessions as a whole: ``sessions`` (the
listing), ``search`` and ``rename``. Each imports what it needs when it runs; what ``sessions``
and ``search`` print is cli/listing.py's (which also answers them before typer is imported)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from rollchat.cli.listing import show_hits, show_sessions
from rollchat.cli.options import ConfigOpt, JsonOpt, SessionsDirOpt, command_config, fail
from rollchat.errors import RollchatError


def _sessions_dir(ctx: typer.Context, config: Path | None, sessions_dir: Path | None) -> Path:
    """The sessions directory the config and the options name."""
    return command_config(ctx, config, sessions_dir).session.dir


LimitOpt = Annotated[
    Optional[int],  # noqa: UP045
    typer.Option("--limit", min=1, help="Show the N most recent (default: 20)."),
]
SearchLimitOpt = Annotated[
    Optional[int],  # noqa: UP045
    typer.Option("--limit", min=1, help="Show at most N matching sessions, the best matches "
                 "first (default: 20)."),
]


def sessions_command(
    ctx: typer.Context,
    sessions_dir: SessionsDirOpt = None,
    config: ConfigOpt = None,
    as_json: JsonOpt = False,
    show_all: Annotated[bool, typer.Option("--all", help="Show every session.")] = False,
    limit: LimitOpt = None,
) -> None:
    """List saved sessions, most recent first (the numbers 'rollchat --resume SESSION' and
    'resume SESSION' in the chat use): the 20 most
    recent, or --limit N, or --all."""
    from rollchat.storage.listing import DEFAULT_LIMIT

    if show_all and limit is not None:
        fail("use either --all or --limit N, not both")
    directory = _sessions_dir(ctx, config, sessions_dir)
    try:  # (cli/listing.answered prints the same before typer is imported)
        show_sessions(directory, None if show_all else limit or DEFAULT_LIMIT, as_json=as_json)
    except RollchatError as exc:
        fail(str(exc), 1)


def rename_command(
    ctx: typer.Context,
    session: Annotated[str, typer.Argument(help="Session number (see 'sessions'), id or id "
                                                "prefix.")],
    title: Annotated[list[str], typer.Argument(help="The new title (its words).")],
    sessions_dir: SessionsDirOpt = None,
    config: ConfigOpt = None,
) -> None:
    """Give a saved session a new title (its header's Title field)."""
    from rollchat.storage.locks import SessionBusyError
    from rollchat.storage.store import SessionStore
    from rollchat.storage.titles import user_title

    try:
        new = user_title(" ".join(title))
    except ValueError as exc:
        fail(str(exc))
    store = SessionStore(_sessions_dir(ctx, config, sessions_dir))
    try:
        info = store.resolve(session)
        store.set_title(info.session_id, new)
    except SessionBusyError:
        fail(f"session {session} is open in another rollchat process: set its title there "
             "with 'title TEXT'", 1)
    except RollchatError as exc:
        fail(str(exc), 1)
    from rollchat.ui.sanitize import harmless

    print(harmless(f"{info.session_id}: {new}"))


def search_command(
    ctx: typer.Context,
    text: Annotated[list[str], typer.Argument(help="The words to look for.")],
    sessions_dir: SessionsDirOpt = None,
    config: ConfigOpt = None,
    as_json: JsonOpt = False,
    limit: SearchLimitOpt = None,
) -> None:
    """Search the saved sessions' transcripts, summaries and titles: the best matches first,
    each with its number, id, date, title and the matching text."""
    from rollchat.storage.listing import DEFAULT_LIMIT

    directory = _sessions_dir(ctx, config, sessions_dir)
    try:  # (cli/listing.answered prints the same before typer is imported)
        show_hits(directory, " ".join(text), limit or DEFAULT_LIMIT, as_json=as_json)
    except RollchatError as exc:
        fail(str(exc), 1)
