"""The configuration's values: the frozen Config, its parts and their defaults, and the
command-line overrides. config.load resolves them (defaults < file < environment < flags)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from rollchat.config.compaction import ROLLCHAT, CompactionSettings, Engine
from rollchat.providers.names import AUTO

if TYPE_CHECKING:  # read from a file only (config.file imports them)
    from rollchat.config.hooks import HookConfig
    from rollchat.config.mcp_servers import McpServerConfig
    from rollchat.domain import ThinkingSetting
    from rollchat.models.prices import Price

PROJECT_FILE = "rollchat.yml"  # the project config, read from the working directory untrusted


@dataclass(frozen=True)
class AgentConfig:
    """One agent. ``key`` is its name in the ``agents:`` mapping (used in session ids)."""

    key: str = "assistant"
    name: str = "Assistant"
    provider: str = AUTO
    model: str | None = None
    base_url: str | None = None
    # requests at once to its server (None: 1 for a base_url server, no limit for the
    # official APIs; the chat's request first, summaries and memory behind it)
    concurrency: int | None = None
    api_key_env: str | None = None
    system_prompt: str = "You are a helpful assistant."
    system_prompt_file: Path | None = None
    max_output_tokens: int = 4096
    temperature: float | None = None
    # how much the model thinks: None (its default), "on", "off" or a budget in tokens
    thinking: ThinkingSetting = None
    mcp_servers: tuple[McpServerConfig, ...] = ()  # the agent's own (after the top level's)
    file: Path | None = None  # an agent file (Python): its settings and tools (agents.file)
    approval: str = "ask"  # ask | auto | never: what a tool call needs (tools.approval)
    allow: tuple[str, ...] = ()  # tool names or globs that run without asking
    deny: tuple[str, ...] = ()  # tool names or globs that never run
    max_tool_rounds: int = 25  # model calls with tool results in one turn
    skills_dir: Path | None = None  # a folder of skills (skills/NAME/SKILL.md)
    # who writes the summary at a compaction (config.compaction): rollchat or the provider
    compaction: CompactionSettings = field(default_factory=CompactionSettings)
    hygiene: Engine = ROLLCHAT  # who clears old tool uses: rollchat, or the provider's server
    # an agent file's tools (None: no agent file); not a config key, like set_in_config
    tool_names: tuple[str, ...] | None = field(default=None, metadata={"derived": True})
    # the keys the config file set: they win over the agent file's, as flags win over both
    set_in_config: frozenset[str] = field(default=frozenset(), compare=False,
                                          metadata={"derived": True})

    @property
    def agent_path(self) -> str:
        """What the session header's ``Agent Path`` says: the agent file, or the config key."""
        return str(self.file) if self.file is not None else f"config:{self.key}"


NO_SAVE_LOCATION = "memory only (--no-save)"

AutoCompact = Literal["on", "off", "ask"]
AUTO_COMPACT_CHOICES: tuple[AutoCompact, ...] = ("on", "off", "ask")


def auto_mode(setting: bool | str) -> AutoCompact:
    """``session.auto_compact`` (true, false or "ask") as a mode: on, off or ask."""
    if setting == "ask":
        return "ask"
    return "on" if setting is True or setting == "on" else "off"


@dataclass(frozen=True)
class ModelConfig:
    """One model's settings under ``models:`` (each optional; at least one is set)."""

    context_window: int | None = None
    price: Price | None = None  # dollars per million tokens (see models.prices)
    # whether the model is sent images (None: Anthropic and api.openai.com yes, an
    # OpenAI-compatible server no: many serve text-only models that refuse them)
    images: bool | None = None
    # whether OpenAI keeps this model's responses (provider openai-responses; None: no, the
    # default: nothing is kept server-side and the reasoning comes back encrypted instead)
    store: bool | None = None


@dataclass(frozen=True)
class SessionConfig:
    """Where sessions are kept and when a chat compacts (``session:``)."""

    dir: Path = Path("sessions")
    auto_save: bool = True
    auto_compact: bool | Literal["ask"] = True  # ask: at the threshold, the user decides
    compact_threshold: float = 0.8
    safety_margin_tokens: int = 1000
    compact_every_turns: int = 0
    keep_recent_turns: int = 2
    history: str = "all"  # all | relevant: which earlier exchanges each request sends

    @property
    def location(self) -> str:
        """Where sessions are kept, as the banner says it."""
        return str(self.dir) if self.auto_save else NO_SAVE_LOCATION


@dataclass(frozen=True)
class SummaryConfig:
    """Who writes the summaries and how long they may be (``summary:``)."""

    provider: str | None = None
    model: str | None = None
    max_words: int = 500
    timeout_seconds: float = 60.0
    # the summary of a one-shot run (``rollchat -p``): "local" (extractive, no model call: a
    # model's summary of one exchange costs more than the exchange) or "model"
    one_shot: str = "local"
    # the chat's exit summary: "auto" (the model's for a session with real content, the local
    # one for a trivial session: session/exiting.py), "model", "local" or "skip" (none)
    on_exit: str = "auto"


@dataclass(frozen=True)
class RetryConfig:
    """How a failed model request is retried (``retry:``)."""

    max_retries: int = 3
    base_delay: float = 1.0
    max_delay: float = 30.0
    request_timeout: float = 120.0


@dataclass(frozen=True)
class ToolsConfig:
    """Limits on what a tool hands back to the model (``tools:``)."""

    max_result_tokens: int | None = None  # None: a tenth of the model's context window


HANDOFF_STRATEGIES = ("summary", "bm25", "last_n")
ONE_SHOT_SUMMARIES = ("local", "model")  # summary.one_shot
EXIT_SUMMARIES = ("auto", "model", "local", "skip")  # summary.on_exit


@dataclass(frozen=True)
class HandoffConfig:
    """What ``@NAME message`` hands to agent NAME (see session.handoff): a summary of the session,
    the turns most relevant to the message (bm25) or the last ``last_n`` turns verbatim; the
    turns handed are at most ``max_tokens``."""

    strategy: str = "summary"
    last_n: int = 6
    max_tokens: int = 4000


@dataclass(frozen=True)
class UIConfig:
    """The terminal's settings (``ui:``)."""

    history_file: Path | None = None  # None: history in the user data directory
    # seconds between the offline model's streamed words; None: OFFLINE_WORD_DELAY when the
    # answer is drawn in a terminal, none when the output goes to a pipe or a file
    offline_word_delay: float | None = None
    # a turn that took longer ends with a bell (and a desktop notification where the terminal
    # shows one); 0: never. Never in piped or one-shot runs.
    notify_after_seconds: float = 0.0


OFFLINE_WORD_DELAY = 0.02


def word_delay(ui: UIConfig, terminal: bool) -> float:
    """The offline model's delay between streamed words: as configured, else a short one when
    the answer is drawn in a terminal and none when it goes to a pipe or a file (nobody watches
    it stream, and a script should not wait)."""
    if ui.offline_word_delay is not None:
        return ui.offline_word_delay
    return OFFLINE_WORD_DELAY if terminal else 0.0


@dataclass(frozen=True)
class MemoryConfig:
    """Memory across sessions (src/rollchat/memory/): facts and episodes per agent."""

    enabled: bool = True
    scope: str = "user"  # user | project: where preferences and background facts go
    idle_seconds: float = 300.0  # extract facts after this long without input (0: never)
    extract_timeout_seconds: float = 10.0  # at exit, fact extraction (then the offline rules)
    max_age_days: int | None = None  # facts unused this long are listed by `memory prune`
    max_share: float = 0.1  # the most of the context window remembered facts may take
    user_dir: Path | None = None  # the user-level facts; None: the user data directory
    # this project's facts and episodes; None: the project's directory in the user data
    # directory (memory/location.py)
    dir: Path | None = None


INSTRUCTION_FILES = ("AGENTS.md", "CLAUDE.md", "GEMINI.md")
MAX_INSTRUCTION_BYTES = 1024 * 1024  # instructions.max_bytes' cap, whoever sets it


@dataclass(frozen=True)
class InstructionsConfig:
    """Project instructions (agents/instructions.py): the file names looked for in the user
    config directory, the repository root and each directory down to the working directory,
    and the most bytes they may take together (Codex's project_doc_max_bytes is 32 KiB)."""

    enabled: bool = True
    files: tuple[str, ...] = INSTRUCTION_FILES
    max_bytes: int = 32 * 1024


@dataclass(frozen=True)
class Config:
    """The whole configuration, resolved once (config.load); frozen, passed to what needs it."""

    agents: Mapping[str, AgentConfig] = field(
        default_factory=lambda: {"assistant": AgentConfig()}
    )
    default_agent: str = "assistant"
    models: Mapping[str, ModelConfig] = field(default_factory=dict)
    session: SessionConfig = field(default_factory=SessionConfig)
    summary: SummaryConfig = field(default_factory=SummaryConfig)
    retry: RetryConfig = field(default_factory=RetryConfig)
    ui: UIConfig = field(default_factory=UIConfig)
    tools: ToolsConfig = field(default_factory=ToolsConfig)
    memory: MemoryConfig = field(default_factory=MemoryConfig)
    handoff: HandoffConfig = field(default_factory=HandoffConfig)
    instructions: InstructionsConfig = field(default_factory=InstructionsConfig)
    hooks: tuple[HookConfig, ...] = ()  # commands run at fixed points (config.hooks)
    hooks_held: str | None = None  # why the file's hooks never run (an untrusted project file)
    mcp_servers: tuple[McpServerConfig, ...] = ()  # for every agent
    source: Path | None = None  # the config file read, if any
    source_sha256: str | None = None  # the hash of the bytes read from it
    ignored_settings: tuple[str, ...] = ()  # what an untrusted project file could not set
    trust_notice: str | None = None  # the line saying which, and how to trust the file
    # one line each: what Claude Code's settings.json files gave that rollchat cannot honour,
    # or held (config.claude_settings)
    settings_notes: tuple[str, ...] = ()

    @property
    def warnings(self) -> tuple[str, ...]:
        """The lines to show before the chat: the trust notice, then the settings' notes."""
        return ((self.trust_notice,) if self.trust_notice else ()) + self.settings_notes

    @property
    def agent(self) -> AgentConfig:
        """The agent this run uses (``default_agent`` after --agent / $ROLLCHAT_AGENT)."""
        return self.agents[self.default_agent]

    @property
    def agent_mcp_servers(self) -> tuple[McpServerConfig, ...]:
        """The MCP servers of this run's agent: the top level's, then the agent's own (which
        replace a top-level server of the same name)."""
        if not self.mcp_servers and not self.agent.mcp_servers:
            return ()  # (mcp_servers imports the YAML reader: a run with none never needs it)
        from rollchat.config.mcp_servers import merged

        return merged(self.mcp_servers, self.agent.mcp_servers)

    def images_for(self, model: str) -> bool | None:
        """``models.<model>.images`` (None: unset, the provider decides)."""
        entry = self.models.get(model)
        return entry.images if entry else None

    def store_for(self, model: str) -> bool:
        """``models.<model>.store`` (False when unset: OpenAI keeps nothing)."""
        entry = self.models.get(model)
        return bool(entry and entry.store)

    def context_window_override(self, model: str) -> int | None:
        entry = self.models.get(model)
        return entry.context_window if entry else None

    @property
    def prices(self) -> dict[str, Price]:
        """The prices set under ``models:`` (they win over prices.PRICES)."""
        return {name: m.price for name, m in self.models.items() if m.price is not None}


@dataclass(frozen=True)
class ConfigOverrides:
    """The command-line flags; each one set wins over the file and the environment."""

    agent: str | None = None
    provider: str | None = None
    model: str | None = None
    base_url: str | None = None
    sessions_dir: Path | None = None
    no_save: bool = False
    exit_summary: str | None = None  # --exit-summary (--no-exit-summary: skip)
    no_memory: bool = False  # --no-memory: neither recalled nor extracted this run



def default_user_config_dir() -> Path:
    """The user config directory (``~/.config/rollchat`` on Linux)."""
    import platformdirs

    return Path(platformdirs.user_config_dir("rollchat"))
