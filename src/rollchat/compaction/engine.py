"""Which engine writes a compaction's summary (``compaction.engine``): the provider's own when
the agent asks for it and its provider can, else rollchat's, with the reason said once."""

from __future__ import annotations

from dataclasses import dataclass

from rollchat.config.compaction import PROVIDER, ROLLCHAT, Engine
from rollchat.providers.base import Provider
from rollchat.providers.compacting import CompactingProvider


@dataclass(frozen=True)
class EngineChoice:
    """The engine used and, when it is not the one configured, why (one line)."""

    engine: Engine
    note: str | None = None


def choose_engine(setting: Engine, provider: Provider) -> EngineChoice:
    """``setting`` (the agent's compaction.engine) for summaries written by ``provider``."""
    if setting == ROLLCHAT:
        return EngineChoice(ROLLCHAT)
    if isinstance(provider, CompactingProvider):
        return EngineChoice(PROVIDER)
    return EngineChoice(ROLLCHAT, f"compaction.engine is provider, but the {provider.name} "
                                  "provider has no server-side compaction: rollchat writes "
                                  "the summary")
