"""The ``rollchat`` subcommands over a saved session's summary: ``compact`` (print it, written
by the model if need be), ``audit`` (what it kept and lost), and ``mcp`` (the sessions and their
summaries served over MCP). Each imports what it needs when it runs."""

from __future__ import annotations

import json
import os
import sys
from typing import Annotated, Optional

import typer

from rollchat.cli.options import ConfigOpt, JsonOpt, SessionsDirOpt, command_config, fail
from rollchat.errors import ConfigError, RollchatError


def compact_command(
    ctx: typer.Context,
    session: Annotated[str, typer.Argument(help="Session number (see 'sessions'), id or id "
                                                "prefix.")],
    focus: Annotated[Optional[str], typer.Option(  # noqa: UP045 - typer needs Optional
        "--focus", help="What the summary should dwell on.")] = None,
    max_words: Annotated[Optional[int], typer.Option(  # noqa: UP045
        "--max-words", help="The summary's size in words (default: summary.max_words).")
    ] = None,
    as_json: JsonOpt = False,
    refresh: Annotated[bool, typer.Option(
        "--refresh", help="Write the summary again, even when one is cached or in the file."),
    ] = False,
    sessions_dir: SessionsDirOpt = None,
    config: ConfigOpt = None,
) -> None:
    """Print the summary of a saved session (with its parent's summary carried, as compact in
    the chat does). Changes no session file; summaries are cached in the sessions directory."""
    from rollchat.compaction.saved import compact, summary_model
    from rollchat.storage.store import SessionStore

    try:
        cfg = command_config(ctx, config, sessions_dir)
        model = summary_model(cfg, os.environ)
        result = compact(SessionStore(cfg.session.dir), session, model, focus=focus,
                         max_words=max_words, refresh=refresh)
    except ConfigError as exc:
        fail(str(exc))
    except RollchatError as exc:
        fail(str(exc), 2)
    from rollchat.ui.sanitize import harmless

    for note in result.notes:
        sys.stderr.write(f"rollchat: note: {harmless(note)}\n")
    if result.method == "extractive":
        why = harmless(result.reason or "no reason given")
        sys.stderr.write(f"rollchat: warning: the model's summary failed ({why}); this is the "
                         "local extractive summary (not cached)\n")
    if as_json:
        print(json.dumps(result.as_json(), indent=2, ensure_ascii=False))
        return
    source = {"file": "the session's own summary", "model": f"written by {result.model}",
              "extractive": "local extractive summary"}[result.method]
    cached = ", cached" if result.cached and result.method != "file" else ""
    print(harmless(f"# {result.session_id}: {source}{cached} ({result.tokens:,} tokens)"))
    print()
    print("\n".join(harmless(line) for line in result.markdown.rstrip("\n").split("\n")))


def audit_command(
    ctx: typer.Context,
    session: Annotated[str, typer.Argument(help="Session number (see 'sessions'), id or id "
                                                "prefix.")],
    sessions_dir: SessionsDirOpt = None,
    config: ConfigOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Compare a session's summary with its own transcript: the named items (decisions, open
    tasks, preferences, names, numbers, paths) it kept and lost. Exit status 1 when a
    decision or an open task is lost."""
    from rollchat.compaction.audit import audit_session, report
    from rollchat.storage.store import SessionStore

    cfg = command_config(ctx, config, sessions_dir, trust_warning=False)
    try:
        result = audit_session(SessionStore(cfg.session.dir), session)
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


def mcp_command(
    ctx: typer.Context,
    sessions_dir: SessionsDirOpt = None,
    config: ConfigOpt = None,
) -> None:
    """Serve the saved sessions over the Model Context Protocol (stdio): the tools
    list_sessions, search_sessions, read_session and compact_session, and each session as a
    resource. Register it in an MCP client as the command 'rollchat mcp'."""
    from rollchat.compaction.saved import summary_model

    try:
        cfg = command_config(ctx, config, sessions_dir)
        model = summary_model(cfg, os.environ)
    except ConfigError as exc:
        fail(str(exc))
    from rollchat.server.mcp import serve

    try:
        serve(cfg, model)
    except KeyboardInterrupt:
        raise typer.Exit(130) from None
