"""An agent framework's state kept after a summary block (storage/transcript/framework_state.py)
and in the turn that changed it, through the real parser, the tail reader and the rewrites:
round trips with hostile values, beside a signed block, a state too large or not JSON left out
with one line saying why, corrupt and forged lines."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rollchat.domain import FrameworkState, ProviderBlock, Summary, Text, Transcript, Turn
from rollchat.errors import TranscriptError
from rollchat.storage.transcript import (
    SUMMARY_END,
    parse,
    render,
    render_finalized,
    render_resummarized,
    summary_digest,
    tail_summary,
)
from rollchat.storage.transcript.framework_state import (
    STATE_MARK,
    STATE_MAX_CHARS,
    freeze,
    thawed,
)
from tests.storage.test_transcript import SETTINGS, T0, _header, hostile_text, json_val, turns

SUMMARY = Summary("We chose a queue.", ("picking a queue",), ("use rabbitmq",),
                  ("benchmark the zulu consumer",))


def tail_of(text: str) -> Summary | None:
    data = text.encode("utf-8")
    return tail_summary(lambda at, n: data[at:at + n], len(data))


def file_of(summary: Summary) -> str:
    return render(Transcript(_header(), (), summary))


def kept(state: dict[str, object], framework: str = "strands") -> Summary:
    frozen, problem = freeze(framework, state)
    assert problem == "" and frozen is not None
    return replace(SUMMARY, framework_state=frozen)


@SETTINGS
@given(st.dictionaries(hostile_text, json_val, min_size=1, max_size=4), hostile_text)
def test_round_trip_with_hostile_values(state: dict[str, object], word: str) -> None:
    summary = kept({**state, "said": word + "--> <!-- SESSION_SUMMARY_END -->"})
    text = file_of(summary)
    for got in (parse(text).summary, tail_of(text)):
        assert got is not None and got.framework_state == summary.framework_state
        assert got.state_problem == ""
        assert thawed(got.framework_state) == json.loads(summary.framework_state.data)
    assert text.count(SUMMARY_END) == 1  # the comment ends only where it should


def test_beside_a_signed_block_and_through_the_rewrites() -> None:
    carrying = replace(kept({"counted": 2, "todo": ["a", "b"]}), signed=ProviderBlock(
        "anthropic", "compaction", '{"type":"compaction","content":"x"}'))
    summary = replace(carrying, signed_for=summary_digest(carrying))
    text = file_of(summary)
    got = parse(text).summary
    assert got is not None and got.signed == summary.signed
    assert got.framework_state == FrameworkState("strands", '{"counted":2,"todo":["a","b"]}')
    edited = replace(got, decisions=("use kafka",))
    again = parse(render_resummarized(text, edited)).summary
    assert again is not None and again.framework_state == summary.framework_state
    later = replace(SUMMARY, framework_state=FrameworkState("strands", '{"counted":3}'))
    final = parse(render_finalized(text, later, total_queries=1, total_tokens=5)).summary
    assert final is not None and final.framework_state == later.framework_state


def test_a_file_without_it_reads_as_before() -> None:
    got = parse(file_of(SUMMARY)).summary
    assert got == SUMMARY and got is not None and got.framework_state is None
    assert STATE_MARK not in file_of(SUMMARY)


class Connection:
    """What a framework may hold in its state: an object with no JSON form."""


@pytest.mark.parametrize(("state", "why"), [
    ({"db": Connection()}, "the langgraph state was not saved for resume: it is not JSON"),
    ({"big": "x" * STATE_MAX_CHARS}, "the langgraph state was not saved for resume: "),
    ({"nan": float("nan")}, "it is not JSON"),
])
def test_a_state_not_json_or_too_large_is_left_out_with_one_line(
        state: dict[str, object], why: str) -> None:
    frozen, problem = freeze("langgraph", state)
    assert frozen is None and why in problem and "\n" not in problem
    if "big" in state:
        assert f"more than the {STATE_MAX_CHARS:,} a session file keeps" in problem


def test_an_empty_state_is_not_written() -> None:
    assert freeze("strands", {}) == (None, "")


def _line(facts: object) -> str:
    text = file_of(kept({"counted": 1}))
    start = text.index(STATE_MARK)
    head = text[start:text.index(': {"framework"', start) + 2]
    return text[:start] + head + json.dumps(facts) + " -->\n"


@pytest.mark.parametrize("facts", [
    {"framework": "strands", "state": [1, 2]},
    {"framework": "Not A Name!", "state": {}},
    {"framework": "strands"},
    [1],
])
def test_a_corrupt_line_is_left_out_and_said(facts: object) -> None:
    got = parse(_line(facts)).summary
    assert got is not None and got.framework_state is None
    assert got.state_problem.startswith("unreadable framework state")
    assert got == SUMMARY  # the readable summary stands


def test_other_text_after_the_summary_block_is_still_refused() -> None:
    text = file_of(kept({"counted": 1})) + "hello\n"
    with pytest.raises(TranscriptError, match="text after the summary block"):
        parse(text)


@SETTINGS
@given(turns(), st.dictionaries(hostile_text, json_val, min_size=1, max_size=3))
def test_a_turn_keeps_the_state_it_changed(turn: Turn, state: dict[str, object]) -> None:
    """A framework turn that changed the state keeps it (``*Framework state:*``), read back
    whatever the values hold."""
    frozen, _ = freeze("langgraph", {**state, "x": "*Framework state:* --> \n---"})
    kept = replace(turn, framework_state=frozen)
    text = render(Transcript(_header(), (kept,), None))
    [got] = parse(text).turns
    assert got == kept and got.framework_state == frozen


def test_an_unreadable_turn_state_is_a_transcript_error() -> None:
    turn = Turn("query", 1, T0, "hi", (Text("hello"),),
                framework_state=FrameworkState("strands", '{"n":1}'))
    text = render(Transcript(_header(), (turn,), None)).replace('"state":{"n":1}', '"state":7')
    with pytest.raises(TranscriptError, match="unreadable framework state"):
        parse(text)
