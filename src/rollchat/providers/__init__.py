"""The provider registry: name -> factory (each provider's module imported at build time, its
SDK at the first call), auto selection, API keys. The names themselves are in providers.names.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rollchat.errors import ConfigError
from rollchat.interrupts import start_worker
from rollchat.providers.names import (
    ANTHROPIC,
    AUTO,
    BASE_URL_ENV,
    DEFAULT_MODELS,
    KEY_ENV,
    OFFLINE,
    OPENAI,
    OPENAI_FAMILY,
    OPENAI_RESPONSES,
    PROVIDER_CHOICES,
    PROVIDER_NAMES,
    SDK_MODULES,
    is_official,
    is_reasoning_model,
)
from rollchat.text.wording import redact_url

if TYPE_CHECKING:  # config reads providers.names, never the registry: one way only
    from rollchat.config.settings import AgentConfig, Config
    from rollchat.providers.base import Provider


@dataclass(frozen=True)
class ProviderSettings:
    """What a factory needs to build a provider (resolved by ``build_provider``)."""

    model: str
    api_key: str | None
    base_url: str | None
    timeout: float
    word_delay: float
    images: bool | None = None  # models.<model>.images (None: the provider decides)
    store: bool = False  # models.<model>.store (openai-responses: OpenAI keeps the responses)
    hygiene: str = "rollchat"  # the agent's hygiene: provider asks the server to clear tool uses
    concurrency: int | None = None  # requests at once to the server (None: see lanes.py)


ProviderFactory = Callable[[ProviderSettings], "Provider"]


def _load(path: str) -> Any:
    """Import ``"package.module:Attribute"`` and return the attribute."""
    module, _, attribute = path.partition(":")
    return getattr(importlib.import_module(module), attribute)


def _remote(path: str) -> ProviderFactory:
    def build(s: ProviderSettings) -> Provider:
        cls = _load(path)
        limit = {"concurrency": s.concurrency} if s.concurrency else {}
        provider: Provider = cls(s.model, api_key=s.api_key, base_url=s.base_url,
                                 timeout=s.timeout, images=s.images, **limit)
        return provider

    return build


def _responses(s: ProviderSettings) -> Provider:
    provider: Provider = _load("rollchat.providers.openai_responses:ResponsesProvider")(
        s.model, api_key=s.api_key, base_url=s.base_url, timeout=s.timeout, images=s.images,
        store=s.store)
    return provider


def _anthropic(s: ProviderSettings) -> Provider:
    provider: Provider = _load("rollchat.providers.anthropic:AnthropicProvider")(
        s.model, api_key=s.api_key, base_url=s.base_url, timeout=s.timeout, images=s.images,
        hygiene=s.hygiene)
    return provider


def _offline(s: ProviderSettings) -> Provider:
    provider: Provider = _load("rollchat.providers.offline:OfflineProvider")(
        word_delay=s.word_delay)
    return provider


REGISTRY: dict[str, ProviderFactory] = {
    ANTHROPIC: _anthropic,
    OPENAI: _remote("rollchat.providers.openai:OpenAIProvider"),
    OPENAI_RESPONSES: _responses,
    OFFLINE: _offline,
}
assert tuple(REGISTRY) == PROVIDER_NAMES, "a provider named in providers.names has no factory"

# The names are re-exported: the command line and the terminal layer import them from here.
__all__ = ["ANTHROPIC", "AUTO", "BASE_URL_ENV", "DEFAULT_MODELS", "KEY_ENV", "OFFLINE", "OPENAI",
           "OPENAI_RESPONSES", "PROVIDER_CHOICES", "PROVIDER_NAMES", "SDK_MODULES"]


# ---------------------------------------------------------------- selection


def _custom_key_var(agent: AgentConfig, env: Mapping[str, str]) -> str | None:
    var = agent.api_key_env
    return var if var and env.get(var) else None


def resolve_provider_name(agent: AgentConfig, env: Mapping[str, str]) -> tuple[str, str]:
    """The provider to use and a short reason for the banner.

    ``auto``: openai when a base URL is set (it names an OpenAI-compatible server: Ollama,
    vLLM, llama.cpp, LM Studio; ANTHROPIC_API_KEY is then not sent to it, and the reason says
    so, with the way to choose anthropic), else anthropic when ANTHROPIC_API_KEY (or the
    agent's ``api_key_env`` variable) is set, else openai when OPENAI_API_KEY is set, else
    offline. Where openai would talk to OpenAI itself about one of its reasoning models, it is
    openai-responses instead (``_responses_for``).
    """
    if agent.provider != AUTO:
        if agent.provider not in REGISTRY:
            raise ConfigError(_unknown(agent.provider))
        return agent.provider, _configured(agent, env)
    custom = _custom_key_var(agent, env)
    anthropic_var, openai_var = KEY_ENV[ANTHROPIC], KEY_ENV[OPENAI]
    if agent.base_url:
        reason = f"base URL {redact_url(agent.base_url)}"
        if env.get(anthropic_var):
            reason += (f"; {anthropic_var} is not sent to it: use --provider {ANTHROPIC} for "
                       "an Anthropic server")
        return _responses_for(agent, env, reason)
    if env.get(anthropic_var):
        return ANTHROPIC, f"{anthropic_var} is set"
    if custom:
        return ANTHROPIC, f"{custom} is set"
    if env.get(openai_var):
        return _responses_for(agent, env, f"{openai_var} is set")
    return OFFLINE, "no API key configured"


def _configured(agent: AgentConfig, env: Mapping[str, str]) -> str:
    """"configured", with a hint where openai was chosen by name for a reasoning model at
    OpenAI itself (kept: a configured provider is the user's choice)."""
    model = agent.model or DEFAULT_MODELS[OPENAI]
    if agent.provider != OPENAI or not is_official(server_url(OPENAI, agent, env)) or \
            not is_reasoning_model(model):
        return "configured"
    return (f"configured; {model} is a reasoning model: provider {OPENAI_RESPONSES} would "
            "keep its reasoning between turns")


def _responses_for(agent: AgentConfig, env: Mapping[str, str], reason: str) -> tuple[str, str]:
    """openai, or openai-responses for one of OpenAI's reasoning models at OpenAI itself: only
    the Responses API carries their reasoning from one call to the next. Other servers keep
    Chat Completions (Ollama, vLLM, llama.cpp and LM Studio speak it; few speak Responses)."""
    model = agent.model or DEFAULT_MODELS[OPENAI]
    if not is_official(server_url(OPENAI, agent, env)) or not is_reasoning_model(model):
        return OPENAI, reason
    return OPENAI_RESPONSES, (f"{reason}; {model} is a reasoning model: the Responses API "
                              "keeps its reasoning between turns")


def server_url(name: str, agent: AgentConfig, env: Mapping[str, str]) -> str | None:
    """Where provider ``name`` sends requests when not to its default endpoint: the agent's
    base URL, else the URL its SDK reads from the environment (``OPENAI_BASE_URL``,
    ``ANTHROPIC_BASE_URL``). Show it only through ``redact_url``."""
    if name not in BASE_URL_ENV:
        return None
    return agent.base_url or env.get(BASE_URL_ENV[name]) or None


def _unknown(name: str) -> str:
    return f"unknown provider {name!r}; choose one of: {', '.join(PROVIDER_CHOICES)}"


def api_key_for(name: str, agent: AgentConfig, env: Mapping[str, str]) -> str | None:
    """The key for provider ``name``: the agent's ``api_key_env`` variable, else the default."""
    custom = _custom_key_var(agent, env)
    if custom:
        return env[custom]
    var = KEY_ENV.get(name)
    return (env.get(var) or None) if var else None


def check_provider(name: str, agent: AgentConfig,
                   env: Mapping[str, str]) -> ProviderFactory:
    """What ``build_provider`` checks before building (the provider exists and has its key),
    without importing the provider: the chat checks this before its first prompt."""
    factory = REGISTRY.get(name)
    if factory is None:
        raise ConfigError(_unknown(name))
    key = api_key_for(name, agent, env)
    if name in KEY_ENV and not key and not (name in OPENAI_FAMILY and
                                            server_url(name, agent, env)):
        hint = " (or a base_url for an OpenAI-compatible server)" if name in OPENAI_FAMILY else ""
        raise ConfigError(f"provider {name} needs an API key: set {KEY_ENV[name]}{hint}, "
                          "or name another variable with api_key_env")
    return factory


def build_provider(name: str, agent: AgentConfig, config: Config,
                   env: Mapping[str, str]) -> Provider:
    """Build provider ``name`` ("auto" is resolved first) for ``agent``."""
    if name == AUTO:
        name = resolve_provider_name(agent, env)[0]
    factory = check_provider(name, agent, env)
    key = api_key_for(name, agent, env)
    model = agent.model or DEFAULT_MODELS[name]
    settings = ProviderSettings(
        model=model, api_key=key,
        base_url=server_url(name, agent, env),  # given to the SDK: the banner shows the same
        timeout=config.retry.request_timeout, word_delay=config.ui.offline_word_delay or 0.0,
        images=config.images_for(model), store=config.store_for(model),
        hygiene=agent.hygiene, concurrency=agent.concurrency)
    return factory(settings)


_prefetched: set[str] = set()
_prefetch_lock = threading.Lock()


def prefetch_sdks(*names: str) -> None:
    """Import the SDKs of providers ``names`` (all remote ones when none is given) in a daemon
    thread, so the first model call does not pay for it. Safe to call more than once."""
    wanted = [n for n in (names or tuple(SDK_MODULES)) if n in SDK_MODULES]
    with _prefetch_lock:
        todo = [n for n in wanted if n not in _prefetched]
        _prefetched.update(todo)
    if todo:
        start_worker(threading.Thread(target=_import_quietly, args=(todo,),
                                      name="rollchat-prefetch", daemon=True))


def _import_quietly(names: list[str]) -> None:
    for name in names:
        try:
            importlib.import_module(SDK_MODULES[name])
        except Exception:  # a missing or broken SDK is reported at the first call instead
            continue
