import json
import re
from collections.abc import Callable

from rollchat.domain import Message, ToolCall
from rollchat.engine.hygiene import (
    MISSING_RESULT,
    cut_result,
    drop_leading_orphans,
    fit_tool_result,
    missing_results,
    pair_tool_calls,
    repair,
    shorten,
)
from rollchat.models.tokens import TokenCounter


def _call(i: str) -> Message:
    return Message("assistant", "", tool_calls=(ToolCall(i, "read", {}),))


def _result(i: str, text: str = "result") -> Message:
    return Message("tool", text, tool_call_id=i, name="read")


def test_a_shortened_result_says_how_to_read_it_whole_and_is_shortened_once() -> None:
    result = _result("call_7", "x" * 5000)
    short = shorten(result)
    assert short.content == ('[read result shortened to save context: 5,000 chars; the whole '
                             'result: session_archive_read {"tool_call": "call_7"}]')
    assert shorten(short) == short  # once: the same bytes in every later request
    assert short.tool_call_id == "call_7" and short.name == "read"
    assert shorten(Message("user", "x" * 5000)).content == "x" * 5000


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


def test_repair_keeps_valid_history_unchanged() -> None:
    msgs = [Message("user", "q"), _call("a"), _result("a"), Message("assistant", "ok")]
    assert repair(msgs) == msgs


def test_missing_results_of_the_last_calls() -> None:
    two = Message("assistant", "", tool_calls=(ToolCall("a", "read", {}),
                                               ToolCall("b", "grep", {})))
    assert missing_results([Message("user", "q"), two, _result("a")]) == [
        Message("tool", MISSING_RESULT, tool_call_id="b", name="grep")]
    assert missing_results([Message("user", "q"), two, _result("a"), _result("b")]) == []
    assert missing_results([Message("user", "q")]) == []


COUNTER = TokenCounter("test-model")


def build_log(lines: int) -> str:
    passed = [f"tests/test_case_{n}.py::test_{n} PASSED" for n in range(lines)]
    return "\n".join(["$ make test", *passed, "FAILED tests/test_refunds.py::test_partial",
                      "E   assert 1000 == 1001", "=== 1 failed, 2 passed ==="])


def fit(text: str, max_tokens: int, count: Callable[[str], int],
        call_id: str | None = None) -> str:
    """The result as sent: ``fit_tool_result``'s choice applied by ``cut_result``."""
    keep = fit_tool_result(text, max_tokens, count, call_id)
    return text if keep is None else cut_result(text, keep, call_id)


def test_an_oversized_result_keeps_its_head_and_its_tail_around_a_marker() -> None:
    log = build_log(20_000)
    cut = fit(log, 500, COUNTER.count_text, "call_9")
    assert COUNTER.count_text(cut) <= 500
    assert cut.startswith("$ make test\ntests/test_case_0.py::test_0 PASSED\n")
    assert cut.endswith("E   assert 1000 == 1001\n=== 1 failed, 2 passed ===")  # the failure
    [marker] = re.findall(r"\n\[\.\.\. .* reads on from here \.\.\.\]\n", cut)
    head, tail = cut.split(marker)
    removed = len(log) - len(head) - len(tail)
    assert f"{removed:,} of {len(log):,} chars" in marker
    assert f"({log[len(head):len(log) - len(tail)].count(chr(10)) + 1:,} lines)" in marker
    hint = json.loads(marker.split("session_archive_read ")[1].split(" reads on")[0])
    assert hint == {"tool_call": "call_9", "offset": len(head)}
    assert log[:len(head)] == head and log.endswith(tail)  # nothing rewritten, only cut
    assert head.endswith("\n") and tail.startswith("tests/")  # cut at line breaks


def test_a_result_that_fits_is_unchanged_and_no_room_says_where_it_is() -> None:
    assert fit("small", 500, COUNTER.count_text) == "small"
    text = "x" * 10_000
    none = fit(text, 0, COUNTER.count_text, "c1")
    assert "no room" in none and '{"tool_call": "c1", "offset": 0}' in none
    dense = "€😀" * 3000  # several tokens per character: still within the limit
    assert COUNTER.count_text(fit(dense, 300, COUNTER.count_text)) <= 300


def test_a_result_too_long_to_fit_at_any_token_length_is_not_counted_whole() -> None:
    """No token covers more than LONGEST_TOKEN_CHARS characters, so a result longer than that
    per token of room is cut without counting it whole (tiktoken took 4 s of CPU on 35 MB
    only to learn it did not fit); the cut is the one counting it whole gives."""
    from rollchat.models.tokens import LONGEST_TOKEN_CHARS

    log = build_log(8_000)
    room = len(log) // LONGEST_TOKEN_CHARS - 1
    counted: list[int] = []

    def spy(text: str) -> int:
        counted.append(len(text))
        return COUNTER.count_text(text)

    keep = fit_tool_result(log, room, spy, "c1")
    assert keep is not None and max(counted) < len(log)
    assert COUNTER.count_text(cut_result(log, keep, "c1")) <= room
    assert COUNTER.count_text(cut_result(log, keep + 1, "c1")) > room  # the most that fits
    # a result within the bound is still counted whole, and sent whole when it fits
    assert fit_tool_result("word " * 100, 200, spy) is None and counted[-1] == 500
