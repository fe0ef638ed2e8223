"""The ``rollchat`` subcommands over the saved sessions as a whole: ``sessions`` (the
listing), ``search`` and ``rename``. Each imports what it needs when it runs."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer

from rollchat.cli.options import ConfigOpt, JsonOpt, SessionsDirOpt, command_config, fail
from rollchat.errors import RollchatError

if TYPE_CHECKING:
    from rollchat.storage.listing import SessionInfo

_JSON_SURROGATE = re.compile(r"[\ud800-\udfff]")  # written as \u escapes: the JSON stays exact


def _sessions_dir(ctx: typer.Context, config: Path | None, sessions_dir: Path | None) -> Path:
    """The sessions directory the config and the options name."""
    return command_config(ctx, config, sessions_dir).session.dir


def _json(value: object) -> None:
    """``value`` as JSON on stdout, exact: a lone surrogate (a file name that is not UTF-8)
    is a \\u escape."""
    print(_JSON_SURROGATE.sub(lambda m: f"\\u{ord(m[0]):04x}",
                              json.dumps(value, indent=2, ensure_ascii=False)))


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
    from rollchat.storage.store import SessionStore

    if show_all and limit is not None:
        fail("use either --all or --limit N, not both")
    try:
        store = SessionStore(_sessions_dir(ctx, config, sessions_dir))
        page = store.page(None if show_all else limit or DEFAULT_LIMIT)
    except RollchatError as exc:
        fail(str(exc), 1)
    if as_json:
        # they and their ancestors by id, for the chain costs
        lineage = {s.session_id: s for s in store.lineage(page.sessions)}
        _json({
            "sessions": [
                {"number": i.number, "id": i.session_id, "file": i.file_name, "agent": i.agent,
                 "title": i.title,
                 "date": i.date.isoformat(), "queries": i.queries, "tokens": i.tokens,
                 "tokens_exact": i.tokens_exact, "context_tokens": i.context_tokens,
                 "first_query": i.first_query_preview, "has_summary": i.has_summary,
                 "parent": i.resumed_from, "forked": i.forked,
                 "continued_in": list(i.continued_in), "summary_problem": i.summary_problem,
                 **_costs(i, lineage)}
                for i in page.sessions
            ],
            "problems": [{"file": name, "reason": why} for name, why in page.problems],
            "total": page.total,
        })
        return
    from rollchat.ui.render import output_renderer
    from rollchat.ui.table import more_line

    out = output_renderer()
    out.sessions(page.sessions, page.problems)
    more = more_line(page, "'rollchat sessions --all' lists them all, '--limit N' the N "
                           "most recent")
    if more:
        out.dim(more)


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
    from rollchat.storage.store import SessionStore

    query = " ".join(text)
    try:
        hits = SessionStore(_sessions_dir(ctx, config, sessions_dir)).search(
            query, limit or DEFAULT_LIMIT)
    except RollchatError as exc:
        fail(str(exc), 1)
    if as_json:
        _json([{"id": h.session_id, "title": h.title, "date": h.date.isoformat(),
                "snippet": h.text, "matched": h.matched, "number": h.number} for h in hits])
        return
    from rollchat.ui.render import output_renderer
    from rollchat.ui.table import ROW_INDENT, hit_rows

    out = output_renderer()
    if not hits:
        out.info(f"No saved session matches {query!r}.")
    for hit in hits:
        for row in hit_rows(hit, out.terminal):
            out.line(*row, hang=ROW_INDENT)


def _costs(info: SessionInfo, sessions: dict[str, SessionInfo]) -> dict[str, float | None]:
    """A listed session's cost in dollars and its chain's (itself and the sessions it
    continues: the known costs summed); null when no price was known."""
    from rollchat.models.prices import chain_of

    chain = chain_of(info, sessions)
    return {"cost": None if info.cost is None else round(info.cost, 6),
            "chain_cost": round(chain.spent, 6) if chain.known else None}
