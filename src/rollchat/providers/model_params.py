"""The request parameters each model family takes (sampling, the output limit's name, reasoning
effort): a request carries only what its model takes (providers/fitting.py applies it, and what
a server refused: providers/refused.py). Here, not in models/: providers/ sits below it."""

# Where each rule comes from (checked December 2026):
# - OpenAI reasoning models (o1, o3, o4-mini, the gpt-5 family): only the default temperature
#   (1) and top_p; anything else is refused with HTTP 400, code "unsupported_value" ("Only the
#   default (1) value is supported", e.g. OpenHands/OpenHands#4131, johny-b/llmcomp#69 for
#   gpt-5.4); ``max_tokens`` is refused ("unsupported_parameter": "Use
#   'max_completion_tokens' instead"); ``reasoning_effort`` is theirs (platform.openai.com
#   docs, "Reasoning models"). gpt-5-chat-latest is the non-reasoning chat model: it samples.
# - OpenAI gpt-4o / gpt-4.1 and older: temperature and top_p, no reasoning effort.
# - Anthropic claude-opus-4-7 and later: "Sampling parameters (temperature, top_p, top_k)
#   removed", refused with 400 invalid_request_error "`temperature` is deprecated for this
#   model." (Anthropic's "Migrating to Claude Opus 4.7"; openrouter.ai docs, Claude 4.7
#   migration guide; Comfy-Org/ComfyUI#13923).
# - Anthropic claude-opus-4-1, -4-5, -4-6, claude-sonnet-4-5, -4-6, claude-haiku-4-5: one
#   sampler only: "temperature and top_p cannot both be specified for this model"
#   (browseros-ai/BrowserOS#208, open-webui/functions#9).
# - Reasoning effort (the openai SDK's ReasoningEffort, "Reasoning models" guide): "none" from
#   gpt-5.1 on (its default: no reasoning), "minimal" on gpt-5, -mini, -nano (their default is
#   medium; "none" refused), o1/o3/o4-mini "low" at least; gpt-5-pro takes only "high".
#   The current ones, per developers.openai.com (stored 2026-12-07): gpt-5.5, gpt-5.4, -mini
#   and -nano take none (their default), low, medium, high, xhigh; gpt-5.1 none to high.
#   gpt-6 (no stored OpenAI page) is taken as the reasoning family names.py already counts it
#   in: no sampling, an effort; a refusal is learned (fitting.py).
#   developers.openai.com (stored 2026-12-07): gpt-5.6-sol and -luna take none, low, medium
#   (their default), high, xhigh, max (ja-JP/api/docs/models/gpt-5.6-sol, api/docs/models/
#   gpt-5.6-luna), gpt-6-sol the same (zh-Hans/api/docs/models/gpt-6-sol); gpt-6.2-sol
#   refuses none (api/docs/models/gpt-6.2-sol): "off" is low there.
# - gpt-6-sol through Chat Completions calls functions only with reasoning_effort none
#   (zh-Hans/api/docs/models/gpt-6-sol: "Chat Completions 仅在 reasoning_effort 设为 none
#   时支持函数调用"; tools with reasoning want the Responses API, provider openai-responses).
# - Claude Fable: a Mythos-class model (Fable 5 / Mythos 5 share capabilities), no sampling
#   parameters like the rest of the 5 generation (openrouter.ai docs, Claude 5.5 migration:
#   "Non-default temperature, top_p, and top_k are not supported").
# - Claude Sonnet 5.5 (the default Claude model, providers/names.py): no sampling parameters,
#   thinking budgets or ``thinking: disabled`` (``between_tools`` instead), and neither forced
#   tool choice nor assistant prefill ("Claude Sonnet 5.5 migration guide": the five settings
#   that return a 400); rollchat sends neither of the last two to any model.
# - Anthropic's output limit is always ``max_tokens``; OpenAI-compatible servers (vLLM,
#   llama.cpp, Ollama) read ``max_tokens``, api.openai.com takes ``max_completion_tokens``.

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from rollchat.domain import ThinkingSetting

SAMPLING = ("temperature", "top_p", "top_k")


@dataclass(frozen=True)
class Family:
    """What a family of models takes. ``prefixes``: model names it covers (the longest
    matching prefix wins); ``sampling``: a non-default temperature/top_p/top_k;
    ``one_sampler``: temperature and top_p not both; ``reasoning_effort``: the effort knob."""

    name: str
    prefixes: tuple[str, ...]
    sampling: bool = True
    one_sampler: bool = False
    reasoning_effort: bool = False


OPENAI_REASONING = Family("openai-reasoning", ("o1", "o3", "o4", "gpt-5", "gpt-6", "codex-"),
                          sampling=False, reasoning_effort=True)
FAMILIES: tuple[Family, ...] = (
    OPENAI_REASONING,
    Family("openai-gpt-5-chat", ("gpt-5-chat", "gpt-5.1-chat", "gpt-5.2-chat")),
    Family("openai-gpt-4", ("gpt-4", "gpt-3.5", "chatgpt-4o")),
    Family("claude-sampling-removed", ("claude-opus-4-7", "claude-opus-5", "claude-sonnet-5",
                                       "claude-haiku-5", "claude-mythos", "claude-fable"),
           sampling=False),
    Family("claude-one-sampler", ("claude-opus-4-1", "claude-opus-4-5", "claude-opus-4-6",
                                  "claude-sonnet-4-5", "claude-sonnet-4-6",
                                  "claude-haiku-4-5"), one_sampler=True),
)
ANY_MODEL = Family("any", ())  # an unknown model: sent what is asked; a refusal is learned


def family_of(model: str) -> Family:
    """The family of ``model`` (a provider prefix such as ``openai/`` or ``anthropic.`` and
    case are ignored), ANY_MODEL when none matches."""
    name = model.lower().rsplit("/", 1)[-1]
    name = name.split("anthropic.", 1)[-1]  # Bedrock's "anthropic.claude-..." ids
    best, length = ANY_MODEL, 0
    for family in FAMILIES:
        for prefix in family.prefixes:
            if name.startswith(prefix) and len(prefix) > length:
                best, length = family, len(prefix)
    return best


def reasoning_effort(model: str, setting: ThinkingSetting,
                     budget_effort: Callable[[int], str]) -> str | None:
    """The ``reasoning_effort`` of a Chat Completions request for rollchat's thinking setting
    (``budget_effort``: the effort nearest a budget): None (not sent) for the model's default,
    for a model known to take no effort (gpt-4o, gpt-4.1, gpt-5-chat: they do not reason), and
    for gpt-5-pro (high only); "on": medium (gpt-5.1 and later do not reason by default);
    "off": the least the model takes (none, minimal or low); a budget: the nearest effort. An
    unknown model (a compatible server's) gets it too: a refusal is learned."""
    family = family_of(model)
    name = model.lower().rsplit("/", 1)[-1]
    if setting is None or name.startswith("gpt-5-pro") or not (
            family.reasoning_effort or family is ANY_MODEL):
        return None
    if setting == "on":
        return "medium"
    if setting == "off":
        if re.match(r"gpt-5\.\d", name) or _named(name, "gpt-6-sol"):  # they take none
            return "none"
        return "minimal" if name.startswith("gpt-5") else "low"
    return budget_effort(int(setting))


# Models whose Chat Completions requests call functions only with reasoning_effort none.
TOOLS_WITHOUT_REASONING = ("gpt-6-sol",)


def _named(name: str, model: str) -> bool:
    """Whether ``name`` is ``model`` or one of its snapshots (gpt-6-sol-2026-09-22)."""
    return name == model or name.startswith(f"{model}-20")


def chat_tools_effort(model: str) -> str | None:
    """The ``reasoning_effort`` a Chat Completions request carrying tools must have on
    ``model`` ("none" for a model that calls functions there only without reasoning, see
    TOOLS_WITHOUT_REASONING), None where any effort goes with tools."""
    name = model.lower().rsplit("/", 1)[-1]
    return "none" if any(_named(name, m) for m in TOOLS_WITHOUT_REASONING) else None


def tools_note(model: str) -> str | None:
    """What thinking is on ``model`` over Chat Completions when it is not what the setting
    says (None: it is): a model that calls functions there only without reasoning."""
    if chat_tools_effort(model) != "none":
        return None
    return (f"{model} calls tools on Chat Completions only without reasoning: a request that "
            "offers tools goes with reasoning_effort none (provider openai-responses reasons "
            "with tools)")


def without(params: Mapping[str, Any], names: frozenset[str] | set[str]) -> dict[str, Any]:
    """``params`` without ``names``, also inside ``extra_body`` (where a parameter the SDK no
    longer types is sent); an emptied ``extra_body`` is dropped."""
    out = {k: v for k, v in params.items() if k not in names}
    extra = out.get("extra_body")
    if isinstance(extra, Mapping):
        kept = {k: v for k, v in extra.items() if k not in names}
        if kept:
            out["extra_body"] = kept
        else:
            del out["extra_body"]
    return out


def _present(params: Mapping[str, Any], name: str) -> bool:
    extra = params.get("extra_body")
    return name in params or (isinstance(extra, Mapping) and name in extra)


def fitted(params: Mapping[str, Any], model: str,
           refused: frozenset[str] = frozenset()) -> dict[str, Any]:
    """``params`` with only what ``model`` takes: sampling dropped for a family that refuses
    it, top_p dropped beside a temperature for a one-sampler family, reasoning effort dropped
    for a model without it, and whatever the server refused in this run."""
    family = family_of(model)
    drop = set(refused)
    if not family.sampling:
        drop.update(SAMPLING)
    elif family.one_sampler and _present(params, "temperature"):
        drop.add("top_p")
    if not family.reasoning_effort and family is not ANY_MODEL:
        drop.add("reasoning_effort")
    return without(params, drop)
