"""The chat built from the command line's options: the config read, the provider checked, the
banner drawn, the session (its engine, store and tools) built behind the first prompt, and the
chat run until it ends (``start_chat``). cli/chat.py calls it with the options typer parsed."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from rollchat.errors import StoreError

if TYPE_CHECKING:  # imported when the chat starts, not for --help or sessions
    from rollchat.agents.equip import Equipment
    from rollchat.agents.file import LoadedAgent
    from rollchat.config.saved_prompts import SavedPrompts
    from rollchat.config.settings import AgentConfig, Config, ConfigOverrides
    from rollchat.providers.base import Provider
    from rollchat.session.core import Session
    from rollchat.session.forks import Forking
    from rollchat.storage.store import Store
    from rollchat.tools.sources import ToolSource
    from rollchat.ui.app import ChatApp
    from rollchat.ui.render import Renderer


def _warm_up(chat: ChatApp) -> None:
    """Once the prompt is up: import the SDK and load the tokenizer in the background."""
    import importlib

    from rollchat import providers
    session = chat.session
    providers.prefetch_sdks(session.provider_name)
    session.counter.count_text("warm up")  # what the first message needs: the tokenizer,
    for module in ("rich.console", "rich.live", "rich.markdown",  # the renderer, the summarizer
                   "rollchat.compaction.request", "rollchat.compaction.extractive",
                   "rollchat.compaction.restore", "rollchat.tools.archive", "filelock"):
        importlib.import_module(module)


def chat_forking(*, no_fork: bool, interactive: bool, yes: bool) -> Forking:
    """How the chat's resume treats a session open in another process: why it is not forked
    (None: it is), and ``fork N`` to branch off an older state."""
    from rollchat.session.forks import Forking

    why = None
    if no_fork:
        why = ("--no-fork was given (exit it there first, or resume without --no-fork to "
               "continue in a fork)")
    elif not interactive and not yes:
        why = ("without a terminal a fork needs --yes (exit it there first, or pass --yes to "
               "continue in a fork)")
    return Forking(refusal=None if why is None else lambda _session_id: why)


def start_chat(config_path: Path | None, overrides: ConfigOverrides, *, resume: str | None,
               yes: bool, trust_input: bool = False, no_fork: bool = False,
               agent_file: Path | None = None,
               show_tools: bool = False, choose: str | None = None,
               fork: str | None = None) -> int:
    """Check the configuration, draw the banner, and run the chat until it ends. In a terminal
    the session core is built behind the first prompt (see ``Starting``). ``choose``: "last"
    resumes the most recent session, "pick" the one chosen in the picker. ``fork``: the
    session to continue in a fork of (``rollchat fork``)."""
    from rollchat import providers
    from rollchat.config.load import load_config
    from rollchat.interrupts import Terminated, ending, ending_signals
    from rollchat.ui.render import Renderer
    from rollchat.ui.repl import finish, history_path, run_interactive, run_piped
    from rollchat.ui.starting import Starting

    env = dict(os.environ)
    cfg = load_config(config_path=config_path, env=env, cwd=Path.cwd(), overrides=overrides)
    cfg, loaded = load_agent_file(cfg, agent_file, overrides, env)  # user code: up front
    agent = cfg.agent
    name, reason, model = checked_provider(cfg, env, loaded)
    interactive = sys.stdin.isatty() and sys.stdout.isatty()
    if choose is not None:
        from rollchat.cli.reading import choose_session

        resume = choose_session(cfg, choose, interactive=interactive)
    for ref in (resume, fork):  # a session that does not exist: said before the banner
        if ref is not None and choose is None:
            _exists_or_fail(cfg, ref)
    # rich is loaded with the first answer
    renderer = Renderer(interactive=interactive, show_tools=show_tools)
    renderer.banner(agent=agent.name, model=model, provider=name, reason=reason,
                    where=cfg.session.location, server=providers.server_url(name, agent, env))
    for line in cfg.warnings:
        renderer.warn(line)
    if (note := offline_model_note(name, model, reason)) is not None:
        renderer.warn(note)
    prompts = saved_prompts(env)
    for line in prompts.notes:
        renderer.warn(line)
    closers: list[Callable[[], None]] = []  # what the chat started (MCP servers)
    equipment = equipment_of(agent, loaded)
    chat = Starting(lambda: _build_chat(cfg, env, name, model, renderer, interactive=interactive,
                                        yes=yes, trust_input=trust_input, no_fork=no_fork,
                                        closers=closers, prompts=prompts,
                                        equipment=equipment),
                    label=f" starting · {agent.name} · {model} ", out=renderer)
    with ending_signals():  # SIGTERM, SIGHUP: saved and summarized like exit
        try:
            if resume is not None:
                chat.get().resume(resume)
            if fork is not None:
                chat.get().fork(fork)
            if interactive:
                run_interactive(chat, history_file=history_path(cfg.ui.history_file),
                                on_ready=_warm_up, agents=cfg.agents,
                                prompts=prompts.commands,
                                idle_seconds=cfg.memory.idle_seconds if cfg.memory.enabled
                                and cfg.session.auto_save else 0.0)
            else:
                run_piped(chat, sys.stdin.buffer)
        except Terminated:  # before the chat loop began, or one put off until after it
            finish(chat.get())
        finally:
            close_all(closers)
    signum = ending()
    return 0 if signum is None else 128 + signum


def saved_prompts(env: dict[str, str]) -> SavedPrompts:
    """The saved prompts typed as ``/NAME`` (see config/saved_prompts.py), the project's
    ``allowed-tools`` applied once `rollchat trust` recorded the file."""
    from rollchat.config.load import user_home
    from rollchat.config.saved_prompts import load_saved_prompts, places
    from rollchat.config.settings import default_user_config_dir
    from rollchat.config.trust import trust_check
    from rollchat.ui.commands import COMMANDS

    config_dir = default_user_config_dir()
    return load_saved_prompts(places(Path.cwd(), user_home(env), config_dir),
                              frozenset(COMMANDS), lambda path: trust_check(path, config_dir))


def close_all(closers: list[Callable[[], None]]) -> None:
    """Stop what the chat started; a Ctrl-C or a signal here cannot cut it short (that would
    leave server processes behind)."""
    from rollchat.interrupts import sigint_deferred

    with sigint_deferred(deliver=False):
        while closers:
            closers.pop()()


def _build_chat(cfg: Config, env: dict[str, str], name: str, model: str, renderer: Renderer,
                *, interactive: bool, yes: bool, trust_input: bool = False,
                no_fork: bool = False, closers: list[Callable[[], None]] | None = None,
                equipment: Equipment | None = None,
                prompts: SavedPrompts | None = None) -> tuple[ChatApp, list[str]]:
    """The session core and its terminal adapter, and what the user should be told first.
    The chat can build the session of any other agent of the config (``@NAME message``)."""
    from rollchat.ui.app import ChatApp

    notices: list[str] = []
    store, store_problem = open_store(cfg)
    build = SessionBuilder(env, renderer, store, interactive=interactive, yes=yes,
                            no_fork=no_fork, closers=closers,
                            save_failed=store_problem is not None, trust_input=trust_input)
    session = build.session(cfg, name, model, equipment)  # (its window's warning: windowed)
    if session.memory is not None:  # memory found in the project, facts to review
        notices.extend(session.memory.notes)
    if store_problem is not None:
        notices.append(f"{store_problem}: the chat goes on in memory; saving starts by itself "
                       "once the directory takes writes")
    return ChatApp(session, renderer, build=lambda key: build.agent(cfg, key),
                   prompts=prompts), notices


def open_store(cfg: Config) -> tuple[Store, str | None]:
    """The sessions' store (in memory with --no-save), and why it cannot be written to
    (e.g. a read-only directory), or None."""
    from rollchat.storage.store import InMemoryStore, SessionStore

    store: Store = SessionStore(cfg.session.dir) if cfg.session.auto_save else InMemoryStore()
    try:
        store.ensure()
    except StoreError as exc:
        return store, str(exc)
    return store, None


class SessionBuilder:
    """Builds the Session of one agent (its provider, model, tools and system prompt) over the
    chat's one store: the starting agent, and each agent the chat hands over to."""

    def __init__(self, env: dict[str, str], renderer: Renderer, store: Store, *,
                 interactive: bool, yes: bool, no_fork: bool,
                 closers: list[Callable[[], None]] | None, save_failed: bool,
                 forking: Forking | None = None, trust_input: bool = False) -> None:
        self.env, self.renderer, self.store = env, renderer, store
        self.interactive, self.yes = interactive, yes
        self.trust_input = trust_input  # --trust-input: piped input is the user speaking
        # a resumed session open elsewhere: the chat's way unless told (a one-shot run's)
        self.forking = forking or chat_forking(no_fork=no_fork, interactive=interactive,
                                               yes=yes)
        self.closers, self.save_failed = closers, save_failed

    def agent(self, cfg: Config, key: str) -> Session:
        """The session of agent ``key`` of the config (its agent file loaded, if it has one);
        ConfigError / UsageError when it cannot be used."""
        from rollchat.config.settings import ConfigOverrides

        cfg = replace(cfg, default_agent=key)
        cfg, loaded = load_agent_file(cfg, None, ConfigOverrides(), self.env)
        name, _, model = checked_provider(cfg, self.env, loaded)
        return self.session(cfg, name, model, equipment_of(cfg.agent, loaded))

    def session(self, cfg: Config, name: str, model: str,
                equipment: Equipment | None) -> Session:
        from rollchat import providers
        from rollchat.agents.equip import Equipment, engine_settings
        from rollchat.compaction.choice import summary_choice
        from rollchat.config.settings import word_delay
        from rollchat.models.current import CurrentModel
        from rollchat.models.tokens import context_window
        from rollchat.models.windows import WindowBook, default_path
        from rollchat.providers.base import RetryPolicy
        from rollchat.session.core import Session
        from rollchat.session.hooked import notifying
        from rollchat.tools.hooks import Hooks
        from rollchat.ui.approve import (
            confirmer,
            piped_asker,
            terminal_asker,
            terminal_compact_asker,
        )

        cfg = replace(cfg, ui=replace(cfg.ui, offline_word_delay=word_delay(
            cfg.ui, sys.stdout.isatty())))
        agent, renderer, env = cfg.agent, self.renderer, self.env
        interactive, yes = self.interactive, self.yes
        framework = equipment.framework if equipment is not None else None
        provider = framework.provider if framework is not None else \
            providers.build_provider(name, agent, cfg, env)
        summary_name, summary_model = summary_choice(cfg.summary, name, model) if (
            framework is None or cfg.summary.provider) else (name, model)
        summary_agent = replace(agent, provider=summary_name, model=summary_model)
        summary_provider = (provider if (summary_name, summary_model) == (name, model)
                            else providers.build_provider(summary_name, summary_agent, cfg, env))
        retry = cfg.retry
        hooks = Hooks(cfg.hooks, cwd=Path.cwd(), held=cfg.hooks_held) if cfg.hooks else None
        settings = engine_settings(
            agent, equipment or Equipment(), provider=provider, model=model,
            retry=RetryPolicy(retry.max_retries, retry.base_delay, retry.max_delay),
            ask=(piped_asker(yes=True) if yes else notifying(terminal_asker(renderer), hooks)
                 if interactive else piped_asker(yes=False)),
            tool_sources=self._tool_sources(cfg, context_window(
                model, cfg.context_window_override(model)), provider, model), hooks=hooks)
        windows = WindowBook(default_path())  # windows learned from this server's refusals
        override = cfg.context_window_override(model) or windows.get(agent.base_url, model)
        # the chat's model: one object the session, its summaries and memory extraction share
        current = CurrentModel(name=model, provider=provider, provider_name=name,
                               prices=cfg.prices, book=windows, base_url=agent.base_url,
                               window=context_window(model, override))
        same = summary_provider is provider and summary_model == model
        memory = None
        if cfg.memory.enabled and cfg.session.auto_save and not self.save_failed:
            from rollchat.memory.keeper import open_memory

            memory = open_memory(cfg, summary_provider, summary_model,  # piped: a document?
                                 typed=sys.stdin.isatty(), yes=self.trust_input,
                                 follows=current if same else None)
        session = Session(
            config=cfg, agent=agent, engine_settings=settings,
            summary_provider=summary_provider, summary_model=summary_model,
            provider_name=name, store=self.store,
            confirm=confirmer(renderer, yes=yes, interactive=interactive),
            context_window=context_window(model, override), windows=windows,
            forking=self.forking,
            memory=memory,
            ask_compact=terminal_compact_asker(renderer) if interactive else None,
            hooks=hooks, current=current, save_failed=self.save_failed,
        )
        if framework is not None and framework.no_summaries and not cfg.summary.provider:
            session.summarizer.skip_model(provider, framework.no_summaries)
        return session

    def _tool_sources(self, cfg: Config, window: int, provider: Provider,
                      model: str) -> list[ToolSource]:
        """The agent's MCP servers, started now, in the background (the SDK loads there);
        their tools' specs may take a fifth of the ``window``; a call's progress reports
        are shown under its line; in a terminal, their sampling requests (answered by the
        chat's model once approved) and forms are asked at the prompt."""
        if not cfg.agent_mcp_servers:
            return []
        from rollchat.tools.mcp import McpServers
        from rollchat.tools.mcp.asks import chat_sampler
        from rollchat.ui.mcp_asks import TerminalMcpAsker

        renderer, asking = self.renderer, self.interactive
        servers = McpServers(cfg.agent_mcp_servers, self.env, tool_tokens=window // 5,
                             on_progress=lambda tool, text: renderer.dim(f"  … {text}"),
                             asker=TerminalMcpAsker(renderer) if asking else None,
                             sampler=chat_sampler(provider, model) if asking else None)
        if self.closers is not None:
            self.closers.append(servers.close)
        servers.start()
        return [servers]


def checked_provider(cfg: Config, env: dict[str, str],
                     loaded: LoadedAgent | None = None) -> tuple[str, str, str]:
    """The agent's provider, why it was chosen, and its model, once that provider and the one
    that writes summaries are known to be usable (ConfigError / UsageError when not). An
    agent a framework built (``loaded``) is its own provider: the framework's name and model."""
    from rollchat import providers

    agent = cfg.agent
    if loaded is not None and loaded.framework is not None:
        if cfg.summary.provider:
            providers.check_provider(cfg.summary.provider, agent, env)
        return loaded.framework.framework, "the agent's framework", loaded.framework.model
    name, reason = providers.resolve_provider_name(agent, env)
    providers.check_provider(name, agent, env)
    providers.check_provider(cfg.summary.provider or name, agent, env)
    url = providers.server_url(name, agent, env)
    if agent.model is None and name == providers.OPENAI and providers.names.is_local(url):
        from rollchat.providers.window_probe import reported_model

        assert url is not None
        return name, reason, reported_model(url) or providers.DEFAULT_MODELS[name]
    return name, reason, agent.model or providers.DEFAULT_MODELS[name]


def _exists_or_fail(cfg: Config, ref: str) -> None:
    """UsageError (exit 2, as with -p) when the sessions directory has no session ``ref``."""
    from rollchat.errors import UsageError
    from rollchat.session.resume import find
    from rollchat.storage.store import SessionStore

    if not cfg.session.auto_save:
        return
    try:
        find(SessionStore(cfg.session.dir), ref, None)
    except StoreError as exc:
        raise UsageError(str(exc)) from None


def offline_model_note(provider: str, model: str, reason: str) -> str | None:
    """The line that says a model named for the offline provider is not what answers (None:
    the offline model's own name, or another provider)."""
    from rollchat.providers import OFFLINE

    if provider != OFFLINE or model.startswith(OFFLINE):
        return None
    why = ("no API key is set: set ANTHROPIC_API_KEY or OPENAI_API_KEY, or give --base-url "
           "for a local server" if "no API key" in reason else
           "the provider is offline: choose one that serves it with --provider")
    return f"Model {model} is not asked: the offline model answers under its name ({why})."


def load_agent_file(cfg: Config, agent_file: Path | None, overrides: ConfigOverrides,
                     env: dict[str, str]) -> tuple[Config, LoadedAgent | None]:
    """The config whose agent is the agent file's (``agent_file``, else the agent's own
    ``file``), and what it loaded; the config as it is when there is none."""
    if agent_file is None and cfg.agent.file is None:
        return cfg, None
    from rollchat.agents.setup import config_with_agent_file

    return config_with_agent_file(cfg, agent_file, overrides, env, Path.cwd())


def equipment_of(agent: AgentConfig, loaded: LoadedAgent | None) -> Equipment | None:
    """The agent file's tools and the skills (ConfigError on a mistake: checked before the
    chat starts); None on the bare path (neither), which loads nothing more."""
    if loaded is None and agent.skills_dir is None:
        return None
    from rollchat.agents.equip import gather

    return gather(agent, loaded.tools if loaded is not None else (),
                  loaded.framework if loaded is not None else None)
