"""Who compacts an agent's sessions (``compaction.engine``) and who clears its old tool uses
(``hygiene``): rollchat itself, or the provider's own server-side feature where it has one."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from rollchat.config.fields import Field

Engine = Literal["rollchat", "provider"]
ENGINES: tuple[Engine, ...] = ("rollchat", "provider")
ROLLCHAT: Engine = "rollchat"
PROVIDER: Engine = "provider"

ENGINE_FIELD = Field(
    "str", "must be rollchat or provider (provider: the provider's own server-side "
    "compaction where it has one, else rollchat's summary)", lambda v: v in ENGINES)
HYGIENE_FIELD = Field(
    "str", "must be rollchat or provider (provider: the provider clears old tool uses on its "
    "server where it can, else rollchat trims them)", lambda v: v in ENGINES)
COMPACTION_FIELDS = {"engine": ENGINE_FIELD}


@dataclass(frozen=True)
class CompactionSettings:
    """An agent's ``compaction:`` mapping. ``engine``: who writes the summary at a compaction:
    rollchat (its structured summary, asked with the chat's cached prefix) or provider (the
    provider's on-demand compaction, given rollchat's instructions; its signed block is kept
    and sent back first; any failure falls back to rollchat's summary)."""

    engine: Engine = ROLLCHAT
