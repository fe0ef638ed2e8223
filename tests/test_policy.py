from rollchat.policy import (
    MAX_FAILURES,
    Budget,
    PolicyState,
    compute_budget,
    should_compact,
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


def _b() -> Budget:
    return compute_budget(10_000, 1_000, 0.8, 500)


def test_triggers_only_over_budget() -> None:
    assert not should_compact(7_000, _b(), PolicyState(), expected_after=1_000).compact
    d = should_compact(8_100, _b(), PolicyState(), expected_after=1_000)
    assert d.compact and "81%" in d.reason


def test_guards() -> None:
    b = _b()
    pending = PolicyState(tool_call_pending=True)
    assert not should_compact(9_000, b, pending, expected_after=100).compact
    failed = PolicyState(consecutive_failures=MAX_FAILURES)
    assert "failed" in should_compact(9_000, b, failed, expected_after=100).reason
    cooling = PolicyState(calls_since_compaction=0)
    assert "cooling" in should_compact(9_000, b, cooling, expected_after=100).reason
    small_saving = should_compact(9_000, b, PolicyState(), expected_after=8_500)
    assert not small_saving.compact and "10%" in small_saving.reason
    # a summary longer than what it replaces can never cause a loop
    assert not should_compact(9_000, b, PolicyState(), expected_after=9_500).compact
    assert not should_compact(9_000, b, PolicyState(), enabled=False).compact


def test_every_n_turns() -> None:
    state = PolicyState(turns_since_compaction=5)
    assert should_compact(100, _b(), state, every_turns=5, expected_after=10).compact
    assert not should_compact(100, _b(), state, every_turns=0, expected_after=10).compact


def test_prompt_that_cannot_fit_compacts_even_with_small_saving() -> None:
    b = _b()  # window 10,000, output 1,000
    d = should_compact(9_500, b, PolicyState(), expected_after=9_000)
    assert d.compact
    cooling = PolicyState(calls_since_compaction=0)
    assert not should_compact(9_500, b, cooling, expected_after=9_000).compact


def test_no_compaction_again_before_the_prompt_has_grown() -> None:
    b = _b()  # budget 8,000
    just_after = PolicyState(calls_since_compaction=3, tokens_after_compaction=7_000)
    d = should_compact(8_100, b, just_after, expected_after=1_000)
    assert not d.compact and "too little new" in d.reason
    grown = PolicyState(calls_since_compaction=3, tokens_after_compaction=6_000)
    assert should_compact(8_100, b, grown, expected_after=1_000).compact
