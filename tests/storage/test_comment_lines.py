"""The two comment lines after a summary block (the signed compaction block's and the framework
state's) and a turn's ``*Framework state:*`` line are the bytes rollchat wrote before they shared
storage/transcript/comment_line.py: the expected lines below were written by main at ac2d6c1 from
these same inputs, and are read back (whole file and tail) to the same summary and turn."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import pytest

from rollchat.domain import FrameworkState, ProviderBlock, Summary, Text, Transcript, Turn
from rollchat.storage.transcript import (
    SUMMARY_END,
    parse,
    render,
    render_summary_block,
    tail_summary,
)
from rollchat.storage.transcript.framework_state import freeze
from tests.storage.test_transcript import T0, _header

SUMMARY = Summary("We chose a queue.", ("picking a queue",), ("use rabbitmq",),
                  ("benchmark the zulu consumer",))
DIGEST = "sha256:" + "5e" * 32
STATE = {"said": "café --> <!-- SESSION_SUMMARY_END --> ✓", "n": [1, 2.5, None, True],
         "nested": {"k": "\u2028"}}
# the providers' own form (compact JSON): kept as "block"; any other text: kept as "data"
CANONICAL = '{"type":"compaction","signature":"abab","content":"Résumé <b>x</b> -->"}'
SPACED = '{"type": "compaction", "content": "spaced"}'

SIGNED_OPEN = ("<!-- rollchat: signed compaction block of the provider, sent back first in "
               "place of the summary above while that is unchanged: ")
STATE_OPEN = ("<!-- rollchat: framework state besides the conversation, given back to the agent "
              "framework at resume: ")
STATE_JSON = ('{"framework":"strands","state":{"said":"caf\\u00e9 --\\u003e \\u003c!-- '
              'SESSION_SUMMARY_END --\\u003e \\u2713","n":[1,2.5,null,true],'
              '"nested":{"k":"\\u2028"}}}')
SIGNED_CANONICAL = (SIGNED_OPEN + '{"provider":"anthropic","type":"compaction","for":"' + DIGEST
                    + '","block":{"type":"compaction","signature":"abab","content":'
                    '"R\\u00e9sum\\u00e9 \\u003cb\\u003ex\\u003c/b\\u003e --\\u003e"}} -->')
SIGNED_SPACED = (SIGNED_OPEN + '{"provider":"anthropic","type":"compaction","for":"' + DIGEST
                 + '","data":"{\\"type\\": \\"compaction\\", \\"content\\": \\"spaced\\"}"} -->')
STATE_LINE = STATE_OPEN + STATE_JSON + " -->"
TURN_LINE = "*Framework state:* " + STATE_JSON.replace("\\", "\\\\")


def _state() -> FrameworkState:
    frozen, problem = freeze("strands", STATE)
    assert problem == "" and frozen is not None
    return frozen


def _signed(summary: Summary, data: str) -> Summary:
    return replace(summary, signed=ProviderBlock("anthropic", "compaction", data),
                   signed_for=DIGEST)


def _tail_of(text: str) -> Summary | None:
    data = text.encode("utf-8")
    return tail_summary(lambda at, n: data[at:at + n], len(data))


CASES = [
    pytest.param(lambda: _signed(replace(SUMMARY, framework_state=_state()), CANONICAL),
                 [SIGNED_CANONICAL, STATE_LINE], id="block-and-state"),
    pytest.param(lambda: _signed(SUMMARY, SPACED), [SIGNED_SPACED], id="data"),
    pytest.param(lambda: replace(SUMMARY, framework_state=_state()), [STATE_LINE], id="state"),
]


@pytest.mark.parametrize(("make", "lines"), CASES)
def test_written_as_before(make: Callable[[], Summary], lines: list[str]) -> None:
    summary = make()
    turn = Turn("query", 1, T0, "count", (Text("Counted."),), framework_state=_state())
    text = render(Transcript(_header(), (turn,), summary))
    assert text.endswith(render_summary_block(summary) + "".join(x + "\n" for x in lines))
    assert text.split("\n").count(TURN_LINE) == 1


@pytest.mark.parametrize(("make", "lines"), CASES)
def test_lines_written_before_read_back(make: Callable[[], Summary], lines: list[str]) -> None:
    """A file whose comment lines are main's bytes (not today's renderer's) reads back whole
    and from its tail to the summary and the turn's state they were written from."""
    summary = make()
    turn = Turn("query", 1, T0, "count", (Text("Counted."),), framework_state=_state())
    head = render(Transcript(_header(), (turn,)))
    text = head + render_summary_block(summary) + "".join(x + "\n" for x in lines)
    assert text.count(SUMMARY_END) == 1 and TURN_LINE in text.split("\n")
    got = parse(text)
    assert got.summary == summary and got.turns[0].framework_state == _state()
    assert got.summary.signed_problem == "" and got.summary.state_problem == ""
    assert _tail_of(text) == summary
