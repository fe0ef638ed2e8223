"""The providers' names (spelled here only), their default models, key and server-URL
variables and SDK modules: plain data that config reads without loading the registry."""

from __future__ import annotations

ANTHROPIC = "anthropic"
OPENAI = "openai"
OFFLINE = "offline"
AUTO = "auto"  # picks one by the keys set (providers.resolve_provider_name)

PROVIDER_NAMES = (ANTHROPIC, OPENAI, OFFLINE)  # the registry builds each of these
PROVIDER_CHOICES = (AUTO, *PROVIDER_NAMES)  # what --provider and the config file accept

# The offline model is named after its provider (its context window is keyed by it).
DEFAULT_MODELS = {ANTHROPIC: "claude-sonnet-4-5", OPENAI: "gpt-4o-mini", OFFLINE: OFFLINE}

# The environment variable holding each remote provider's key, the one its SDK reads a server
# URL from when no base_url is given, and the SDK it imports.
KEY_ENV = {ANTHROPIC: "ANTHROPIC_API_KEY", OPENAI: "OPENAI_API_KEY"}
BASE_URL_ENV = {ANTHROPIC: "ANTHROPIC_BASE_URL", OPENAI: "OPENAI_BASE_URL"}
SDK_MODULES = {ANTHROPIC: "anthropic", OPENAI: "openai"}
