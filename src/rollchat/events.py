"""What a session tells its front end, as values: the events its flows yield.

The REPL draws them, tests assert on them, and later the MCP server and scripts consume them.
None of them carries a terminal concept (no colours, no widgets): only what happened.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from rollchat.domain import Summary, ToolCall, Turn, Usage
from rollchat.memory.records import Fact
from rollchat.providers.base import TextDelta, ThinkingDelta, UsageEvent

Level = Literal["info", "detail", "warning", "error"]


@dataclass(frozen=True)
class Notice:
    """A line for the user: progress (info), a detail, a warning or an error."""

    level: Level
    text: str


@dataclass(frozen=True)
class Document:
    """Markdown for the user (a summary shown), drawn as answers are."""

    text: str


@dataclass(frozen=True)
class AnswerStarted:
    """The agent starts answering (its text follows as TextDelta events)."""

    agent: str


@dataclass(frozen=True)
class AnswerAborted:
    """The answer so far is dropped because the message will be sent again."""


@dataclass(frozen=True)
class Retrying:
    attempt: int
    wait: float
    error: str


@dataclass(frozen=True)
class ToolStarted:
    call: ToolCall


@dataclass(frozen=True)
class ToolFinished:
    """A tool call ended; ``status``: ok, error (the tool failed), refused (approval or a
    rule), interrupted (Ctrl-C)."""

    call: ToolCall
    result: str
    elapsed: float = 0.0
    status: str = "ok"


@dataclass(frozen=True)
class TurnFinished:
    """A turn ended (answered or not) and was saved; ``hint``: what to do about a failure."""

    turn: Turn
    hint: str | None = None
    cost: float | None = None  # dollars for the turn's tokens (None: the price is unknown)
    cost_unknown: bool = False  # a remote model with no known price: said, never $0


@dataclass(frozen=True)
class SummaryStarted:
    """A summary is being written (a model call, or the local summarizer)."""


@dataclass(frozen=True)
class SummaryFinished:
    """The summary is written; ``fallback``: why the local summary replaced the model's."""

    summary: Summary
    fallback: str | None = None


@dataclass(frozen=True)
class Planned:
    """Before a model call: the estimated prompt and what the compaction policy decided."""

    estimate: int
    budget: int
    compact: bool
    reason: str


@dataclass(frozen=True)
class CompactionStarted:
    reason: str
    automatic: bool
    estimate: int  # the prompt size that triggered it (0 for manual compact)
    window: int


@dataclass(frozen=True)
class CompactionFinished:
    """The session continues in a child; ``kept``: turns carried verbatim (automatic)."""

    parent_id: str | None
    automatic: bool
    kept: int
    tokens_before: int
    tokens_after: int


@dataclass(frozen=True)
class Saved:
    """The session file holds everything so far (after a turn, a summary, or at exit)."""

    session_id: str
    file_name: str


@dataclass(frozen=True)
class Ended:
    """The session is over (exit): its figures, for the goodbye."""

    session_id: str | None
    queries: int
    tokens: int
    restoration_tokens: int
    summary_tokens: int  # the summary calls' (compact, automatic compaction, exit)
    save_failed: bool
    restored: bool
    summary_failed: bool = False  # every turn saved, but not the summary
    cost: float | None = None  # dollars for the tokens billed (None: the price is unknown)
    # the chain: this session and those it continues (through compactions and resumes)
    chain_cost: float | None = None  # their known costs summed (None: none known)
    chain_sessions: int = 1
    chain_unpriced: int = 0  # sessions of the chain with no cost recorded
    in_memory: bool = False  # kept in memory only (--no-save): nothing was written
    # the whole run: every model call this process made for the chat (every session it went
    # on in: restorations, summaries and queries), from the same call records as ``cost``
    run_usage: Usage = field(default_factory=Usage)
    run_cost: float | None = None
    memory_tokens: int = 0  # the memory's fact-extraction calls'
    unpriced_model: str | None = None  # the chat's model when its price is unknown (said)


@dataclass(frozen=True)
class FactRemembered:
    """A new fact is in the memory (``remember``, or extracted): always shown, never silent."""

    fact: Fact


@dataclass(frozen=True)
class ServersStarting:
    """The tool servers the first message waits for, as they are now (a live line): each
    name, the seconds since it was started and its startup timeout; empty: the wait is over."""

    servers: tuple[tuple[str, float, float], ...]


Event = (Notice | Document | AnswerStarted | AnswerAborted | TextDelta | ThinkingDelta
         | UsageEvent | Retrying | ToolStarted | ToolFinished | TurnFinished | SummaryStarted
         | SummaryFinished
         | Planned | CompactionStarted | CompactionFinished | Saved | Ended | FactRemembered
         | ServersStarting)
