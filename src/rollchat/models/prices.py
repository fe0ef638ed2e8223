"""What model calls cost: list prices of well-known models (dollars per million tokens), a
model's price by name (the config's first), the cost of a usage, and money as people read it."""

# A model with no known price (or a zero price: the offline model, a local server) has no cost:
# nothing is shown rather than $0.

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:  # (the footer's ``money`` is drawn by the renderer, loaded before the prompt)
    from rollchat.domain import Usage


class Linked(Protocol):
    """A listed session as a chain's cost reads it (storage.listing.SessionInfo is one)."""

    @property
    def session_id(self) -> str: ...
    @property
    def resumed_from(self) -> str | None: ...
    @property
    def cost(self) -> float | None: ...


@dataclass(frozen=True)
class Price:
    """Dollars per million tokens: fresh input, output, cache reads (``cached``) and cache
    writes (``cache_write``; None: billed as input)."""

    input: float
    output: float
    cached: float
    cache_write: float | None = None

    @property
    def free(self) -> bool:
        return not (self.input or self.output or self.cached or self.cache_write)


def _anthropic(input: float, output: float) -> Price:
    """Anthropic's rule: cache reads at a tenth of the input price, 5-minute cache writes at
    1.25 times it."""
    return Price(input, output, round(input / 10, 6), round(input * 1.25, 6))


# Published list prices (standard tier, short context); the config's
# ``models: NAME: price:`` overrides them. A name matches exactly, else an entry followed only
# by what names the same model (see _SAME_MODEL: a date, "latest", a provider's version):
# claude-3-5-sonnet-20241022, gpt-4o-2024-08-06, claude-3-5-sonnet@20240620. An "org/" prefix
# (OpenRouter), Bedrock's "anthropic." and dotted Claude versions (claude-sonnet-4.5) are read
# too. Anything else (gpt-4o-realtime-preview, a newer claude-opus-N) is unknown:
# no price rather than a sibling's.
PRICES: dict[str, Price] = {
    # Anthropic: platform.claude.com/docs "Pricing" (model pricing table) and each model's
    # overview page ("Specifications: Pricing"), as stored on 2026-12-07. Cache reads are a
    # tenth of the input price except where a page states otherwise (Fable/Mythos 5.1: $0.25;
    # Opus 5.5: $0.20 = 0.05x). Haiku 5.5 is priced by prompt length: these are its rates for
    # prompts up to 100,000 tokens (5x above: a longer prompt's cost is under-counted).
    "claude-fable-5-1": Price(10.0, 50.0, 0.25, 12.5),
    "claude-mythos-5-1": Price(10.0, 50.0, 0.25, 12.5),
    "claude-fable-5": _anthropic(10.0, 50.0),
    "claude-mythos-5": _anthropic(10.0, 50.0),
    "claude-opus-5-5": Price(4.0, 20.0, 0.20, 5.0),
    "claude-opus-5": _anthropic(5.0, 25.0),
    "claude-opus-4-8": _anthropic(5.0, 25.0),
    "claude-opus-4-7": _anthropic(5.0, 25.0),
    "claude-opus-4-6": _anthropic(5.0, 25.0),
    # Sonnet 5.5: cache reads cut to $0.10 (0.05x) on 2026-10-07 ("Claude Sonnet 5.5 migration
    # guide", English, stored 2026-12-07: "the same prices as Claude Sonnet 5, except for
    # prompt cache reads, which cost $0.10"; the translated overview pages still say $0.20).
    "claude-sonnet-5-5": Price(2.0, 10.0, 0.10, 2.5),
    "claude-sonnet-5": _anthropic(2.0, 10.0),
    "claude-sonnet-4-6": _anthropic(3.0, 15.0),
    "claude-haiku-5-5": _anthropic(0.10, 0.50),
    # Anthropic, earlier rows (the same pricing page, checked 2025-11 and again 2026-12-07)
    "claude-opus-4-5": _anthropic(5.0, 25.0),
    "claude-opus-4-1": _anthropic(15.0, 75.0),
    "claude-opus-4": _anthropic(15.0, 75.0),
    "claude-3-opus": _anthropic(15.0, 75.0),
    "claude-sonnet-4-5": _anthropic(3.0, 15.0),
    "claude-sonnet-4": _anthropic(3.0, 15.0),
    "claude-3-7-sonnet": _anthropic(3.0, 15.0),
    "claude-3-5-sonnet": _anthropic(3.0, 15.0),
    "claude-haiku-4-5": _anthropic(1.0, 5.0),
    "claude-3-5-haiku": _anthropic(0.8, 4.0),
    "claude-3-haiku": _anthropic(0.25, 1.25),
    # OpenAI, current (cache writes free before GPT-5.6), as OpenAI's own pages stored on
    # 2026-12-07 state them, else LiteLLM's price table (BerriAI/litellm
    # model_prices_and_context_window.json at commit 00035b69f416be24e2e323c13198d9b7d2d1bdf9,
    # MIT, kept from OpenAI's pricing page); each row names its source:
    # - developers.openai.com/docs/models ("Choosing a model": gpt-5.5 the flagship, gpt-5.4,
    #   gpt-5.4-mini and -nano the lower-cost ones) gives input and output prices; the
    #   cached-input price of gpt-5.5, gpt-5.4 and gpt-5.4-mini (a tenth of the input) is
    #   LiteLLM's (cache_read_input_token_cost);
    # - developers.openai.com/api/docs/models/gpt-5.4-nano and /gpt-5.1 give all three;
    # - LiteLLM alone: gpt-5.2, gpt-5.3-codex, gpt-5.3-chat, the -pro variants of 5.2, 5.4, 5.5.
    # Standard rates for prompts under 272K tokens (above, gpt-5.4 and 5.5 bill input 2x and
    # output 1.5x: a longer prompt's cost is under-counted). Not listed, no source states
    # them: gpt-5.3 itself and a bare gpt-6 (searched again 2026-12-07: no OpenAI model page,
    # no LiteLLM row; OpenAI's GPT-6 models are named gpt-6-astra, -sol, -luna); the config's
    # ``models: NAME: price:`` sets one (rollchat says the cost is unknown, never $0).
    # - developers.openai.com/ja-JP/api/docs/models/gpt-6-luna (stored 2026-12-07): input
    #   $0.10, cached input $0.01, cache writes $0.125, output $0.50 (short-context rates).
    "gpt-6-luna": Price(0.10, 0.50, 0.01, 0.125),  # api/docs/models/gpt-6-luna
    # - developers.openai.com/zh-Hans/api/docs/models/gpt-6-sol (stored 2026-12-07): input
    #   $2.00, cached input $0.20, cache writes $2.50, output $10.00.
    # - developers.openai.com/api/docs/models/gpt-6.2-sol (stored 2026-12-07): input $2,
    #   cached input $0.10, cache writes $2.50, output $10.
    # - developers.openai.com/ja-JP/api/docs/models/gpt-5.6-sol (and /pt-BR/): input $4.00,
    #   cached $0.40, output $20.00 ("promotional" prices, at least until 2026-11-21); the
    #   gpt-5.6 alias is routed to it. /api/docs/models/gpt-5.6-luna: input $0.20, cached
    #   $0.02, output $1.20. Both pages: cache writes at 1.25x the uncached input rate.
    # Above 272K input tokens all of these bill input and cache 2x and output 1.5x (the
    # short-context rates are the ones here). No OpenAI page stored states the prices of
    # gpt-6-astra, gpt-6.1-sol or gpt-5.6-terra (searched 2026-12-07; gateways' figures
    # differ from each other): not listed, the config's ``models: NAME: price:`` sets them.
    "gpt-6.2-sol": Price(2.0, 10.0, 0.10, 2.50),  # api/docs/models/gpt-6.2-sol
    "gpt-6-sol": Price(2.0, 10.0, 0.20, 2.50),  # zh-Hans/api/docs/models/gpt-6-sol
    "gpt-5.6-sol": Price(4.0, 20.0, 0.40, 5.0),  # ja-JP/api/docs/models/gpt-5.6-sol
    "gpt-5.6": Price(4.0, 20.0, 0.40, 5.0),  # the alias of gpt-5.6-sol (its page says so)
    "gpt-5.6-luna": Price(0.20, 1.20, 0.02, 0.25),  # api/docs/models/gpt-5.6-luna
    "gpt-5.5": Price(5.0, 30.0, 0.50, 0.0),  # docs/models; cached: LiteLLM
    "gpt-5.5-pro": Price(30.0, 180.0, 3.0, 0.0),  # LiteLLM
    "gpt-5.4": Price(2.50, 15.0, 0.25, 0.0),  # docs/models; cached: LiteLLM
    "gpt-5.4-pro": Price(30.0, 180.0, 3.0, 0.0),  # LiteLLM
    "gpt-5.4-mini": Price(0.75, 4.50, 0.075, 0.0),  # docs/models; cached: LiteLLM
    "gpt-5.4-nano": Price(0.20, 1.25, 0.02, 0.0),  # api/docs/models/gpt-5.4-nano
    "gpt-5.3-codex": Price(1.75, 14.0, 0.175, 0.0),  # LiteLLM
    "gpt-5.3-chat": Price(1.75, 14.0, 0.175, 0.0),  # LiteLLM (gpt-5.3-chat-latest)
    "gpt-5.2": Price(1.75, 14.0, 0.175, 0.0),  # LiteLLM
    "gpt-5.2-codex": Price(1.75, 14.0, 0.175, 0.0),  # LiteLLM
    "gpt-5.2-chat": Price(1.75, 14.0, 0.175, 0.0),  # LiteLLM (gpt-5.2-chat-latest)
    "gpt-5.2-pro": Price(21.0, 168.0, 21.0, 0.0),  # LiteLLM (no cached price: = input)
    "gpt-5.1": Price(1.25, 10.0, 0.125, 0.0),  # api/docs/models/gpt-5.1 (marked deprecated)
    # OpenAI, earlier (cached input as published), platform.openai.com pricing as of 2025-11;
    # gpt-5-nano and gpt-5-codex agree with their developers.openai.com pages stored 2026-12-07.
    "gpt-5": Price(1.25, 10.0, 0.125, 0.0),
    "gpt-5-codex": Price(1.25, 10.0, 0.125, 0.0),
    "gpt-5-chat": Price(1.25, 10.0, 0.125, 0.0),
    "gpt-5-pro": Price(15.0, 120.0, 15.0, 0.0),
    "gpt-5-mini": Price(0.25, 2.0, 0.025, 0.0),
    "gpt-5-nano": Price(0.05, 0.40, 0.005, 0.0),
    "gpt-4.1": Price(2.0, 8.0, 0.50, 0.0),
    "gpt-4.1-mini": Price(0.40, 1.60, 0.10, 0.0),
    "gpt-4.1-nano": Price(0.10, 0.40, 0.025, 0.0),
    "gpt-4o": Price(2.50, 10.0, 1.25, 0.0),
    "gpt-4o-2024-05-13": Price(5.0, 15.0, 5.0, 0.0),  # the first gpt-4o, at its own price
    "gpt-4o-mini": Price(0.15, 0.60, 0.075, 0.0),
    "o1": Price(15.0, 60.0, 7.50, 0.0),
    "o1-mini": Price(1.10, 4.40, 0.55, 0.0),
    "o1-pro": Price(150.0, 600.0, 150.0, 0.0),
    "o3": Price(2.0, 8.0, 0.50, 0.0),
    "o3-pro": Price(20.0, 80.0, 20.0, 0.0),
    "o3-mini": Price(1.10, 4.40, 0.55, 0.0),
    "o4-mini": Price(1.10, 4.40, 0.275, 0.0),
}


# What may follow a table name in an id of the same model: a date (-20250514, -2024-08-06),
# -latest, Anthropic's -0 alias (claude-sonnet-4-0), Bedrock's -v1:0, Vertex's @20240620.
_SAME_MODEL = re.compile(r"(?:-(?:\d{8}|\d{4}-\d{2}-\d{2}|latest|0))?(?:-v\d+(?::\d+)?)?"
                         r"(?:@[\w.-]+)?")


def _name(model: str) -> str:
    """A model id as the table spells it: lower case, no "org/" prefix, no Bedrock
    "[region.]anthropic." prefix, Claude versions with "-" (claude-3.5-sonnet: claude-3-5-)."""
    name = model.strip().lower().rsplit("/", 1)[-1]
    name = re.sub(r"^(?:[a-z]{2,4}\.)?anthropic\.", "", name)
    if name.startswith("claude"):
        name = re.sub(r"(?<=\d)\.(?=\d)", "-", name)
    return name


def _match(name: str, table: Mapping[str, Price]) -> Price | None:
    if name in table:
        return table[name]
    known = [k for k in table if name.startswith(k) and _SAME_MODEL.fullmatch(name[len(k):])]
    return table[max(known, key=len)] if known else None


def price_for(model: str, overrides: Mapping[str, Price] | None = None) -> Price | None:
    """The price of ``model``: the config's (that exact name, else matched like the table's,
    so a price set for claude-sonnet-4-5 holds for claude-sonnet-4-5-20250929 too), else the
    table's (see PRICES); None when unknown or free."""
    overrides = overrides or {}
    found = overrides.get(model)
    if found is None:
        name = _name(model)
        found = _match(name, {_name(k): v for k, v in overrides.items()})
        if found is None:
            found = _match(name, PRICES)
    return None if found is None or found.free else found


def price_listed(model: str, overrides: Mapping[str, Price] | None = None) -> bool:
    """Whether ``model`` has a price in the config or the table, a zero one included (a
    model without one has a cost rollchat does not know: it says so, never $0)."""
    overrides = overrides or {}
    if model in overrides:
        return True
    name = _name(model)
    return (_match(name, {_name(k): v for k, v in overrides.items()}) is not None
            or _match(name, PRICES) is not None)


def cost(usage: Usage, price: Price) -> float:
    """Dollars for ``usage`` (its input tokens include the cache reads and writes)."""
    fresh = max(usage.input_tokens - usage.cache_read_tokens - usage.cache_write_tokens, 0)
    write = price.input if price.cache_write is None else price.cache_write
    return (fresh * price.input + usage.output_tokens * price.output
            + usage.cache_read_tokens * price.cached + usage.cache_write_tokens * write) / 1e6


def money(dollars: float) -> str:
    """Dollars for people: $12.34 from a dollar on, $0.0123 below, <$0.0001 for less."""
    if dollars >= 1:
        return f"${dollars:,.2f}"
    if dollars == 0:
        return "$0.00"
    if dollars < 0.0001:
        return "<$0.0001"
    return f"${dollars:.4f}"


@dataclass(frozen=True)
class ChainCost:
    """What a chain of sessions (a session and its ancestors, through the parent links) cost:
    the known costs summed, how many sessions, and how many of them had no cost recorded."""

    spent: float = 0.0
    sessions: int = 0
    unpriced: int = 0

    def plus(self, cost: float | None) -> ChainCost:
        """This chain continued by a session that cost ``cost`` (None: unknown), counted as
        its header records it (to the hundredth of a cent), so that the chain's total is the
        same at exit, after a resume and in ``sessions --json``."""
        return ChainCost(self.spent + round(cost or 0.0, 4), self.sessions + 1,
                         self.unpriced + (cost is None))

    @property
    def known(self) -> bool:
        return self.sessions > self.unpriced


def chain_of(info: Linked, sessions: Iterable[Linked] | Mapping[str, Linked]) -> ChainCost:
    """The chain ending at ``info``, from the listed sessions' recorded costs (a missing
    parent ends it). ``sessions`` by id (a Mapping) when asking for many chains."""
    by_id = sessions if isinstance(sessions, Mapping) else {s.session_id: s for s in sessions}
    lineage: list[Linked] = []
    seen: set[str] = set()
    current: Linked | None = info
    while current is not None and current.session_id not in seen:
        lineage.append(current)
        seen.add(current.session_id)
        current = by_id.get(current.resumed_from) if current.resumed_from else None
    chain = ChainCost()
    for session in reversed(lineage):
        chain = chain.plus(session.cost)
    return chain
