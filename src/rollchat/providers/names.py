"""The providers' names (spelled here only), their default models, key and server-URL
variables and SDK modules: plain data that config reads without loading the registry."""

from __future__ import annotations

ANTHROPIC = "anthropic"
OPENAI = "openai"  # Chat Completions: OpenAI and every OpenAI-compatible server
OPENAI_RESPONSES = "openai-responses"  # OpenAI's Responses API (reasoning carried between turns)
OFFLINE = "offline"
AUTO = "auto"  # picks one by the keys set (providers.resolve_provider_name)

PROVIDER_NAMES = (ANTHROPIC, OPENAI, OPENAI_RESPONSES, OFFLINE)  # the registry builds each of these
PROVIDER_CHOICES = (AUTO, *PROVIDER_NAMES)  # what --provider and the config file accept

# The model each provider uses when none is configured. The offline model is named after its
# provider (its context window is keyed by it). Anthropic: its current Sonnet
# (platform.claude.com "Models overview" and the Claude Sonnet 5.5 pages, stored 2026-12-07:
# 1M window, 128K output, adaptive thinking on by default, no sampling parameters, no forced
# tool choice). OpenAI: gpt-5.4-mini, named among the current lower-cost models by
# developers.openai.com "Choosing a model" (400K window, a reasoning model: no temperature,
# ``max_completion_tokens``, reasoning effort none by default), for both of its APIs (auto picks
# the Responses API for it at api.openai.com: providers.resolve_provider_name).
DEFAULT_MODELS = {ANTHROPIC: "claude-sonnet-5-5", OPENAI: "gpt-5.4-mini",
                  OPENAI_RESPONSES: "gpt-5.4-mini", OFFLINE: OFFLINE}

# The environment variable holding each remote provider's key, the one its SDK reads a server
# URL from when no base_url is given, and the SDK it imports.
KEY_ENV = {ANTHROPIC: "ANTHROPIC_API_KEY", OPENAI: "OPENAI_API_KEY",
           OPENAI_RESPONSES: "OPENAI_API_KEY"}
BASE_URL_ENV = {ANTHROPIC: "ANTHROPIC_BASE_URL", OPENAI: "OPENAI_BASE_URL",
                OPENAI_RESPONSES: "OPENAI_BASE_URL"}
SDK_MODULES = {ANTHROPIC: "anthropic", OPENAI: "openai", OPENAI_RESPONSES: "openai"}
OPENAI_FAMILY = (OPENAI, OPENAI_RESPONSES)  # one key, one SDK; a base_url may replace the key

# OpenAI's reasoning models: the o-series and GPT-5 and later, except the "chat" variants
# (gpt-5-chat-latest and the like answer without reasoning). Through Chat Completions their
# reasoning is dropped after every call, so each tool round and each turn reasons again from
# nothing; the Responses API hands it back (encrypted) and OpenAI recommends it for them.
REASONING_PREFIXES = ("o1", "o3", "o4", "gpt-5", "gpt-6", "codex")


def is_reasoning_model(model: str) -> bool:
    """Whether ``model`` names one of OpenAI's reasoning models (see REASONING_PREFIXES)."""
    name = model.lower().rpartition("/")[2]  # "openai/gpt-5" as some gateways spell it
    return name.startswith(REASONING_PREFIXES) and "chat" not in name


def is_local(base_url: str | None) -> bool:
    """Whether ``base_url`` is a server on this machine or a private network (llama.cpp,
    Ollama, LM Studio, vLLM as people run them): its model is never priced."""
    import ipaddress
    from urllib.parse import urlsplit

    host = (urlsplit(base_url).hostname or "") if base_url else ""
    if host == "localhost" or host.endswith((".localhost", ".local")):
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    return address.is_loopback or address.is_private or address.is_unspecified


def is_official(base_url: str | None) -> bool:
    """Whether requests go to OpenAI itself (no base URL, or one at api.openai.com)."""
    return base_url is None or "api.openai.com" in base_url

# Models with preserved thinking: a thinking block is bound to everything before it (system,
# tools, earlier messages), and a request that changed any of it is refused with HTTP 400
# ("Invalid `signature` in `thinking` block. The block is bound to a different conversation")
# (platform.claude.com "Prefix checks on thinking blocks", supportedModels, stored 2026-12-07).
# Their requests must stay append-only: nothing already sent is rewritten (engine/context.py).
THINKING_BOUND_PREFIXES = ("claude-sonnet-5-5", "claude-opus-5-5", "claude-haiku-5-5",
                           "claude-fable-5-1", "claude-fable-5-2", "claude-mythos-5-1",
                           "claude-mythos-5-2")


def binds_thinking(model: str) -> bool:
    """Whether ``model`` binds its thinking blocks to what precedes them (see above)."""
    return model.startswith(THINKING_BOUND_PREFIXES)
