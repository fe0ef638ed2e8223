"""``rollchat memory``: list the facts remembered across sessions (the default), ``forget ID``,
``edit`` (the facts file in $EDITOR, checked on save), ``episodes`` and ``prune``. Its own
Typer group (``build_memory_app``); each command imports what it needs when it runs."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer

from rollchat.cli.options import (
    ConfigOpt,
    JsonOpt,
    SessionsDirOpt,
    command_config,
    fail,
    given,
)
from rollchat.errors import RollchatError

if TYPE_CHECKING:
    from rollchat.config.settings import Config
    from rollchat.memory.store import MemoryStore
    from rollchat.ui.render import Renderer

AgentOpt = Annotated[Optional[str],  # noqa: UP045 - typer needs Optional on 3.10
                     typer.Option("--agent", help="Whose memory (default: the default agent).")]


def build_memory_app() -> typer.Typer:
    """The ``memory`` group: listing the facts is what it does without a subcommand."""
    group = typer.Typer(
        help="The facts and episodes remembered across sessions (list, forget, edit, episodes, "
             "prune).", no_args_is_help=False, rich_markup_mode=None)
    group.callback(invoke_without_command=True)(memory_list)
    group.command("forget")(memory_forget)
    group.command("episodes")(memory_episodes)
    group.command("prune")(memory_prune)
    group.command("edit")(memory_edit)
    return group


def _store(cfg: Config) -> MemoryStore:
    from rollchat.memory.keeper import open_store

    try:
        return open_store(cfg)
    except RollchatError as exc:
        fail(str(exc))


def _warn(problems: list[str]) -> None:
    from rollchat.ui.sanitize import harmless

    for problem in problems:
        sys.stderr.write(f"rollchat: warning: {harmless(problem)}\n")


def _print_json(data: object) -> None:
    print(json.dumps(data, indent=2, ensure_ascii=False))


def memory_list(
    ctx: typer.Context,
    as_json: JsonOpt = False,
    sessions_dir: SessionsDirOpt = None,
    config: ConfigOpt = None,
    agent: AgentOpt = None,
) -> None:
    """List the facts remembered (both stores, forgotten ones left out)."""
    # the group's options count for its subcommand too: rollchat memory --agent X forget 3
    ctx.obj = given(ctx).override(config=config, sessions_dir=sessions_dir, agent=agent)
    if ctx.invoked_subcommand is not None:
        return
    from rollchat.memory.location import memory_location

    cfg = command_config(ctx)
    store = _store(cfg)
    try:
        facts = store.facts()
    except RollchatError as exc:
        fail(str(exc), 1)
    if as_json:
        from rollchat.ui.memory_view import secrets_warning

        warning = secrets_warning(facts)
        _warn([*store.take_problems(), *([warning] if warning else [])])
        _print_json({"facts": [f.as_json() for f in facts], "dir": str(store.dir)})
        return
    from rollchat.ui.memory_view import draw_facts
    from rollchat.ui.render import output_renderer

    draw_facts(output_renderer(), facts, store.take_problems(), memory_location(cfg).line())


def memory_forget(
    ctx: typer.Context,
    fact_id: Annotated[int, typer.Argument(metavar="ID", help="The fact's id (see "
                                                              "'rollchat memory').")],
    sessions_dir: SessionsDirOpt = None,
    config: ConfigOpt = None,
    agent: AgentOpt = None,
) -> None:
    """Forget a fact for good (it is never extracted again)."""
    store = _store(command_config(ctx, config, sessions_dir, agent=agent))
    try:
        fact = store.forget(fact_id)
    except RollchatError as exc:
        fail(str(exc), 1)
    _warn(store.take_problems())
    from rollchat.ui.sanitize import harmless

    print(harmless(f"Forgot {fact.id}: {fact.text}"))


def memory_episodes(
    ctx: typer.Context,
    as_json: JsonOpt = False,
    sessions_dir: SessionsDirOpt = None,
    config: ConfigOpt = None,
    agent: AgentOpt = None,
) -> None:
    """List the episodes: one session summary per compaction or exit, oldest first."""
    store = _store(command_config(ctx, config, sessions_dir, agent=agent))
    try:
        episodes = store.episodes()
    except RollchatError as exc:
        fail(str(exc), 1)
    if as_json:
        _warn(store.problems)
        _print_json({"episodes": [e.as_json() for e in episodes]})
        return
    from rollchat.ui.memory_view import draw_episodes
    from rollchat.ui.render import output_renderer

    draw_episodes(output_renderer(), episodes, store.problems)


def memory_prune(
    ctx: typer.Context,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Only list them.")] = False,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Forget them without asking.")]
    = False,
    days: Annotated[Optional[int],  # noqa: UP045
                    typer.Option("--days", min=1, help="Unused for this many days "
                                 "(default: memory.max_age_days).")] = None,
    secrets: Annotated[bool, typer.Option(
        "--secrets", help="Instead: the facts that look like a secret (kept before secrets "
                          "were refused), removed from the file, forgotten ones too.")] = False,
    sessions_dir: SessionsDirOpt = None,
    config: ConfigOpt = None,
    agent: AgentOpt = None,
) -> None:
    """List the facts unused for memory.max_age_days and, when asked, forget them
    (--secrets: the facts that look like a secret, removed)."""
    cfg = command_config(ctx, config, sessions_dir, agent=agent)
    if secrets:
        _prune_secrets(_store(cfg), dry_run=dry_run, yes=yes)
        return
    age = days or cfg.memory.max_age_days
    if age is None:
        fail("memory.max_age_days is not set (pruning is off): set it in the config or pass "
             "--days N")
    store = _store(cfg)
    try:
        stale = store.stale(age)
    except RollchatError as exc:
        fail(str(exc), 1)
    _warn(store.take_problems())
    from rollchat.ui.memory_view import FACT_INDENT, fact_row
    from rollchat.ui.render import output_renderer

    out = output_renderer()
    if not stale:
        out.info(f"No fact has gone unused for {age} days.")
        return
    out.info(f"Unused for {age} days or more:")
    for fact in stale:
        out.line(*fact_row(fact), hang=FACT_INDENT)
    if not _go_ahead(out, dry_run=dry_run, yes=yes, listed=f"{len(stale)} to prune",
                     refusal=f"{len(stale)} facts would be forgotten",
                     question=f"Forget these {len(stale)} facts for good?"):
        return
    for fact in stale:
        try:
            store.forget(fact.id)
        except RollchatError as exc:
            out.warn(str(exc))
    out.info(f"Forgot {len(stale)} facts.")


def _go_ahead(out: Renderer, *, dry_run: bool, yes: bool, listed: str, refusal: str,
              question: str) -> bool:
    """Whether a prune listed above goes ahead: not on --dry-run (``listed``: how many it
    would change, said then), at once with --yes, else when the user says yes; without a
    terminal to ask, it fails with ``refusal`` and how to go on."""
    if dry_run:
        out.dim(f"{listed}; nothing changed (--dry-run).")
        return False
    if not yes:
        if not sys.stdin.isatty():
            fail(f"{refusal}: pass --yes to confirm, or --dry-run to only list them", 1)
        from rollchat.ui.approve import yes_or_no

        if not yes_or_no(question, out):  # Enter alone or Ctrl-D: no
            out.info("Nothing changed.")
            return False
    return True


def _prune_secrets(store: MemoryStore, *, dry_run: bool, yes: bool) -> None:
    """``prune --secrets``: remove the lines, not only forget the facts (a forgotten fact
    keeps its text in the file)."""
    try:
        found = store.secrets()
    except RollchatError as exc:
        fail(str(exc), 1)
    _warn(store.take_problems())
    from rollchat.ui.memory_view import FACT_INDENT, fact_row
    from rollchat.ui.render import output_renderer

    out = output_renderer()
    if not found:
        out.info("No fact looks like a secret.")
        return
    out.info("These facts look like a secret:")
    for fact, what, forgotten in found:
        out.line(*fact_row(fact), (f"  ({what}{', forgotten' if forgotten else ''})", "dim"),
                 hang=FACT_INDENT)
    if not _go_ahead(out, dry_run=dry_run, yes=yes, listed=f"{len(found)} to remove",
                     refusal=f"{len(found)} facts would be removed from the file",
                     question=f"Remove these {len(found)} facts from the file?"):
        return
    try:
        removed = store.drop_secrets()
    except RollchatError as exc:
        fail(str(exc), 1)
    out.info(f"Removed {len(removed)} facts from the file.")


def memory_edit(
    ctx: typer.Context,
    user: Annotated[bool, typer.Option("--user", help="Edit the user-level facts instead "
                                                      "of the project's.")] = False,
    sessions_dir: SessionsDirOpt = None,
    config: ConfigOpt = None,
    agent: AgentOpt = None,
) -> None:
    """Open the facts file in $EDITOR; it is checked when you save (delete a line to forget
    that fact for good)."""
    from rollchat.memory import edit

    store = _store(command_config(ctx, config, sessions_dir, agent=agent))
    path = store.user_path if user else store.facts_path
    assert path is not None
    scope = "user" if user else "project"
    try:
        base = path.read_text(encoding="utf-8") if path.exists() else ""
    except (OSError, UnicodeDecodeError) as exc:
        fail(f"cannot read {path}: {exc}", 1)
    text = base
    while True:
        text = _run_editor(path, text)
        problems = edit.check(text, scope)
        if not problems:
            break
        from rollchat.ui.sanitize import harmless

        sys.stderr.write(f"rollchat: {path} has {len(problems)} problem(s):\n")
        for problem in problems:
            sys.stderr.write(f"  {harmless(problem)}\n")
        answer = _ask("Edit again (e) or discard your changes (d)? [e/d] ")
        if answer != "e":
            print("Discarded: the file is unchanged.")
            raise typer.Exit(1)
    try:
        outcome = edit.save(store, path, scope, base, text)
    except RollchatError as exc:
        fail(f"{exc} (the file is unchanged)", 1)
    if not outcome.changed:
        print("No changes.")
        return
    notes = [f"{outcome.forgotten} deleted fact(s) forgotten"] if outcome.forgotten else []
    if outcome.removed:
        notes.append(f"{outcome.removed} deleted fact(s) holding a secret removed")
    if outcome.merged:
        notes.append(f"{outcome.merged} fact(s) added meanwhile kept")
    print(f"Saved {path}" + (f" ({'; '.join(notes)})" if notes else "") + ".")


def _ask(question: str) -> str:
    sys.stderr.write(question)
    sys.stderr.flush()
    line = sys.stdin.readline()
    return line.strip().lower()[:1] if line else "d"


def _run_editor(path: Path, text: str) -> str:
    """``text`` edited in $VISUAL / $EDITOR (a temporary copy next to the facts file)."""
    import shlex
    import subprocess
    import tempfile

    command = os.environ.get("VISUAL") or os.environ.get("EDITOR") or "vi"
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    from rollchat.memory.edit import edit_prefix

    fd, temp = tempfile.mkstemp(prefix=edit_prefix(path), suffix=".jsonl", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        try:
            status = subprocess.call([*shlex.split(command), temp])
        except (OSError, ValueError) as exc:
            fail(f"cannot run the editor {command!r}: {exc}", 1)
        if status != 0:
            fail(f"the editor {command!r} exited with status {status}: nothing changed", 1)
        try:
            return Path(temp).read_text(encoding="utf-8")
        except UnicodeDecodeError:
            return Path(temp).read_bytes().decode("utf-8", "replace")
    finally:  # the copy and the editor's backups of it (``copy~``, ``.copy.swp``): every fact
        name = Path(temp).name  # of the file, a secret the user just deleted too
        for left in [*path.parent.glob(f"{name}*"), *path.parent.glob(f".{name}*")]:
            left.unlink(missing_ok=True)
