"""The Runner seam in process: a scripted Runner (what a framework adapter yields) run by the
Engine: the turn's ordered blocks, the working context the next turn sends (as replay rebuilds
it), each call approved by the agent's gate before the framework runs it, Ctrl-C keeping the
partial answer and closing the run, a framework failure as the turn's error."""

from __future__ import annotations

from collections.abc import Iterator

from rollchat.domain import Message, Text, Thinking, ToolCall, ToolResult, ToolUse, Usage
from rollchat.engine.core import Engine, EngineSettings
from rollchat.engine.replay import turn_messages
from rollchat.engine.runner import (
    FrameworkError,
    RunEvent,
    RunRequest,
    ToolCalled,
    ToolReturned,
)
from rollchat.events import ToolFinished, ToolStarted
from rollchat.providers.base import (
    ChatRequest,
    RetryPolicy,
    StreamEvent,
    TextDelta,
    ThinkingDelta,
    UsageEvent,
)
from rollchat.tools.approval import Gate
from tests.drive import drain

CALL = ToolCall("c1", "word_count", {"text": "a b c"})


class Plain:
    name = "plain"

    def stream(self, request: ChatRequest) -> Iterator[StreamEvent]:
        yield TextDelta("ok")


class Scripted:
    """A framework that runs its tool when approved, else reports the refusal."""

    framework = "scripted"

    def __init__(self, interrupt_after: int | None = None, fail: bool = False) -> None:
        self.requests: list[RunRequest] = []
        self.closed = False
        self.interrupt_after, self.fail = interrupt_after, fail

    def run(self, request: RunRequest) -> Iterator[RunEvent]:
        self.requests.append(request)
        try:
            yield ThinkingDelta("let me count")
            yield TextDelta("Counting.")
            yield ToolCalled(CALL)
            refusal = request.approve(CALL)
            yield ToolReturned(CALL, refusal or "3 words", "refused" if refusal else "ok")
            yield UsageEvent(Usage(40, 5))
            for index, piece in enumerate(["It has ", "3 words."]):
                if index == self.interrupt_after:
                    raise KeyboardInterrupt
                if self.fail:
                    raise FrameworkError("ValueError: boom")
                yield TextDelta(piece)
            yield UsageEvent(Usage(60, 4))
        finally:
            self.closed = True


def engine(runner: Scripted, gate: Gate | None = None) -> Engine:
    return Engine(EngineSettings(Plain(), model="m", system="sys", max_output_tokens=100,
                                 temperature=None, retry=RetryPolicy(max_retries=0),
                                 gate=gate or Gate(), runner=runner))


def test_the_turn_is_recorded_in_order_and_the_context_is_what_replay_rebuilds() -> None:
    runner = Scripted()
    e = engine(runner)
    seen: list[object] = []
    answer = drain(e.chat("count a b c"), seen.append)
    turn = answer.turn
    assert turn.status == "ok" and answer.error is None
    assert turn.blocks == (Thinking("let me count"), Text("Counting."), ToolUse(CALL),
                           ToolResult("c1", "3 words", False), Text("It has 3 words."))
    assert turn.usage == Usage(100, 9)
    assert [type(x) for x in seen if isinstance(x, (ToolStarted, ToolFinished))] == [
        ToolStarted, ToolFinished]
    assert e.context.messages == turn_messages(turn)  # the next turn sends it as replayed
    assert e.context.last_prompt_tokens == 60
    again = drain(e.chat("and now?"))
    request = runner.requests[1]
    assert list(request.history) == turn_messages(turn)
    assert request.user == Message("user", "and now?") and request.query == "and now?"
    assert request.system == "sys"
    assert again.turn.status == "ok"


def test_a_call_the_gate_refuses_is_refused_to_the_framework() -> None:
    runner = Scripted()
    answer = drain(engine(runner, Gate(mode="auto", deny=("word_*",))).chat("count"))
    [result] = [b for b in answer.turn.blocks if isinstance(b, ToolResult)]
    assert result.is_error and result.content.startswith("refused: the tool word_count is denied")


def test_ctrl_c_keeps_the_partial_answer_and_closes_the_run() -> None:
    runner = Scripted(interrupt_after=1)
    e = engine(runner)
    answer = drain(e.chat("count"))
    assert answer.turn.status == "interrupted" and runner.closed
    assert answer.turn.blocks[-1] == Text("It has ")
    assert e.context.messages[-1].content == "It has \n\n[interrupted by user]"


def test_a_framework_failure_is_the_turns_error_and_the_chat_goes_on() -> None:
    runner = Scripted(fail=True)
    e = engine(runner)
    answer = drain(e.chat("count"))
    assert answer.turn.status == "error"
    assert answer.error is not None
    assert answer.error.one_line() == "agent framework error: ValueError: boom"
    assert isinstance(answer.turn.blocks[2], ToolUse)  # what happened before stays


def test_each_model_call_the_framework_reported_is_billed() -> None:
    """The session bills a turn's model calls one by one (its cost, the header's tokens
    billed): a framework's turn gives them as it reported them, as the Engine's own loop
    does."""
    answer = drain(engine(Scripted()).chat("count a b c"))
    assert answer.calls == (Usage(40, 5), Usage(60, 4))
