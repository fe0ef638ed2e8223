"""compaction policy: the budget formula and ``plan()``, every decision as a table of cases."""

from __future__ import annotations

from dataclasses import replace

import pytest

from rollchat.compaction.policy import (
    MAX_FAILURES,
    Budget,
    Plan,
    PolicyState,
    Situation,
    compute_budget,
    kept_turns,
    plan,
    too_big,
)


def test_budget_formula() -> None:
    b = compute_budget(200_000, 8_192, 0.8, 1_000)
    assert b.tokens == min(160_000, 200_000 - 8_192 - 1_000) and b.warning is None
    b = compute_budget(16_000, 4_096, 0.8, 1_000)
    assert b.tokens == min(12_800, 16_000 - 4_096 - 800)


def test_small_window_clamps_output_with_warning() -> None:
    b = compute_budget(4_000, 4_096, 0.8, 1_000)
    assert b.warning is not None and "4,096" in b.warning
    assert b.max_output_tokens == 1_000 and b.tokens > 0
    assert b.tokens == min(3_200, 4_000 - 1_000 - 200)


B: Budget = compute_budget(10_000, 1_000, 0.8, 500)  # budget 8,000; 9,000 can be sent
FRESH = PolicyState()
# a situation over budget whose compaction would leave 1,000 + 300 + kept turns
OVER = Situation(estimate=8_100, budget=B, state=FRESH, fixed_after=1_000, pending=300,
                 tail=(400, 500), keep_turns=2)

CASES: list[tuple[str, Situation, bool, str]] = [
    ("within budget", replace(OVER, estimate=7_000), False, "within budget"),
    ("over budget", OVER, True, "81% of 10,000"),
    ("off", replace(OVER, enabled=False), False, "off"),
    ("nothing to compact", replace(OVER, has_turns=False), False, "nothing to compact"),
    ("tool call waiting", replace(OVER, state=PolicyState(tool_call_pending=True)), False,
     "waiting for its result"),
    ("failures in a row", replace(OVER, state=PolicyState(consecutive_failures=MAX_FAILURES)),
     False, "failed in a row"),
    ("cooling down", replace(OVER, state=PolicyState(calls_since_compaction=0)), False,
     "cooling"),
    ("small saving", replace(OVER, fixed_after=7_000, tail=()), False, "less than 10%"),
    # a summary longer than what it replaces can never cause a loop
    ("summary longer than the history", replace(OVER, estimate=9_000, fixed_after=9_500),
     False, "less than 10%"),
    ("cannot be sent: compacts even with a small saving",
     replace(OVER, estimate=9_500, fixed_after=8_600, tail=()), True, "95%"),
    ("cannot be sent, but cooling down",
     replace(OVER, estimate=9_500, state=PolicyState(calls_since_compaction=0)), False,
     "cooling"),
    ("too little new since the last one",
     replace(OVER, state=PolicyState(calls_since_compaction=3, tokens_after_compaction=7_000)),
     False, "too little new"),
    ("grown enough since the last one",
     replace(OVER, state=PolicyState(calls_since_compaction=3, tokens_after_compaction=6_000)),
     True, "81%"),
    ("every N turns", replace(OVER, estimate=100, every_turns=5,
                              state=PolicyState(turns_since_compaction=5)), True,
     "every 5 turns"),
    ("every N turns, not yet", replace(OVER, estimate=100, every_turns=5,
                                       state=PolicyState(turns_since_compaction=4)), False,
     "within budget"),
    ("the provider refused the context", replace(OVER, estimate=10, refused=True), True,
     "context is too long"),
    ("refused, but automatic compaction is off",
     replace(OVER, refused=True, enabled=False), False, "off"),
]


@pytest.mark.parametrize(("situation", "compact", "reason"),
                         [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_plan(situation: Situation, compact: bool, reason: str) -> None:
    decided = plan(situation)
    assert decided.compact is compact, decided
    assert reason in decided.reason


def test_the_plan_says_what_is_kept_and_how_big_the_summary_may_be() -> None:
    decided = plan(OVER)
    assert decided == Plan(True, decided.reason, keep_turns=2, summary_tokens=B.tokens // 3,
                           expected_after=1_000 + 300 + 400 + 500)


@pytest.mark.parametrize(("tail", "keep", "base", "kept"), [
    ((400, 500), 2, 1_300, 2),  # 2,200 of a 4,000 half-budget
    ((400, 3_000), 2, 1_300, 0),  # the last turn alone overflows half the budget
    ((3_000, 400), 2, 1_300, 1),  # the older one would: keep only the newest
    ((100, 100, 100), 2, 0, 2),  # never more than asked
    ((100,), 2, 0, 1),  # nor more than there are
    ((100, 100), 0, 0, 0),
])
def test_kept_turns_leave_half_the_budget_free(tail: tuple[int, ...], keep: int, base: int,
                                               kept: int) -> None:
    assert kept_turns(tail, keep, base, B) == kept


@pytest.mark.parametrize(("estimate", "presummarize"), [
    (5_500, False), (5_600, True), (7_999, True)])
def test_background_summaries_start_at_70_percent(estimate: int, presummarize: bool) -> None:
    decided = plan(replace(OVER, estimate=estimate))
    assert not decided.compact and decided.presummarize is presummarize
    assert not plan(replace(OVER, estimate=estimate, enabled=False)).presummarize


def test_a_message_too_big_for_the_window() -> None:
    assert too_big(9_000, B, "m") is None
    message = too_big(9_001, B, "m")
    assert message is not None and "9,001 tokens" in message and "not sent" in message
