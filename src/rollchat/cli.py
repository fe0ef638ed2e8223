"""The ``rollchat`` command: parse flags, load config, build the objects, start the chat.

No logic of its own; user mistakes exit 2 with one line naming the problem.
"""

from __future__ import annotations

import json
import os
import re
import sys
from dataclasses import replace
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, NoReturn, Optional

import typer

from rollchat import __version__
from rollchat.errors import ConfigError, RollchatError, StoreError, UsageError
from rollchat.providers import PROVIDER_CHOICES

if TYPE_CHECKING:  # imported when the chat starts, not for --help or sessions
    from rollchat.config import Config, ConfigOverrides
    from rollchat.ui.app import ChatApp
    from rollchat.ui.render import Renderer

app = typer.Typer(
    add_completion=False,
    help="A terminal chat loop for LLM agents that never runs out of context.",
    context_settings={"help_option_names": ["-h", "--help"]},
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
)

_JSON_SURROGATE = re.compile(r"[\ud800-\udfff]")
# Built from the registry's names; mypy cannot read members of an Enum built this way.
ProviderChoice = Enum("ProviderChoice", {n: n for n in PROVIDER_CHOICES}, type=str)  # type: ignore[misc]


SessionsDirOpt = Annotated[
    Optional[Path],  # noqa: UP045 - typer needs Optional on 3.10
    typer.Option("--sessions-dir", help="Sessions directory (default: ./sessions)."),
]
ConfigOpt = Annotated[
    Optional[Path],  # noqa: UP045
    typer.Option("--config", help="Config file (default: $ROLLCHAT_CONFIG, ./rollchat.yml, "
                 "then the user config directory)."),
]


def fail(message: str, code: int = 2) -> NoReturn:
    from rollchat.ui.sanitize import harmless  # a message may quote a config or session file

    sys.stderr.write(f"rollchat: error: {harmless(message)}\n")
    raise typer.Exit(code)


def _version(value: bool) -> None:
    if value:
        print(f"rollchat {__version__}")
        raise typer.Exit()


@app.callback(invoke_without_command=True)
def main(
    ctx: typer.Context,
    agent: Annotated[Optional[str], typer.Option(help="Agent name from the config.")] = None,  # noqa: UP045
    provider: Annotated[
        Optional[ProviderChoice],  # noqa: UP045
        typer.Option(help="Model provider (auto picks by the API keys set)."),
    ] = None,
    model: Annotated[Optional[str], typer.Option(help="Model name.")] = None,  # noqa: UP045
    base_url: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option("--base-url", help="OpenAI-compatible server URL."),
    ] = None,
    config: ConfigOpt = None,
    sessions_dir: SessionsDirOpt = None,
    no_save: Annotated[bool, typer.Option("--no-save", help="Write nothing to disk.")] = False,
    resume: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option("--resume", help="Start by resuming session N or ID."),
    ] = None,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Answer yes to questions.")] = False,
    no_fork: Annotated[bool, typer.Option(
        "--no-fork", help="Refuse to resume a session open in another rollchat process "
        "(instead of continuing in a fork).")] = False,
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True,
                           help="Show the version and exit."),
    ] = False,
) -> None:
    """Start the chat (offline model when no API key is configured)."""
    if ctx.invoked_subcommand is not None:
        return
    from rollchat.config import ConfigOverrides

    overrides = ConfigOverrides(agent=agent, provider=provider.value if provider else None,
                                model=model, base_url=base_url, sessions_dir=sessions_dir,
                                no_save=no_save)
    try:
        code = start_chat(config, overrides, resume=resume, yes=yes, no_fork=no_fork)
    except ConfigError as exc:
        fail(str(exc))
    except UsageError as exc:
        fail(str(exc))
    except RollchatError as exc:
        fail(str(exc), 1)
    raise typer.Exit(code)


@app.command("sessions")
def sessions_command(
    sessions_dir: SessionsDirOpt = None,
    config: ConfigOpt = None,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """List saved sessions, most recent first (the numbers 'resume N' uses)."""
    from rollchat.config import ConfigOverrides, load_config
    from rollchat.store import SessionStore

    try:
        cfg = load_config(config_path=config, env=os.environ, cwd=Path.cwd(),
                          overrides=ConfigOverrides(sessions_dir=sessions_dir))
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
                 "continued_in": list(i.continued_in), "summary_problem": i.summary_problem}
                for i in listing.sessions
            ],
            "problems": [{"file": name, "reason": why} for name, why in listing.problems],
        }, indent=2, ensure_ascii=False)))
        return
    from rich.console import Console

    from rollchat.ui.render import Renderer, plain_console

    console = Console() if sys.stdout.isatty() else plain_console()
    Renderer(console, interactive=False).sessions(listing.sessions, listing.problems)


@app.command("audit")
def audit_command(
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
        cfg = load_config(config_path=config, env=os.environ, cwd=Path.cwd(),
                          overrides=ConfigOverrides(sessions_dir=sessions_dir))
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
        Optional[Path],  # noqa: UP045
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


def _warm_up(chat: ChatApp) -> None:
    """Once the prompt is up: import the SDK and load the tokenizer in the background."""
    import importlib

    from rollchat import providers

    session = chat.session
    providers.prefetch_sdks(session.provider_name)
    session.counter.count_text("warm up")  # what the first message needs: the tokenizer,
    for module in ("rich.console", "rich.live", "rich.markdown",  # the renderer, the summarizer
                   "rollchat.compaction.request", "rollchat.compaction.extractive",
                   "rollchat.restore", "rollchat.tools.archive", "filelock"):
        importlib.import_module(module)


def fork_refusal(*, no_fork: bool, interactive: bool, yes: bool) -> str | None:
    """Why a session open in another process is not to be forked; None: fork it."""
    if no_fork:
        return ("--no-fork was given (exit it there first, or resume without --no-fork to "
                "continue in a fork)")
    if not interactive and not yes:
        return ("without a terminal a fork needs --yes (exit it there first, or pass --yes to "
                "continue in a fork)")
    return None


def start_chat(config_path: Path | None, overrides: ConfigOverrides, *, resume: str | None,
               yes: bool, no_fork: bool = False) -> int:
    """Check the configuration, draw the banner, and run the chat until it ends. In a terminal
    the session core is built behind the first prompt (see ``Starting``)."""
    from rollchat import providers
    from rollchat.config import load_config
    from rollchat.interrupts import Terminated, ending, ending_signals
    from rollchat.ui.render import Renderer
    from rollchat.ui.repl import Starting, finish, history_path, run_interactive, run_piped

    env = dict(os.environ)
    cfg = load_config(config_path=config_path, env=env, cwd=Path.cwd(), overrides=overrides)
    agent = cfg.agent
    name, reason = providers.resolve_provider_name(agent, env)
    providers.check_provider(name, agent, env)
    model = agent.model or providers.DEFAULT_MODELS[name]
    summary_name = cfg.summary.provider or name
    providers.check_provider(summary_name, agent, env)
    interactive = sys.stdin.isatty() and sys.stdout.isatty()
    renderer = Renderer(interactive=interactive)  # rich is loaded with the first answer
    renderer.banner(agent=agent.name, model=model, provider=name, reason=reason,
                    where=cfg.session.location, server=providers.server_url(name, agent, env))
    if cfg.trust_notice:
        renderer.warn(cfg.trust_notice)
    chat = Starting(lambda: _build_chat(cfg, env, name, model, renderer, interactive=interactive,
                                        yes=yes, no_fork=no_fork),
                    label=f" starting · {agent.name} · {model} ", out=renderer)
    with ending_signals():  # SIGTERM, SIGHUP: saved and summarized like exit
        try:
            if resume is not None:
                chat.get().resume(resume)
            if interactive:
                run_interactive(chat, history_file=history_path(cfg.ui.history_file),
                                on_ready=_warm_up)
            else:
                run_piped(chat, sys.stdin.buffer)
        except Terminated:  # before the chat loop began, or one put off until after it
            finish(chat.get())
    signum = ending()
    return 0 if signum is None else 128 + signum


def _build_chat(cfg: Config, env: dict[str, str], name: str, model: str, renderer: Renderer,
                *, interactive: bool, yes: bool,
                no_fork: bool = False) -> tuple[ChatApp, list[str]]:
    """The session core and its terminal adapter, and what the user should be told first."""
    from rollchat import providers
    from rollchat.context import Context
    from rollchat.engine import Engine
    from rollchat.providers.base import RetryPolicy
    from rollchat.session import Session
    from rollchat.store import MemoryStore, SessionStore, Store
    from rollchat.tokens import context_window
    from rollchat.ui.app import ChatApp

    agent = cfg.agent
    provider = providers.build_provider(name, agent, cfg, env)
    summary_agent = replace(agent, provider=cfg.summary.provider or name,
                            model=cfg.summary.model or model)
    summary_name = cfg.summary.provider or name
    summary_provider = (provider if (summary_name, summary_agent.model) == (name, model)
                        else providers.build_provider(summary_name, summary_agent, cfg, env))
    notices: list[str] = []
    store: Store = SessionStore(cfg.session.dir) if cfg.session.auto_save else MemoryStore()
    store_problem = None
    try:
        store.ensure()
    except StoreError as exc:  # e.g. a read-only directory: the chat goes on in memory
        store_problem = str(exc)
    retry = cfg.retry
    engine = Engine(
        provider, model=model, context=Context(system=agent.system_prompt),
        max_output_tokens=agent.max_output_tokens, temperature=agent.temperature,
        retry=RetryPolicy(retry.max_retries, retry.base_delay, retry.max_delay),
    )

    def confirm(question: str) -> bool:
        if yes:
            return True
        if not interactive:
            renderer.error(question.replace("Continue? (y/n) ", "").strip()
                           + " Refused without a terminal; pass --yes to continue anyway.")
            return False
        from prompt_toolkit.shortcuts import confirm as pt_confirm

        from rollchat.ui.sanitize import harmless  # the question names another agent

        return bool(pt_confirm(harmless(question.replace(" (y/n) ", ""))))

    from rollchat.windows import WindowBook, default_path

    windows = WindowBook(default_path())  # windows learned from this server's refusals
    override = cfg.context_window_override(model) or windows.get(agent.base_url, model)
    session = Session(
        config=cfg, agent=agent, engine=engine, summary_provider=summary_provider,
        summary_model=summary_agent.model or model, provider_name=name, store=store,
        confirm=confirm, context_window=context_window(model, override), windows=windows,
        fork_refusal=fork_refusal(no_fork=no_fork, interactive=interactive, yes=yes),
    )
    if session.budget.warning:
        notices.append(session.budget.warning)
    if store_problem is not None:
        notices.append(f"{store_problem}: the chat goes on in memory; nothing is saved")
        session.state.save_failed = True
    return ChatApp(session, renderer), notices
