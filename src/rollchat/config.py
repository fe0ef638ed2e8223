"""Configuration: defaults < YAML file < environment < flags, resolved once into a frozen Config.

Errors name the file, the line and the key (ConfigError; the CLI exits 2 on it).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

PROVIDERS = ("auto", "anthropic", "openai", "offline")


@dataclass(frozen=True)
class AgentConfig:
    """One agent. ``key`` is its name in the ``agents:`` mapping (used in session ids)."""

    key: str = "assistant"
    name: str = "Assistant"
    provider: str = "auto"
    model: str | None = None
    base_url: str | None = None
    api_key_env: str | None = None
    system_prompt: str = "You are a helpful assistant."
    system_prompt_file: Path | None = None
    max_output_tokens: int = 4096
    temperature: float | None = None


@dataclass(frozen=True)
class ModelConfig:
    context_window: int


@dataclass(frozen=True)
class SessionConfig:
    dir: Path = Path("sessions")
    auto_save: bool = True
    auto_compact: bool = True
    compact_threshold: float = 0.8
    safety_margin_tokens: int = 1000
    compact_every_turns: int = 0
    keep_recent_turns: int = 2


@dataclass(frozen=True)
class SummaryConfig:
    provider: str | None = None
    model: str | None = None
    max_words: int = 500
    timeout_seconds: float = 60.0


@dataclass(frozen=True)
class RetryConfig:
    max_retries: int = 3
    base_delay: float = 1.0
    max_delay: float = 30.0
    request_timeout: float = 120.0


@dataclass(frozen=True)
class UIConfig:
    history_file: Path | None = None  # None: history in the user data directory
    offline_word_delay: float = 0.02  # seconds between the offline model's streamed words


@dataclass(frozen=True)
class Config:
    agents: Mapping[str, AgentConfig] = field(
        default_factory=lambda: {"assistant": AgentConfig()}
    )
    default_agent: str = "assistant"
    models: Mapping[str, ModelConfig] = field(default_factory=dict)
    session: SessionConfig = field(default_factory=SessionConfig)
    summary: SummaryConfig = field(default_factory=SummaryConfig)
    retry: RetryConfig = field(default_factory=RetryConfig)
    ui: UIConfig = field(default_factory=UIConfig)
    source: Path | None = None  # the config file read, if any

    @property
    def agent(self) -> AgentConfig:
        """The agent this run uses (``default_agent`` after --agent / $ROLLCHAT_AGENT)."""
        return self.agents[self.default_agent]

    def context_window_override(self, model: str) -> int | None:
        entry = self.models.get(model)
        return entry.context_window if entry else None
