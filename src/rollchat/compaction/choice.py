"""Which provider and model write the summaries, as the chat chooses them; light enough for
``compact ID --json``'s cached answer (cli/compact_cached.py), which names the model in its key."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rollchat.config.settings import Config, SummaryConfig


def summary_choice(summary: SummaryConfig, provider: str, model: str) -> tuple[str, str]:
    """The provider and model that write summaries when the chat uses ``provider`` and
    ``model``: ``summary.provider`` / ``summary.model`` where set. A summary provider named
    without a model uses its own default model, never the chat's (a model name of another
    provider would fail every summary)."""
    from rollchat.providers import DEFAULT_MODELS

    name = summary.provider or provider
    if summary.model:
        return name, summary.model
    return name, model if name == provider else DEFAULT_MODELS.get(name, model)


def summary_names(cfg: Config, env: Mapping[str, str]) -> tuple[str, str]:
    """The summary provider and model of ``cfg``'s agent (``summary_choice``), once that
    provider is known to be usable (ConfigError when not: no API key...). The chat's own
    provider is not needed (nor checked) when another one writes the summaries."""
    from rollchat import providers

    agent = cfg.agent
    name, _reason = providers.resolve_provider_name(agent, env)
    summary_name, model = summary_choice(cfg.summary, name,
                                         agent.model or providers.DEFAULT_MODELS[name])
    providers.check_provider(summary_name, agent, env)
    return summary_name, model
