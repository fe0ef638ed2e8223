"""``model NAME`` in a chat: the models a session may switch to, and the window a model is
known by (the switch itself is Session.use_model, through the one CurrentModel)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from rollchat.errors import UsageError
from rollchat.models.tokens import CONTEXT_WINDOWS, context_window
from rollchat.providers.names import ANTHROPIC, OFFLINE, OPENAI

if TYPE_CHECKING:
    from rollchat.config.settings import AgentConfig, Config
    from rollchat.models.windows import WindowBook

# The table's names each provider serves itself (a server at a base_url serves what it holds).
_FAMILIES = {ANTHROPIC: ("claude-",), OPENAI: ("gpt-", "o1", "o3", "o4")}


@dataclass(frozen=True)
class Choices:
    """The models a chat may switch to: ``named`` (the table's for the provider, and the
    config's ``models:``); ``any_name``: a server at a base_url takes any name it serves."""

    named: tuple[str, ...]
    any_name: bool


def choices(config: Config, agent: AgentConfig, provider: str) -> Choices:
    if provider == OFFLINE:
        return Choices((OFFLINE,), False)
    prefixes = _FAMILIES.get(provider, ())
    table = [m for m in CONTEXT_WINDOWS if m.startswith(prefixes)] if prefixes else []
    return Choices(tuple(dict.fromkeys([*config.models, *table])), agent.base_url is not None)


def checked_choice(config: Config, agent: AgentConfig, provider: str, model: str) -> None:
    """UsageError when ``provider`` does not serve ``model`` (see ``choices``)."""
    allowed = choices(config, agent, provider)
    if model not in allowed.named and not allowed.any_name:
        raise UsageError(f"unknown model {model!r} for {provider}; choose one "
                         f"of: {', '.join(allowed.named)} (or name it under models: in "
                         "the config); the model is unchanged")


def window_of(config: Config, book: WindowBook, base_url: str | None, model: str) -> int:
    """The window ``model`` is known by: the config's, else the one learned from its server,
    else rollchat's table."""
    return context_window(model, config.context_window_override(model)
                          or book.get(base_url, model))
