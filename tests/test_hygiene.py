from rollchat.domain import Message, ToolCall
from rollchat.hygiene import (
    MISSING_RESULT,
    clean,
    drop_leading_orphans,
    fit_tool_result,
    pair_tool_calls,
    truncate_old_tool_results,
)


def _call(i: str) -> Message:
    return Message("assistant", "", tool_calls=(ToolCall(i, "read", {}),))


def _result(i: str, text: str = "result") -> Message:
    return Message("tool", text, tool_call_id=i, name="read")


def test_old_tool_results_truncated_last_two_kept() -> None:
    msgs = [Message("user", "q")]
    for i in "abcd":
        msgs += [_call(i), _result(i, i * 50)]
    out = truncate_old_tool_results(msgs, keep_last=2)
    results = [m.content for m in out if m.role == "tool"]
    assert results == ["[read: truncated, was 50 chars]"] * 2 + ["c" * 50, "d" * 50]
    assert truncate_old_tool_results(out, 2) == out  # idempotent


def test_leading_orphan_results_removed() -> None:
    msgs = [_result("x"), _result("y"), Message("user", "q")]
    assert drop_leading_orphans(msgs) == [Message("user", "q")]


def test_call_without_result_gets_error_result() -> None:
    out = pair_tool_calls([Message("user", "q"), _call("a"), Message("user", "next")])
    assert out[2] == Message("tool", MISSING_RESULT, tool_call_id="a", name="read")
    assert out[3] == Message("user", "next")


def test_result_for_unknown_call_removed() -> None:
    msgs = [Message("user", "q"), _call("a"), _result("a"), _result("zzz"),
            Message("assistant", "done"), _result("a")]
    out = pair_tool_calls(msgs)
    assert [m.tool_call_id for m in out if m.role == "tool"] == ["a"]
    assert out[-1] == Message("assistant", "done")


def test_clean_keeps_valid_history_unchanged() -> None:
    msgs = [Message("user", "q"), _call("a"), _result("a"), Message("assistant", "ok")]
    assert clean(msgs) == msgs


def test_oversized_tool_result_cut_to_fit_with_note() -> None:
    def count(s: str) -> int:
        return len(s) // 4

    text = "x" * 10_000
    cut = fit_tool_result(text, 500, count)
    assert count(cut) <= 500 and "cut to fit" in cut and "of 10000 chars" in cut
    assert fit_tool_result("small", 500, count) == "small"
    assert "no room" in fit_tool_result(text, 0, count)
