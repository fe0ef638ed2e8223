"""Facts and episodes on the screen: the in-chat ``memory`` command and ``rollchat memory``
draw them through Renderer.line (one fact a line, its id first: what ``forget`` takes)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from rollchat.text.wording import plural
from rollchat.ui.sanitize import one_line

if TYPE_CHECKING:
    from rollchat.memory.records import Episode, Fact
    from rollchat.ui.app import ChatApp
    from rollchat.ui.render import Renderer

Row = tuple[tuple[str, str], ...]


FACT_INDENT = 6  # where a fact's text starts, and its continuation lines in a terminal


def applies(fact: Fact) -> str:
    """Where a fact applies, for people."""
    return "everywhere" if fact.scope == "user" else "this project"


def fact_row(fact: Fact) -> Row:
    outside = ("  added outside rollchat: not sent to the model until reviewed", "yellow") \
        if fact.outside else ("", "")
    return ((f"{fact.id:>4}  ", "bold"), (one_line(fact.text), ""),
            (f"  {fact.category} · {applies(fact)} · {one_line(fact.source)} · "
             f"{fact.created:%Y-%m-%d}", "dim"), outside)


def draw_facts(out: Renderer, facts: Sequence[Fact], problems: Sequence[str],
               where: str | None = None, notes: Sequence[str] = ()) -> None:
    """The facts, one a line; ``where``: the line saying where the memory lives; ``notes``:
    what else the user should know (memory found in the project, facts to review)."""
    if not facts:
        out.info("No facts remembered yet (remember TEXT adds one).")
    for fact in facts:
        out.line(*fact_row(fact), hang=FACT_INDENT)
    if facts:
        out.dim(f"{plural(len(facts), 'fact')}; forget ID forgets one for good.")
    if where:
        out.dim(where)
    warning = secrets_warning(facts)
    if warning:
        out.warn(warning)
    for problem in problems:
        out.warn(problem)
    for note in notes:
        out.warn(note)


def waiting_line(count: int) -> str | None:
    """The line about facts of the old shared store not placed in a project yet."""
    if not count:
        return None
    verb, whose = ("waits", "its") if count == 1 else ("wait", "their")
    return (f"memory: {plural(count, 'fact')} from before memory was kept per project {verb} "
            f"to be placed in {whose} project (not sent to the model): 'rollchat memory "
            "review' places them here")


def secrets_warning(facts: Sequence[Fact]) -> str | None:
    """One line naming the facts that look like they hold a secret (stored before secrets
    were refused, or written by hand), and how to remove them; None when there are none."""
    from rollchat.memory.sensitive import secret_in

    found = [(f.id, what) for f in facts if (what := secret_in(f.text)) is not None]
    if not found:
        return None
    which = "; ".join(f"{ident}: {what}" for ident, what in found)
    return (f"{plural(len(found), 'fact')} {'looks' if len(found) == 1 else 'look'} like "
            f"{'it holds' if len(found) == 1 else 'they hold'} a secret ({which}), and facts "
            "are sent to the model in later requests: 'rollchat memory prune --secrets' "
            "removes them from the file")


def draw_episodes(out: Renderer, episodes: Sequence[Episode], problems: Sequence[str]) -> None:
    if not episodes:
        out.info("No episodes yet (one is kept at every compaction and exit).")
    for e in episodes:
        title = f" · {one_line(e.title)}" if e.title else ""
        out.line((one_line(e.session_id), "cyan"), (f"{title} · {one_line(e.span)}", ""))
        for line in e.summary.splitlines():
            if line.strip():
                out.line((f"    {line}", "dim"))
    for problem in problems:
        out.warn(problem)


def show_facts(app: ChatApp) -> None:
    """The in-chat ``memory`` command."""
    from rollchat.errors import UsageError

    memory = app.session.memory
    if memory is None:
        raise UsageError("memory is off (memory.enabled is false, --no-memory or --no-save)")
    from rollchat.memory.location import memory_location

    facts = memory.store.listed()
    waiting = sum(f.outside for f in facts)
    notes = [f"{plural(waiting, 'fact')} added outside rollchat {'is' if waiting == 1 else 'are'}"
             " not sent to the model until reviewed: 'rollchat memory review'"] if waiting else []
    draw_facts(app.out, facts, memory.store.take_problems(),
               memory_location(app.session.config).line(), notes)
