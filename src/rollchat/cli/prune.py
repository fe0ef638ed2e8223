"""``rollchat prune``: deleting old sessions (the work is storage/prune.py; this is its command
line). It never deletes silently: it lists what would go and asks (or takes ``-y``); without a
terminal and without ``-y`` it refuses; ``--dry-run`` deletes nothing."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Annotated, Optional

import typer

from rollchat.cli.options import ConfigOpt, SessionsDirOpt, command_config, fail
from rollchat.errors import RollchatError, UsageError

if TYPE_CHECKING:
    from rollchat.storage.prune import OldSession


def _size(n: int) -> str:
    if n < 1024:
        return f"{n:,} bytes"
    return f"{n / 1024:,.1f} KB" if n < 1024 * 1024 else f"{n / 1024 / 1024:,.1f} MB"


def _sessions(n: int) -> str:
    return f"{n} session{'' if n == 1 else 's'}"


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
    from rollchat.storage.prune import old_sessions, parse_duration, prune
    from rollchat.storage.store import SessionStore
    from rollchat.ui.sanitize import one_line

    if older_than is None:
        fail("prune needs --older-than AGE (e.g. 30d): nothing is ever deleted without it")
    try:
        age, words = parse_duration(older_than)
        cfg = command_config(ctx, config, sessions_dir, trust_warning=False)
        store = SessionStore(cfg.session.dir)
        found = old_sessions(store, age)
    except UsageError as exc:
        fail(str(exc))
    except RollchatError as exc:
        fail(str(exc), 1)
    if not found:
        print(f"No session in {store.root} was last written {words} ago or earlier.")
        return
    going = [c for c in found if not c.busy]
    _list(found, going, f"in {store.root} last written {words} ago or earlier")
    if not _go_ahead(going, dry_run=dry_run, yes=yes):
        return
    done = prune(store, going)
    for c, why in done.skipped:
        sys.stderr.write(f"rollchat: warning: kept {c.info.session_id}: {one_line(why)}\n")
    print(f"Deleted {_sessions(len(done.deleted))} "
          f"({_size(sum(c.size for c in done.deleted))}).")
    if done.skipped:
        raise typer.Exit(1)


def _list(found: list[OldSession], going: list[OldSession], which: str) -> None:
    """The sessions found, those kept marked (``going``: the others)."""
    from rollchat.ui.sanitize import one_line

    print(f"{_sessions(len(going))} {which} ({_size(sum(c.size for c in going))}):")
    for c in found:
        info = c.info
        title = f' · "{one_line(info.title)}"' if info.title else ""
        kept = " · KEPT: open in another rollchat process" if c.busy else ""
        print(f"  {info.session_id} · {c.written:%Y-%m-%d %H:%M} · {info.queries} "
              f"quer{'y' if info.queries == 1 else 'ies'} · {_size(c.size)}{title}{kept}")
        if c.children and not c.busy:
            print(f"      continued in {', '.join(c.children)} (kept: it holds this "
                  "session's summary)")


def _go_ahead(going: list[OldSession], *, dry_run: bool, yes: bool) -> bool:
    """Whether the listed sessions are deleted: not on --dry-run, at once with -y, else when
    the user says yes in a terminal (without one, or no, Enter or Ctrl-D there: exit 1; Ctrl-C
    at the question, 130)."""
    if dry_run:
        print("Dry run: nothing deleted.")
        return False
    if not going:
        print("Nothing to delete.")
        return False
    if yes:
        return True
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        fail("not deleting without a terminal to ask: pass -y to delete them (or "
             "--dry-run to only list them)", 1)
    question = ("Delete this session?" if len(going) == 1
                else f"Delete these {len(going)} sessions?")
    from rollchat.ui.approve import yes_or_no
    from rollchat.ui.render import output_renderer

    try:
        sure = yes_or_no(question, output_renderer())  # Ctrl-D: no
    except KeyboardInterrupt:
        print("\nNothing deleted.")
        raise typer.Exit(130) from None
    if not sure:
        print("Nothing deleted.")
        raise typer.Exit(1)
    return True
