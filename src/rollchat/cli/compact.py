"""The ``rollchat compact`` and ``rollchat mcp`` subcommands (registered on ``cli.app`` when
subcommands.py is imported); each imports what it needs when it runs."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer

from rollchat.cli.main import ConfigOpt, SessionsDirOpt, app, fail
from rollchat.cli.sessions import _given
from rollchat.errors import ConfigError, RollchatError

if TYPE_CHECKING:
    from rollchat.config.settings import Config


def _config(ctx: typer.Context, config: Path | None, sessions_dir: Path | None) -> Config:
    from rollchat.config.settings import ConfigOverrides, load_config

    cfg = load_config(config_path=_given(ctx, "config", config), env=os.environ,
                      cwd=Path.cwd(), overrides=ConfigOverrides(
                          sessions_dir=_given(ctx, "sessions_dir", sessions_dir)))
    if cfg.trust_notice:
        sys.stderr.write(f"rollchat: warning: {cfg.trust_notice}\n")
    return cfg


@app.command("compact")
def compact_command(
    ctx: typer.Context,
    session: Annotated[str, typer.Argument(help="Session number (see 'sessions'), id or id "
                                                "prefix.")],
    focus: Annotated[Optional[str], typer.Option(  # noqa: UP045 - typer needs Optional
        "--focus", help="What the summary should dwell on.")] = None,
    max_words: Annotated[Optional[int], typer.Option(  # noqa: UP045
        "--max-words", help="The summary's size in words (default: summary.max_words).")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
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
        cfg = _config(ctx, config, sessions_dir)
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


@app.command("mcp")
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
        cfg = _config(ctx, config, sessions_dir)
        model = summary_model(cfg, os.environ)
    except ConfigError as exc:
        fail(str(exc))
    from rollchat.server.mcp import serve

    try:
        serve(cfg, model)
    except KeyboardInterrupt:
        raise typer.Exit(130) from None
