"""One record per model call a session pays for (a turn, a summary, a restoration, a memory
extraction): its purpose, the model and provider that answered, its tokens and its cost priced
with that model. Every cost and usage figure of a session is summed from these records."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from rollchat.domain import Usage
from rollchat.models.prices import Price, cost

Purpose = Literal["turn", "summary", "restoration", "memory"]


@dataclass(frozen=True)
class Call:
    """A model call: what for, who answered, its tokens, and its dollars (None: the price of
    the model that answered is unknown)."""

    purpose: Purpose
    model: str
    provider: str
    usage: Usage
    cost: float | None

    @classmethod
    def priced(cls, purpose: Purpose, model: str, provider: str, usage: Usage,
               price: Price | None) -> Call:
        return cls(purpose, model, provider, usage,
                   None if price is None else cost(usage, price))


def usage_of(calls: Iterable[Call], *purposes: Purpose) -> Usage:
    """The tokens of ``calls`` (of those ``purposes`` only, when named), summed."""
    total = Usage()
    for call in calls:
        if not purposes or call.purpose in purposes:
            total += call.usage
    return total


def cost_of(calls: Sequence[Call], priced_model: bool = False) -> float | None:
    """The dollars of ``calls``: the priced ones summed; None when none is priced, but $0
    for no call at all when the model that would answer has a known price
    (``priced_model``)."""
    priced = [c.cost for c in calls if c.cost is not None]
    if priced:
        return sum(priced)
    return 0.0 if priced_model and not calls else None
