"""The ``rollchat prune`` and ``rollchat fork`` subcommands (living with many sessions).
Registered on ``cli.app`` when subcommands is imported; each imports what it needs when it runs.

``prune`` never deletes silently: it lists what would go and asks (or takes ``-y``); without a
terminal and without ``-y`` it refuses; ``--dry-run`` deletes nothing. ``fork ID`` starts the
chat in a new session made from ID's summary, leaving ID open (no ``Continued In`` link)."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from rollchat.cli.main import ConfigOpt, SessionsDirOpt, app, fail
from rollchat.cli.sessions import _given
from rollchat.errors import ConfigError, RollchatError, UsageError


def _size(n: int) -> str:
    if n < 1024:
        return f"{n:,} bytes"
    return f"{n / 1024:,.1f} KB" if n < 1024 * 1024 else f"{n / 1024 / 1024:,.1f} MB"


@app.command("prune")
def prune_command(
    ctx: typer.Context,
    older_than: Annotated[Optional[str], typer.Option(  # noqa: UP045
        "--older-than", help="Age of the sessions to delete: last written at least this long "
        "ago (e.g. 30d, 12h, 2w).")] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="List them; delete nothing.")
                       ] = False,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Delete without asking.")] = False,
    sessions_dir: SessionsDirOpt = None,
    config: ConfigOpt = None,
) -> None:
    """Delete old sessions: lists those not written for --older-than and asks first (or -y).
    Nothing is deleted without --older-than; a session open in another rollchat process is
    never deleted; a child keeps its parent's summary in its own file."""
    from rollchat.config.settings import ConfigOverrides, load_config
    from rollchat.storage.prune import candidates, parse_duration, prune
    from rollchat.storage.store import SessionStore
    from rollchat.ui.sanitize import one_line

    if older_than is None:
        fail("prune needs --older-than AGE (e.g. 30d): nothing is ever deleted without it")
    try:
        age, words = parse_duration(older_than)
        cfg = load_config(config_path=_given(ctx, "config", config), env=os.environ,
                          cwd=Path.cwd(), overrides=ConfigOverrides(
                              sessions_dir=_given(ctx, "sessions_dir", sessions_dir)))
        store = SessionStore(cfg.session.dir)
        found = candidates(store, age)
    except (ConfigError, UsageError) as exc:
        fail(str(exc))
    except RollchatError as exc:
        fail(str(exc), 1)
    going = [c for c in found if not c.busy]
    if not found:
        print(f"No session in {store.root} was last written {words} ago or earlier.")
        return
    total = sum(c.size for c in going)
    print(f"{len(going)} session{'' if len(going) == 1 else 's'} in {store.root} last written "
          f"{words} ago or earlier ({_size(total)}):")
    for c in found:
        info = c.info
        title = f' · "{one_line(info.title)}"' if info.title else ""
        kept = " · KEPT: open in another rollchat process" if c.busy else ""
        print(f"  {info.session_id} · {c.written:%Y-%m-%d %H:%M} · {info.queries} "
              f"quer{'y' if info.queries == 1 else 'ies'} · {_size(c.size)}{title}{kept}")
        if c.children and not c.busy:
            print(f"      continued in {', '.join(c.children)} (kept: it holds this "
                  "session's summary)")
    if dry_run:
        print("Dry run: nothing deleted.")
        return
    if not going:
        print("Nothing to delete.")
        return
    if not yes:
        if not (sys.stdin.isatty() and sys.stdout.isatty()):
            fail("not deleting without a terminal to ask: pass -y to delete them (or "
                 "--dry-run to only list them)", 1)
        question = ("Delete this session?" if len(going) == 1
                    else f"Delete these {len(going)} sessions?")
        try:
            sure = typer.confirm(question, default=False)
        except typer.Abort:  # Ctrl-C or end of input at the question
            print("\nNothing deleted.")
            raise typer.Exit(130) from None
        if not sure:
            print("Nothing deleted.")
            raise typer.Exit(1)
    done = prune(store, going)
    for c, why in done.skipped:
        sys.stderr.write(f"rollchat: warning: kept {c.info.session_id}: {one_line(why)}\n")
    print(f"Deleted {len(done.deleted)} session{'' if len(done.deleted) == 1 else 's'} "
          f"({_size(sum(c.size for c in done.deleted))}).")
    if done.skipped:
        raise typer.Exit(1)


@app.command("fork")
def fork_command(
    ctx: typer.Context,
    session: Annotated[str, typer.Argument(metavar="N|ID", help="Session number (see "
                                                "'sessions'), id or unique id prefix.")],
    agent: Annotated[Optional[str], typer.Option(help="Agent name from the config.")  # noqa: UP045
                     ] = None,
    model: Annotated[Optional[str], typer.Option(help="Model name.")] = None,  # noqa: UP045
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Answer yes to questions.")] = False,
    sessions_dir: SessionsDirOpt = None,
    config: ConfigOpt = None,
) -> None:
    """Start the chat in a new session made from a saved session's summary, leaving that
    session open (its header gets no 'Continued In'; the new one says 'Forked From')."""
    from rollchat.cli.main import start_chat
    from rollchat.config.settings import ConfigOverrides

    before = ctx.obj or {}  # the chat's options given before `fork` count too
    if before.get("starts"):
        fail(f"'fork' chooses the session itself: not with {before['starts'][0]}")
    chat = before.get("chat", {})
    overrides = ConfigOverrides(agent=agent or chat.get("agent"),
                                provider=chat.get("provider"),
                                model=model or chat.get("model"),
                                base_url=chat.get("base_url"), no_save=chat.get("no_save", False),
                                sessions_dir=_given(ctx, "sessions_dir", sessions_dir))
    try:
        code = start_chat(_given(ctx, "config", config), overrides, resume=None,
                          yes=yes or bool(chat.get("yes")), agent_file=chat.get("agent_file"),
                          show_tools=chat.get("show_tools", False), fork=session)
    except (ConfigError, UsageError) as exc:
        fail(str(exc))
    except RollchatError as exc:
        fail(str(exc), 1)
    raise typer.Exit(code)
