"""Subcommands about saved sessions besides the listing: ``pick`` (choose one in a picker and
continue it), ``show`` (read one) and ``export`` (print one, or its whole lineage); and how
``--continue`` and a bare ``--resume`` choose the session the chat starts from. Registered on
``cli.app`` when cli is imported; each imports what it needs when it runs."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from rollchat.cli import ConfigOpt, SessionsDirOpt, app, fail
from rollchat.errors import ConfigError, RollchatError, UsageError

if TYPE_CHECKING:
    from rollchat.config import Config
    from rollchat.store import SessionStore


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
                         "--resume N|ID, or -c for the most recent")
    from rollchat.store import SessionStore

    store = SessionStore(cfg.session.dir)
    listing = store.list_sessions()
    if not listing.sessions:
        bad = f" ({len(listing.problems)} unreadable files)" if listing.problems else ""
        raise RollchatError(f"no saved sessions in {cfg.session.dir}{bad}: nothing to "
                            f"{'continue' if how == 'last' else 'choose from'}; start one "
                            "with 'rollchat'")
    if how == "last":
        return listing.sessions[0].session_id
    from rollchat.ui.picker import pick

    picked = pick(listing.sessions, store.load_summary)
    if picked.info is None:
        sys.stderr.write("rollchat: no session chosen\n")
        raise typer.Exit(130 if picked.cancelled == "interrupt" else 1)
    return picked.info.session_id


@app.command("pick")
def pick_command(
    ctx: typer.Context,
    sessions_dir: SessionsDirOpt = None,
    config: ConfigOpt = None,
) -> None:
    """Choose a saved session in a picker (type to filter; Enter resumes it, Esc cancels) and
    continue it in the chat. The chat's options go before 'pick': rollchat --yes pick."""
    from rollchat.cli import start_chat
    from rollchat.config import ConfigOverrides

    before: dict[str, Any] = ctx.obj or {}
    if before.get("starts"):
        fail(f"'pick' chooses the session itself: not with {before['starts'][0]}")
    chat = before.get("chat", {})
    overrides = ConfigOverrides(
        agent=chat.get("agent"), provider=chat.get("provider"), model=chat.get("model"),
        base_url=chat.get("base_url"), no_save=chat.get("no_save", False),
        sessions_dir=sessions_dir or before.get("sessions_dir"))
    try:
        code = start_chat(config or before.get("config"), overrides, resume=None,
                          yes=chat.get("yes", False), no_fork=chat.get("no_fork", False),
                          agent_file=chat.get("agent_file"),
                          show_tools=chat.get("show_tools", False), choose="pick")
    except (ConfigError, UsageError) as exc:
        fail(str(exc))
    except RollchatError as exc:
        fail(str(exc), 1)
    raise typer.Exit(code)


def _store(ctx: typer.Context, config: Path | None, sessions_dir: Path | None,
           ) -> SessionStore:
    """The sessions directory the options (given to the subcommand or before it) name."""
    from rollchat.config import ConfigOverrides, load_config
    from rollchat.store import SessionStore

    before: dict[str, Any] = ctx.obj or {}
    cfg = load_config(config_path=config or before.get("config"), env=os.environ,
                      cwd=Path.cwd(), overrides=ConfigOverrides(
                          sessions_dir=sessions_dir or before.get("sessions_dir")))
    if cfg.trust_notice:
        sys.stderr.write(f"rollchat: warning: {cfg.trust_notice}\n")
    return SessionStore(cfg.session.dir)
