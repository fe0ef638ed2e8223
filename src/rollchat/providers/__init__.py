"""The provider registry: name -> factory (each provider's module imported at build time, its
SDK at the first call), auto selection, API keys, and the SDK prefetch.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rollchat.errors import ConfigError
from rollchat.providers.base import Provider
from rollchat.text import redact_url

if TYPE_CHECKING:
    from rollchat.config import AgentConfig, Config

DEFAULT_MODELS = {"anthropic": "claude-sonnet-4-5", "openai": "gpt-4o-mini", "offline": "offline"}

# The environment variable holding each remote provider's key, and the SDK it imports.
KEY_ENV = {"anthropic": "ANTHROPIC_API_KEY", "openai": "OPENAI_API_KEY"}
SDK_MODULES = {"anthropic": "anthropic", "openai": "openai"}


@dataclass(frozen=True)
class ProviderSettings:
    """What a factory needs to build a provider (resolved by ``build_provider``)."""

    model: str
    api_key: str | None
    base_url: str | None
    timeout: float
    word_delay: float


ProviderFactory = Callable[[ProviderSettings], Provider]


def _load(path: str) -> Any:
    """Import ``"package.module:Attribute"`` and return the attribute."""
    module, _, attribute = path.partition(":")
    return getattr(importlib.import_module(module), attribute)


def _remote(path: str) -> ProviderFactory:
    def build(s: ProviderSettings) -> Provider:
        cls = _load(path)
        provider: Provider = cls(s.model, api_key=s.api_key, base_url=s.base_url,
                                 timeout=s.timeout)
        return provider

    return build


def _offline(s: ProviderSettings) -> Provider:
    provider: Provider = _load("rollchat.providers.offline:OfflineProvider")(
        word_delay=s.word_delay)
    return provider


REGISTRY: dict[str, ProviderFactory] = {
    "anthropic": _remote("rollchat.providers.anthropic:AnthropicProvider"),
    "openai": _remote("rollchat.providers.openai:OpenAIProvider"),
    "offline": _offline,
}


# ---------------------------------------------------------------- selection


def _custom_key_var(agent: AgentConfig, env: Mapping[str, str]) -> str | None:
    var = agent.api_key_env
    return var if var and env.get(var) else None


def resolve_provider_name(agent: AgentConfig, env: Mapping[str, str]) -> tuple[str, str]:
    """The provider to use and a short reason for the banner.

    ``auto``: anthropic when ANTHROPIC_API_KEY is set (or the agent's ``api_key_env``
    variable, unless a base URL points at an OpenAI-compatible server), else openai when
    OPENAI_API_KEY or a base URL is set, else offline. ANTHROPIC_API_KEY wins over a base URL
    (the spec's order); the reason then says so, with the way out.
    """
    if agent.provider != "auto":
        if agent.provider not in REGISTRY:
            raise ConfigError(_unknown(agent.provider))
        return agent.provider, "configured"
    custom = _custom_key_var(agent, env)
    if env.get("ANTHROPIC_API_KEY"):
        if agent.base_url:
            return "anthropic", ("ANTHROPIC_API_KEY is set (the base URL goes to Anthropic; "
                                 "use --provider openai for an OpenAI-compatible server)")
        return "anthropic", "ANTHROPIC_API_KEY is set"
    if custom and not agent.base_url:
        return "anthropic", f"{custom} is set"
    if env.get("OPENAI_API_KEY"):
        return "openai", "OPENAI_API_KEY is set"
    if agent.base_url:
        return "openai", f"base URL {redact_url(agent.base_url)}"
    return "offline", "no API key configured"


def _unknown(name: str) -> str:
    return f"unknown provider {name!r}; choose one of: auto, {', '.join(REGISTRY)}"


def api_key_for(name: str, agent: AgentConfig, env: Mapping[str, str]) -> str | None:
    """The key for provider ``name``: the agent's ``api_key_env`` variable, else the default."""
    custom = _custom_key_var(agent, env)
    if custom:
        return env[custom]
    var = KEY_ENV.get(name)
    return (env.get(var) or None) if var else None


def build_provider(name: str, agent: AgentConfig, config: Config,
                   env: Mapping[str, str]) -> Provider:
    """Build provider ``name`` ("auto" is resolved first) for ``agent``."""
    if name == "auto":
        name = resolve_provider_name(agent, env)[0]
    factory = REGISTRY.get(name)
    if factory is None:
        raise ConfigError(_unknown(name))
    key = api_key_for(name, agent, env)
    if name in KEY_ENV and not key and not (name == "openai" and agent.base_url):
        hint = " (or a base_url for an OpenAI-compatible server)" if name == "openai" else ""
        raise ConfigError(f"provider {name} needs an API key: set {KEY_ENV[name]}{hint}, "
                          "or name another variable with api_key_env")
    settings = ProviderSettings(
        model=agent.model or DEFAULT_MODELS[name], api_key=key, base_url=agent.base_url,
        timeout=config.retry.request_timeout, word_delay=config.ui.offline_word_delay)
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
        threading.Thread(target=_import_quietly, args=(todo,), name="rollchat-prefetch",
                         daemon=True).start()


def _import_quietly(names: list[str]) -> None:
    for name in names:
        try:
            importlib.import_module(SDK_MODULES[name])
        except Exception:  # a missing or broken SDK is reported at the first call instead
            continue
