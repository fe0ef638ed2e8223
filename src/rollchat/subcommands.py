"""The ``rollchat`` subcommands besides the chat: ``sessions``, ``audit``, ``trust`` and
``init-agent``. Registered on ``cli.app`` when cli is imported; each imports what it needs when
it runs."""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer

from rollchat.cli import ConfigOpt, SessionsDirOpt, app, fail
from rollchat.errors import ConfigError, RollchatError, UsageError

if TYPE_CHECKING:
    from rollchat.listing import SessionInfo

_JSON_SURROGATE = re.compile(r"[\ud800-\udfff]")  # written as \u escapes: the JSON stays exact

def _given(ctx: typer.Context, name: str, value: Path | None) -> Path | None:
    """An option given to the subcommand, else the same one given before it."""
    if value is not None:
        return value
    before: Path | None = (ctx.obj or {}).get(name)
    return before


@app.command("sessions")
def sessions_command(
    ctx: typer.Context,
    sessions_dir: SessionsDirOpt = None,
    config: ConfigOpt = None,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """List saved sessions, most recent first (the numbers 'resume N' uses)."""
    from rollchat.config import ConfigOverrides, load_config
    from rollchat.store import SessionStore

    try:
        cfg = load_config(config_path=_given(ctx, "config", config), env=os.environ,
                          cwd=Path.cwd(), overrides=ConfigOverrides(
                              sessions_dir=_given(ctx, "sessions_dir", sessions_dir)))
        if cfg.trust_notice:
            sys.stderr.write(f"rollchat: warning: {cfg.trust_notice}\n")
        store = SessionStore(cfg.session.dir)
        listing = store.list_sessions()
    except ConfigError as exc:
        fail(str(exc))
    except RollchatError as exc:
        fail(str(exc), 1)
    if as_json:  # exact: a lone surrogate (a file name that is not UTF-8) is a \u escape
        print(_JSON_SURROGATE.sub(lambda m: f"\\u{ord(m[0]):04x}", json.dumps({
            "sessions": [
                {"number": i.number, "id": i.session_id, "file": i.file_name, "agent": i.agent,
                 "date": i.date.isoformat(), "queries": i.queries, "tokens": i.tokens,
                 "tokens_exact": i.tokens_exact, "context_tokens": i.context_tokens,
                 "first_query": i.first_query_preview, "has_summary": i.has_summary,
                 "parent": i.resumed_from, "forked": i.forked,
                 "continued_in": list(i.continued_in), "summary_problem": i.summary_problem,
                 **_costs(i, listing.sessions)}
                for i in listing.sessions
            ],
            "problems": [{"file": name, "reason": why} for name, why in listing.problems],
        }, indent=2, ensure_ascii=False)))
        return
    from rich.console import Console

    from rollchat.ui.render import Renderer, plain_console

    console = Console() if sys.stdout.isatty() else plain_console()
    Renderer(console, interactive=False).sessions(listing.sessions, listing.problems)


@app.command("init-agent")
def init_agent_command(
    path: Annotated[Path, typer.Argument(help="Where to write the agent file.")],
) -> None:
    """Write a commented example agent file with one tool (never over an existing file)."""
    from rollchat.agent_setup import init_agent

    try:
        print(init_agent(path))
    except UsageError as exc:
        fail(str(exc), 1)


def _costs(info: SessionInfo, sessions: list[SessionInfo]) -> dict[str, float | None]:
    """A listed session's cost in dollars and its chain's (itself and the sessions it
    continues: the known costs summed); null when no price was known."""
    from rollchat.prices import chain_of

    chain = chain_of(info, sessions)
    return {"cost": None if info.cost is None else round(info.cost, 6),
            "chain_cost": round(chain.spent, 6) if chain.known else None}


@app.command("audit")
def audit_command(
    ctx: typer.Context,
    session: Annotated[str, typer.Argument(help="Session number (see 'sessions'), id or id "
                                                "prefix.")],
    sessions_dir: SessionsDirOpt = None,
    config: ConfigOpt = None,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """Compare a session's summary with its own transcript: the named items (decisions, open
    tasks, preferences, names, numbers, paths) it kept and lost. Exit status 1 when a
    decision or an open task is lost."""
    from rollchat.audit import audit_session, report
    from rollchat.config import ConfigOverrides, load_config
    from rollchat.store import SessionStore

    try:
        cfg = load_config(config_path=_given(ctx, "config", config), env=os.environ,
                          cwd=Path.cwd(), overrides=ConfigOverrides(
                              sessions_dir=_given(ctx, "sessions_dir", sessions_dir)))
        result = audit_session(SessionStore(cfg.session.dir), session)
    except ConfigError as exc:
        fail(str(exc))
    except RollchatError as exc:
        fail(str(exc), 2)
    if as_json:
        print(json.dumps({key: [{"text": i.text, "kind": i.kind} for i in items]
                          for key, items in (("kept", result.kept), ("lost", result.lost))},
                         indent=2, ensure_ascii=False))
    else:
        from rollchat.ui.sanitize import harmless

        print("\n".join(harmless(line) for line in report(result)))
    raise typer.Exit(1 if result.failed else 0)


@app.command("trust")
def trust_command(
    path: Annotated[
        Optional[Path],  # noqa: UP045 - typer needs Optional on 3.10
        typer.Argument(help="The project config file (default: ./rollchat.yml)."),
    ] = None,
) -> None:
    """Trust a project config file: its base_url, api_key_env and paths outside its directory
    apply from now on, until the file changes."""
    from rollchat.config import PROJECT_FILE, default_user_config_dir
    from rollchat.config_trust import trust_file

    try:
        print(trust_file(path or Path(PROJECT_FILE), cwd=Path.cwd(),
                         user_config_dir=default_user_config_dir()))
    except ConfigError as exc:
        fail(str(exc))


# More subcommands, each registered on ``app`` when its module is imported:
# ``compact`` and ``mcp`` (compact_commands.py), ``prune`` and ``fork`` (subcommands_ops.py).
from rollchat import compact_commands, subcommands_ops  # noqa: E402,F401
