"""The agent loop's durability: every completed tool call is on disk as the turn goes (a
provisional block the finished turn replaces), and a SIGKILL during a tool call loses no
completed call; the session parses it back."""

from __future__ import annotations

import signal
import time
from collections.abc import Iterator, Mapping
from pathlib import Path

from rollchat.domain import ToolCall, Usage
from rollchat.providers.base import (
    ChatRequest,
    Done,
    StreamEvent,
    TextDelta,
    ToolCallEvent,
    ToolSpec,
    UsageEvent,
)
from rollchat.storage.transcript import parse
from rollchat.tools import Tool
from tests.drive import drain
from tests.e2e import clean_env, run_piped, start_piped
from tests.session.test_session import make
from tests.wire_servers import WireServer, openai_server, tools

__all__ = ["openai_server"]  # the fixture, imported for pytest


class TwoCalls:
    """A model that calls two tools in one reply, then answers."""

    name = "scripted"

    def __init__(self) -> None:
        self.calls = 0

    def stream(self, request: ChatRequest) -> Iterator[StreamEvent]:
        self.calls += 1
        if self.calls == 1:
            yield TextDelta("Looking.")
            yield ToolCallEvent(ToolCall("c1", "first", {}))
            yield ToolCallEvent(ToolCall("c2", "second", {}))
            yield UsageEvent(Usage(10, 5))
            yield Done("tool_use")
        else:
            yield TextDelta("Done.")
            yield UsageEvent(Usage(20, 3))
            yield Done("end")


def test_each_completed_call_is_in_the_store_before_the_next_runs() -> None:
    core, store, _ = make()
    core.engine.provider = TwoCalls()
    seen: list[str] = []

    def second(arguments: Mapping[str, object]) -> str:
        [info] = store.list_sessions().sessions  # the file exists from the first call on
        seen.append(store._text(info.session_id))
        return "second-result"

    core.engine.tools = {"first": Tool(ToolSpec("first", "", {}), lambda a: "first-result"),
                         "second": Tool(ToolSpec("second", "", {}), second)}
    drain(core.turn("go"))
    [during] = seen
    [pending] = parse(during).turns
    assert pending.status == "interrupted" and pending.user == "go"
    assert pending.assistant == "Looking."
    assert [(t.call.id, t.result) for t in pending.tools] == [("c1", "first-result")]
    [info] = store.list_sessions().sessions
    [final] = parse(store._text(info.session_id)).turns  # replaced, not appended
    assert final.status == "ok" and final.assistant == "Looking.\n\nDone."
    assert [t.result for t in final.tools] == ["first-result", "second-result"]


AGENT = '''
import time

name = "Worker"
approval = "auto"


def quick(label: str) -> str:
    """Finish at once."""
    return f"done {label}"


def hang() -> str:
    """Never finish."""
    open("hanging", "w").close()
    time.sleep(60)
    return "never"
'''


def test_sigkill_during_a_tool_call_loses_no_completed_call(openai_server: WireServer,
                                                           tmp_path: Path) -> None:
    (tmp_path / "worker.py").write_text(AGENT)
    openai_server.push(tools(("c1", "quick", {"label": "one"})),
                       tools(("c2", "quick", {"label": "two"}), ("c3", "hang", {}),
                             text="Next step."))
    env = clean_env(tmp_path / "home", OPENAI_API_KEY="test")
    proc = start_piped(tmp_path, "worker.py", "--provider", "openai", "--model", "test-model",
                       "--base-url", openai_server.url, env=env)  # (forked: its own process)
    assert proc.stdin is not None
    proc.stdin.write("do the work\n")
    proc.stdin.flush()
    deadline = time.monotonic() + 30
    while not (tmp_path / "hanging").exists():
        assert time.monotonic() < deadline and proc.poll() is None
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    assert proc.wait(timeout=10) == -signal.SIGKILL
    [session] = (tmp_path / "sessions").glob("*.md")
    [turn] = parse(session.read_text()).turns
    assert turn.status == "interrupted" and turn.user == "do the work"
    assert [(t.call.id, t.call.arguments, t.result) for t in turn.tools] == [
        ("c1", {"label": "one"}, "done one"), ("c2", {"label": "two"}, "done two")]
    assert turn.assistant == "Next step."
    # the killed session resumes: its turn, with the completed calls, is summarized
    done = run_piped(tmp_path, "exit\n", "worker.py", "--provider", "openai", "--model",
                     "test-model", "--base-url", openai_server.url, "--resume", "1", "--yes",
                     env=env)
    assert done.returncode == 0, done.stderr
    assert "Restoring context" in done.stdout
    summaries = [b for b in openai_server.bodies if "done two" in str(b["messages"])]
    assert summaries  # the summary request saw the completed calls' results


def test_ctrl_c_in_the_first_of_two_calls_records_both_and_keeps_the_pairing() -> None:
    core, store, _ = make()
    core.engine.provider = TwoCalls()
    ran: list[str] = []

    def first(arguments: Mapping[str, object]) -> str:
        raise KeyboardInterrupt  # what Ctrl-C does inside a running tool

    core.engine.tools = {"first": Tool(ToolSpec("first", "", {}), first),
                         "second": Tool(ToolSpec("second", "", {}),
                                        lambda a: ran.append("second") or "x")}
    drain(core.turn("go"))
    assert ran == []
    [info] = store.list_sessions().sessions
    [turn] = parse(store._text(info.session_id)).turns
    assert turn.status == "interrupted"
    assert [(t.call.id, t.result.split(":")[0]) for t in turn.tools] == [
        ("c1", "[interrupted by user"), ("c2", "[not run")]
    messages = core.engine.context.messages
    calls = [c.id for m in messages for c in m.tool_calls]
    results = [m.tool_call_id for m in messages if m.role == "tool"]
    assert calls == results == ["c1", "c2"]


def test_each_model_call_of_a_tool_loop_is_its_own_record() -> None:
    """A turn of two model calls (a tool round, then the answer) leaves two call records,
    each with that call's usage and the model that answered (issue 35.3), not one of their
    sum; the turn's usage is still their sum."""
    core, _, _ = make()
    core.engine.provider = TwoCalls()
    core.engine.tools = {"first": Tool(ToolSpec("first", "", {}), lambda a: "1"),
                         "second": Tool(ToolSpec("second", "", {}), lambda a: "2")}
    drain(core.turn("go"))
    calls = [c for c in core.state.calls if c.purpose == "turn"]
    assert [c.usage for c in calls] == [Usage(10, 5), Usage(20, 3)]
    assert {c.model for c in calls} == {core.current.name}
    assert core.state.turns[-1].usage == Usage(30, 8) == core.state.usage
