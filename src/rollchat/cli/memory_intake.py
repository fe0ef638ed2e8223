"""``rollchat memory review`` and ``rollchat memory import PATH``: facts that came from
elsewhere (added outside rollchat, left from the old shared store, or a project's memory files)
shown and asked about before the model is ever given them; and the helpers the ``memory``
commands share (opening the store, asking, going ahead)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer

from rollchat.cli.options import (
    ConfigOpt,
    SessionsDirOpt,
    command_config,
    fail,
)
from rollchat.errors import RollchatError
from rollchat.text.wording import plural

if TYPE_CHECKING:
    from rollchat.config.settings import Config
    from rollchat.memory.opening import Opened
    from rollchat.ui.render import Renderer

AgentOpt = Annotated[Optional[str],  # noqa: UP045 - typer needs Optional on 3.10
                     typer.Option("--agent", help="Whose memory (default: the default agent).")]


def opened_or_fail(cfg: Config) -> Opened:
    from rollchat.memory.opening import opened

    try:
        return opened(cfg)
    except RollchatError as exc:
        fail(str(exc))


def warn(problems: list[str]) -> None:
    from rollchat.ui.sanitize import harmless

    for problem in problems:
        sys.stderr.write(f"rollchat: warning: {harmless(problem)}\n")


def go_ahead(out: Renderer, *, dry_run: bool, yes: bool, listed: str, refusal: str,
              question: str | None) -> bool:
    """Whether a change listed above goes ahead: not on --dry-run (``listed``: how many it
    would change, said then), at once with --yes, else when the user says yes (``question``;
    None: the caller asks item by item); without a terminal to ask, it fails with ``refusal``
    and how to go on."""
    if dry_run:
        out.dim(f"{listed}; nothing changed (--dry-run).")
        return False
    if not yes:
        if not sys.stdin.isatty():
            fail(f"{refusal}: pass --yes to confirm, or --dry-run to only list them", 1)
        from rollchat.ui.approve import yes_or_no

        if question is not None and not yes_or_no(question, out):  # Enter alone or Ctrl-D: no
            out.info("Nothing changed.")
            return False
    return True


def ask(question: str) -> str:
    sys.stderr.write(question)
    sys.stderr.flush()
    line = sys.stdin.readline()
    return line.strip().lower()[:1] if line else "d"


def memory_review(
    ctx: typer.Context,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Keep them all without asking.")]
    = False,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Only list them.")] = False,
    sessions_dir: SessionsDirOpt = None,
    config: ConfigOpt = None,
    agent: AgentOpt = None,
) -> None:
    """Review the facts added outside rollchat (and those from before memory was kept per
    project): keep each (it is then sent to the model; a waiting one is placed in this
    project), forget it, or skip it."""
    from rollchat.memory.migrate import claim, unplaced_store
    from rollchat.ui.memory_view import FACT_INDENT, fact_row
    from rollchat.ui.render import output_renderer

    found = opened_or_fail(command_config(ctx, config, sessions_dir, agent=agent))
    store, home = found.store, found.where.home
    waiting = unplaced_store(home, store.agent_key)
    try:
        items = [(f, False) for f in store.pending()] + [(f, True) for f in waiting.listed()]
    except RollchatError as exc:
        fail(str(exc), 1)
    warn([*store.take_problems(), *waiting.take_problems()])
    out = output_renderer()
    if not items:
        out.info("Nothing to review: every fact was written by rollchat and is in its place.")
        return
    out.info("To review (not sent to the model until kept):")
    for fact, unplaced in items:
        why = "from before memory was kept per project" if unplaced else \
            "added outside rollchat"
        out.line(*fact_row(fact)[:3], (f"  ({why})", "dim"), hang=FACT_INDENT)
    if not go_ahead(out, dry_run=dry_run, yes=yes, listed=f"{len(items)} to review",
                     refusal=f"{plural(len(items), 'fact')} to review",
                    question=None):
        return
    kept = forgot = 0
    for fact, unplaced in items:
        answer = "k" if yes else ask(f"Keep {fact.id} (k), forget it (f) or skip (s)? ")
        try:
            if answer == "k":
                kept += claim(home, store, {fact.id}) if unplaced else \
                    len(store.accept([fact.id]))
            elif answer == "f":
                (waiting if unplaced else store).forget(fact.id)
                forgot += 1
        except RollchatError as exc:
            out.warn(str(exc))
    out.info(f"Kept {kept}, forgot {forgot}, skipped {len(items) - kept - forgot}.")


def memory_import(
    ctx: typer.Context,
    path: Annotated[Path, typer.Argument(metavar="PATH", help="A memory directory (e.g. a "
                                         "project's sessions/memory) or a facts file.")],
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Add without asking.")] = False,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Only show what it would add.")]
    = False,
    sessions_dir: SessionsDirOpt = None,
    config: ConfigOpt = None,
    agent: AgentOpt = None,
) -> None:
    """Add the facts and episodes of memory files rollchat does not read by itself (a
    project's sessions/memory), after showing them: preferences go to yours (everywhere), the
    rest to this project."""
    from rollchat.memory import importing
    from rollchat.memory.records import PERSONAL
    from rollchat.ui.render import output_renderer
    from rollchat.ui.sanitize import one_line

    store = opened_or_fail(command_config(ctx, config, sessions_dir, agent=agent)).store
    try:
        found = importing.plan(path, store)
    except RollchatError as exc:
        fail(str(exc), 1)
    warn(found.damaged)
    out = output_renderer()
    skipped = [f"{found.known} already remembered"] if found.known else []
    if found.secrets:
        skipped.append(f"{found.secrets} that look like a secret (never added)")
    if skipped:
        out.dim(f"Left out: {'; '.join(skipped)}.")
    if not found.facts and not found.episodes:
        out.info(f"Nothing to add from {path}.")
        if not dry_run:  # (all of it known: a start need not name it again)
            try:
                importing.record_imported(store, importing.files_of(path))
            except RollchatError as exc:
                warn([str(exc)])
        return
    what = f"{plural(len(found.facts), 'fact')} and {plural(len(found.episodes), 'episode')}"
    out.info(f"From {path}, would add {what}:")
    for c in found.facts:
        where = "everywhere" if c.category in PERSONAL and store.scope == "user" else \
            "this project"
        out.line(("  + ", "bold"), (one_line(c.text), ""), (f"  {c.category} · {where}", "dim"),
                 hang=4)
    for e in found.episodes:
        out.line(("  + episode ", "dim"), (one_line(e.session_id), "cyan"))
    if not go_ahead(out, dry_run=dry_run, yes=yes, listed=f"{len(found.facts)} to add",
                     refusal=f"{what} would be added", question=f"Add {what}?"):
        return
    try:
        facts, episodes = importing.add(found, store)
        importing.record_imported(store, importing.files_of(path))
    except RollchatError as exc:
        fail(str(exc), 1)
    out.info(f"Added {plural(facts, 'fact')} and {plural(episodes, 'episode')}.")
