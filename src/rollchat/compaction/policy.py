"""Every automatic-compaction decision in one pure function, ``plan(situation) -> Plan``
(trigger, guards, turns kept verbatim, the summary's share, when background pre-summaries
start), and the prompt ``Budget`` it and the summarizer measure against. No clock, no I/O."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

MIN_SAVING = 0.10  # skip a compaction that would save less than 10% of the prompt
MAX_FAILURES = 3  # after this many failed compactions in a row, warn and carry on
COOLDOWN_CALLS = 1  # model calls after a compaction before the next one may start
MIN_GROWTH = 0.25  # share of the budget the prompt must grow by before compacting again
PRESUMMARY_SHARE = 0.7  # start the summary in the background past this share of the budget
POST_COMPACTION_SHARE = 0.5  # a compaction keeps fewer turns rather than leave more than this
SUMMARY_SHARE = 1 / 3  # a summary takes at most this share of the budget
RESTORATION_TOKENS = 400  # the restoration prompt's text and the acknowledgment, roughly
# The restoration's acknowledgment is 2-6 sentences: a small model that rambles stops at the
# smallest of this, ACK_SHARE of the window (a 2K window: 64 tokens, a line) and the output limit
# (it is kept verbatim in the context).
ACK_TOKENS = 400
ACK_SHARE = 1 / 32
# Shares of the context window where the toolbar's gauge changes colour; with auto_compact:
# ask, a compaction put off ("later") is proposed again when the context reaches the next one.
GAUGE_LEVELS = (0.70, 0.85, 0.95)


def gauge_level(used: int, window: int) -> int:
    """How full the context is: 0 below 70% of the window, 1 from 70%, 2 from 85%, 3 from
    95% (see GAUGE_LEVELS)."""
    share = used / window if window > 0 else 1.0
    return sum(1 for level in GAUGE_LEVELS if share >= level)


@dataclass(frozen=True)
class Budget:
    """The prompt budget for one model. ``warning`` says when max_output_tokens was clamped."""

    window: int
    max_output_tokens: int
    safety_margin: int
    tokens: int
    warning: str | None = None

    @property
    def ack_tokens(self) -> int:
        """The most tokens the restoration's acknowledgment may take (see ACK_SHARE)."""
        return max(1, min(ACK_TOKENS, int(self.window * ACK_SHARE), self.max_output_tokens))


def compute_budget(window: int, max_output_tokens: int, threshold: float,
                   safety_margin: int) -> Budget:
    """``min(window * threshold, window - max_output - margin)``, never zero or less.

    Small windows are real (local models at 4K or 8K): an output reservation that leaves the
    prompt less than a quarter of the window is clamped to a quarter, with a warning.
    """
    warning = None
    margin = min(safety_margin, window // 20)
    output = max_output_tokens
    if window - output - margin < window // 4:
        output = max(window // 4, 1)
        warning = (f"max_output_tokens {max_output_tokens:,} leaves no room in the "
                   f"{window:,}-token window; using {output:,}")
    tokens = min(int(window * threshold), window - output - margin)
    return Budget(window, output, margin, max(tokens, 1), warning)


@dataclass(frozen=True)
class PolicyState:
    calls_since_compaction: int = 1_000_000
    turns_since_compaction: int = 0
    consecutive_failures: int = 0
    tool_call_pending: bool = False
    tokens_after_compaction: int = 0  # the estimate right after the last compaction
    put_off_level: int | None = None  # the gauge level at which the user said "later"


@dataclass(frozen=True)
class Situation:
    """Everything ``plan`` looks at, measured by the caller before a model call.

    ``estimate``: the next prompt with the pending message. ``fixed_after``: what a compacted
    context holds besides the kept turns (system prompt, summary, restoration exchange).
    ``tail``: sizes of the last turns that could be kept verbatim, oldest first. ``refused``:
    the provider just answered that the context is too long (compact whatever the guards say).
    ``ask``: auto_compact is "ask": a compaction the guards allow is proposed to the user
    first, unless the request could not be sent without it.
    """

    estimate: int
    budget: Budget
    state: PolicyState
    fixed_after: int
    pending: int = 0
    tail: Sequence[int] = ()
    keep_turns: int = 2
    enabled: bool = True
    ask: bool = False
    every_turns: int = 0
    has_turns: bool = True
    refused: bool = False


@dataclass(frozen=True)
class Plan:
    """What to do before the next model call, and why (or why not)."""

    compact: bool
    reason: str
    keep_turns: int = 0  # turns carried verbatim into the new session
    summary_tokens: int = 0  # the most the summary may take
    expected_after: int = 0  # the prompt right after compacting
    presummarize: bool = False  # summarize the turns so far in the background
    ask: bool = False  # compact only if the user says so (auto_compact: ask)


def kept_turns(tail: Sequence[int], keep: int, base: int, budget: Budget) -> int:
    """How many of the last turns to keep verbatim: ``keep``, fewer when the prompt right after
    the compaction (``base`` + kept turns) would take more than POST_COMPACTION_SHARE of the
    budget (a compaction must leave real room, or the next turn compacts again)."""
    keep = min(keep, len(tail))
    while keep > 0 and base + sum(tail[len(tail) - keep:]) > budget.tokens * POST_COMPACTION_SHARE:
        keep -= 1
    return max(keep, 0)


def plan(s: Situation) -> Plan:
    """Whether to compact before the next model call, what is kept, and why.

    A compaction that would not shrink the prompt by MIN_SAVING is skipped, so it can never
    loop even if the summary comes back longer than what it replaces (unless the prompt could
    not be sent at all: then it is tried, once per cooldown). Nor does it compact again before
    the prompt has grown by MIN_GROWTH of the budget since the last compaction. The periodic
    trigger (``every_turns``) is not subject to these: its counter resets. From
    PRESUMMARY_SHARE of the budget on, the summary is prepared in the background.
    """
    budget, state = s.budget, s.state
    keep = kept_turns(s.tail, s.keep_turns, s.fixed_after + s.pending, budget)
    expected = s.fixed_after + s.pending + sum(s.tail[len(s.tail) - keep:]) if keep else (
        s.fixed_after + s.pending)
    summary_tokens = int(budget.tokens * SUMMARY_SHARE)

    def go(reason: str) -> Plan:
        return Plan(True, reason, keep, summary_tokens, expected)

    def stop(reason: str) -> Plan:
        early = s.enabled and s.has_turns and s.estimate >= PRESUMMARY_SHARE * budget.tokens
        return Plan(False, reason, keep, summary_tokens, expected, presummarize=early)

    if not s.enabled:
        return Plan(False, "automatic compaction is off")
    if not s.has_turns:
        return Plan(False, "nothing to compact yet")
    if state.tool_call_pending:
        return stop("a tool call is waiting for its result")
    if s.refused:
        return go("the provider said the context is too long")
    if state.consecutive_failures >= MAX_FAILURES:
        return stop(f"{MAX_FAILURES} compactions failed in a row")
    over = s.estimate > budget.tokens
    periodic = s.every_turns > 0 and state.turns_since_compaction >= s.every_turns
    if not (over or periodic):
        return stop("within budget")
    if state.calls_since_compaction < COOLDOWN_CALLS:
        return stop("cooling down after the last compaction")
    must_fit = s.estimate > budget.window - budget.max_output_tokens
    small_saving = s.estimate <= 0 or (s.estimate - expected) / s.estimate < MIN_SAVING
    if over and not must_fit and small_saving:
        return stop("compacting would save less than 10%")
    grown = s.estimate - state.tokens_after_compaction
    if over and not must_fit and grown < MIN_GROWTH * budget.tokens:
        return stop("too little new since the last compaction")
    reason = (f"context {s.estimate / budget.window:.0%} of {budget.window:,} tokens" if over
              else f"every {s.every_turns} turns")
    if not s.ask:
        return go(reason)
    if must_fit:
        return go(f"{reason}: the next request would not fit without compacting")
    level = gauge_level(s.estimate, budget.window)
    if state.put_off_level is not None and level <= state.put_off_level:
        return stop(f"put off until {asked_again(state.put_off_level)}")
    return replace(go(reason), ask=True)


def asked_again(level: int) -> str:
    """When a compaction put off at gauge ``level`` is proposed again (or, past the last
    level, done without asking)."""
    if level < len(GAUGE_LEVELS):
        return f"the context reaches {GAUGE_LEVELS[level]:.0%} of the window"
    return "the next request would not fit"


def too_big(size: int, budget: Budget, model: str) -> str | None:
    """Why a message of ``size`` tokens (with the system prompt and tools) cannot be sent at
    all, or None: alone it overflows the window, so no compaction can help."""
    room = budget.window - budget.max_output_tokens
    if size <= room:
        return None
    return (f"message too long: about {size:,} tokens, and {model}'s window is "
            f"{budget.window:,} ({room:,} usable with {budget.max_output_tokens:,} kept for the "
            "answer); it was not sent")
