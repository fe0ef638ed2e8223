"""When to compact automatically: the budget and the guards, as data and pure predicates.

No clock, no environment: the caller passes the estimate and the state.
"""

from __future__ import annotations

from dataclasses import dataclass

MIN_SAVING = 0.10  # skip a compaction that would save less than 10% of the prompt
MAX_FAILURES = 3  # after this many failed compactions in a row, warn and carry on
COOLDOWN_CALLS = 1  # model calls after a compaction before the next one may start
MIN_GROWTH = 0.25  # share of the budget the prompt must grow by before compacting again


@dataclass(frozen=True)
class Budget:
    """The prompt budget for one model. ``warning`` says when max_output_tokens was clamped."""

    window: int
    max_output_tokens: int
    safety_margin: int
    tokens: int
    warning: str | None = None


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


@dataclass(frozen=True)
class Decision:
    compact: bool
    reason: str


def should_compact(
    estimate: int,
    budget: Budget,
    state: PolicyState,
    *,
    enabled: bool = True,
    every_turns: int = 0,
    expected_after: int = 0,
) -> Decision:
    """Whether to compact before the next model call, and why (or why not).

    ``expected_after`` is the estimated prompt size right after compacting (system prompt,
    summary, kept tail); a compaction that would not shrink the prompt by MIN_SAVING is
    skipped, so it can never loop even if the summary comes back longer than what it replaces
    (unless the prompt could not be sent at all: then it is tried, once per cooldown). Nor
    does it compact again before the prompt has grown by MIN_GROWTH of the budget since the
    last compaction, so a large kept tail cannot make it compact at every turn. The periodic
    trigger (``every_turns``) is not subject to these: its counter resets.
    """
    if not enabled:
        return Decision(False, "automatic compaction is off")
    if state.tool_call_pending:
        return Decision(False, "a tool call is waiting for its result")
    if state.consecutive_failures >= MAX_FAILURES:
        return Decision(False, f"{MAX_FAILURES} compactions failed in a row")
    over = estimate > budget.tokens
    periodic = every_turns > 0 and state.turns_since_compaction >= every_turns
    if not (over or periodic):
        return Decision(False, "within budget")
    if state.calls_since_compaction < COOLDOWN_CALLS:
        return Decision(False, "cooling down after the last compaction")
    must_fit = estimate > budget.window - budget.max_output_tokens
    small_saving = estimate <= 0 or (estimate - expected_after) / estimate < MIN_SAVING
    if over and not must_fit and small_saving:
        return Decision(False, "compacting would save less than 10%")
    grown = estimate - state.tokens_after_compaction
    if over and not must_fit and grown < MIN_GROWTH * budget.tokens:
        return Decision(False, "too little new since the last compaction")
    if over:
        return Decision(True, f"context {estimate / budget.window:.0%} of "
                              f"{budget.window:,} tokens")
    return Decision(True, f"every {every_turns} turns")
