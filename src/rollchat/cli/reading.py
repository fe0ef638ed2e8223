"""Reading one saved session: ``rollchat show`` (read it) and ``export`` (print it, or its whole
lineage); and how ``--continue`` and a bare ``--resume`` (or ``pick``) choose the session the
chat starts from. Each command imports what it needs when it runs."""

from __future__ import annotations

import json
import os
import sys
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from rollchat.cli.options import ConfigOpt, SessionArg, SessionsDirOpt, command_config, fail
from rollchat.errors import RollchatError, TranscriptError, UsageError

if TYPE_CHECKING:
    from rollchat.config.settings import Config
    from rollchat.storage.listing import SessionInfo
    from rollchat.storage.store import SessionStore


def choose_session(cfg: Config, how: str, *, interactive: bool) -> str:
    """The id of the session the chat starts from: the most recent (``how`` "last") or the one
    chosen in the picker ("pick"). UsageError when it cannot be chosen here; RollchatError when
    there is nothing to choose; a cancelled picker ends the program (exit 1, or 130 for
    Ctrl-C) without starting a chat."""
    what = "--continue" if how == "last" else "choosing a session"
    if not cfg.session.auto_save:
        raise UsageError(f"{what} reads the sessions directory: not with --no-save")
    if how == "pick" and not interactive:
        raise UsageError("choosing a session needs a terminal (stdin and stdout); give "
                         "--resume SESSION, or -c for the most recent")
    from rollchat.storage.store import SessionStore

    store = SessionStore(cfg.session.dir)
    listing = store.list_sessions()
    if not listing.sessions:
        bad = f" ({len(listing.problems)} unreadable files)" if listing.problems else ""
        raise RollchatError(f"no saved sessions in {cfg.session.dir}{bad}: nothing to "
                            f"{'continue' if how == 'last' else 'choose from'}; start one "
                            "with 'rollchat'")
    if how == "last":
        # a session with nothing to resume from (killed right after its first Enter: a header
        # and no turn; or a resumed one killed before its first query) is never the one
        sessions = [s for s in listing.sessions if s.queries or s.has_summary]
        if not sessions:
            raise RollchatError(f"no session in {cfg.session.dir} has a query to continue "
                                f"from ({len(listing.sessions)} without one); start one with "
                                "'rollchat'")
        mine = [s for s in sessions if s.agent == cfg.agent.name]  # the agent's own first
        return last_used(store, mine or sessions).session_id
    from rollchat.ui.picker import pick

    picked = pick(listing.sessions, store.load_summary)
    if picked.info is None:
        sys.stderr.write("rollchat: no session chosen\n")
        raise typer.Exit(130 if picked.cancelled == "interrupt" else 1)
    return picked.info.session_id


def last_used(store: SessionStore, sessions: list[SessionInfo]) -> SessionInfo:
    """The session used last: the one whose file was written last (a long chat begun this
    morning beats a quick one begun later and closed), among those not continued in another
    session (editing a parent's summary writes its file, but its child is where it goes on).
    Ties, and files that cannot be read, go to the most recently started."""
    heads = [s for s in sessions if not s.continued_in] or sessions

    def written(info: SessionInfo) -> int:
        try:
            return os.stat(store.path_for(info.session_id), follow_symlinks=False).st_mtime_ns
        except OSError:
            return 0

    return max(heads, key=lambda s: (written(s), s.date, s.session_id))


class Format(str, Enum):
    md = "md"
    json = "json"


def _document_of(ctx: typer.Context, session: str, config: Path | None,
                 sessions_dir: Path | None) -> tuple[SessionStore, str]:
    """The store and the id of the session ``session`` names; exits with a message if none."""
    from rollchat.storage.store import SessionStore, resolve

    store = SessionStore(command_config(ctx, config, sessions_dir).session.dir)
    try:
        return store, resolve(session, store.list_sessions()).session_id
    except RollchatError as exc:
        fail(str(exc), 1)


def show_command(
    ctx: typer.Context,
    session: SessionArg,
    sessions_dir: SessionsDirOpt = None,
    config: ConfigOpt = None,
) -> None:
    """Show a saved session for reading: header, turns, summary. In a terminal through the pager
    ($PAGER, else less); plain text when piped. The file is read as it is shown, a turn at a
    time: a session of any size starts at once and holds one turn in memory."""
    from rollchat.storage.transcript.stream import TranscriptStream, file_lines
    from rollchat.ui.show import show

    store, session_id = _document_of(ctx, session, config, sessions_dir)
    try:
        with store.open_file(session_id) as f:
            show(TranscriptStream(file_lines(f)), terminal=sys.stdout.isatty())
    except RollchatError as exc:  # a turn further on that cannot be read ends it there
        sys.stdout.flush()
        fail(f"{session_id}.md: {exc}" if isinstance(exc, TranscriptError) else str(exc), 1)


def export_command(
    ctx: typer.Context,
    session: SessionArg,
    chain: Annotated[bool, typer.Option(
        "--chain", help="The whole lineage of the session (its parents back to the first), "
        "oldest first.")] = False,
    fmt: Annotated[Format, typer.Option(
        "--format", help="md: the session files as they are; json: the parsed sessions "
        "(header, turns with their messages and tokens, summary).")] = Format.md,
    sessions_dir: SessionsDirOpt = None,
    config: ConfigOpt = None,
) -> None:
    """Print a saved session as one document (markdown or JSON); with --chain, its whole
    lineage. A missing or unreadable ancestor ends the chain with a warning."""
    from rollchat.storage.export import (
        Lineage,
        chain_json,
        chain_markdown,
        file_markdown,
        lineage,
        read_document,
        session_json,
    )

    store, session_id = _document_of(ctx, session, config, sessions_dir)
    try:
        found = lineage(store, session_id) if chain else Lineage([read_document(store,
                                                                                session_id)])
    except RollchatError as exc:
        fail(str(exc), 1)
    if found.broken is not None:
        from rollchat.ui.sanitize import harmless

        sys.stderr.write(f"rollchat: warning: {harmless(found.broken)}\n")
    if fmt is Format.json:
        document = (chain_json(found) if chain
                    else session_json(found.documents[0].transcript))
        text = json.dumps(document, indent=2, ensure_ascii=False) + "\n"
    else:
        text = chain_markdown(found) if chain else file_markdown(found.documents[0])
    if sys.stdout.isatty():  # a terminal interprets what a file holds: made harmless
        from rollchat.ui.sanitize import harmless

        text = harmless(text)
    sys.stdout.flush()
    sys.stdout.buffer.write(text.encode("utf-8"))
    sys.stdout.buffer.flush()
