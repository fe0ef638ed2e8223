"""What MCP servers may put in every request is bounded (issue 24 item 5), and their odd tools
are handled: a long description is cut, a huge schema or a task-only tool is left out with one
line, the specs' share of the window is capped with one line naming the server, names that
would collide are made unique with one line and rules match the server's own names; resource
links can be read; progress reports reach the chat's thread."""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Iterator

import pytest

from rollchat.domain import ToolCall
from rollchat.events import Event, Notice
from rollchat.tools.approval import Gate
from rollchat.tools.mcp import McpServers
from rollchat.tools.mcp_convert import MAX_DESCRIPTION, Names, needs_task
from tests.drive import drain
from tests.mcp_helpers import engine_with, running, servers, start, stdio

__all__ = ["servers"]  # the fixture, imported for pytest

SPACE = "mcp__odd__a_b_" + hashlib.sha256(b"mcp__odd__a b").hexdigest()[:8]
Shown = list[tuple[str, str, str]]  # (tool, its progress report, the thread that showed it)


SHARED = pytest.mark.xdist_group("mcp-bounds-odd")  # its tests: one worker


@pytest.fixture(scope="module")
def odd() -> Iterator[tuple[McpServers, Shown]]:
    """One ``--odd`` test server for the tests that only call it (each start is seconds of
    CPU), its progress reports kept; stopped when the module ends, even after a failure."""
    shown: Shown = []
    source = McpServers([stdio("odd", "--odd")], {}, on_progress=lambda tool, text: shown.append(
        (tool, text, threading.current_thread().name)))
    with running(source):
        yield source, shown


def test_odd_tools_are_bounded_or_left_out_each_with_one_line(servers) -> None:
    source = start(servers, stdio("odd", "--odd", "--description-chars", "1000000"))
    engine = engine_with(source)
    events: list[Event] = []
    drain(engine.chat("hello"), events.append)
    lines = [e.text for e in events if isinstance(e, Notice) and e.level == "warning"]
    assert lines == [
        "MCP server 'odd': 1 tool left out (huge_schema): its input schema is over 16 KiB",
        f"MCP server 'odd': tool 'a b' is offered as {SPACE} (its name would collide with "
        "another tool's)"]
    assert len(engine.tools["mcp__odd__long_doc"].spec.description) == MAX_DESCRIPTION
    request = engine.request([])
    assert sum(len(spec.description) for spec in request.tools) < 20_000  # not 1 MB
    events.clear()
    drain(engine.chat("hello again"), events.append)
    assert not [e for e in events if isinstance(e, Notice)]  # told once


@SHARED
def test_rules_match_the_server_s_own_names_not_the_made_unique_ones(odd) -> None:
    tools, _ = odd[0].collect(wait=True)
    underscore, space = tools["mcp__odd__a_b"], tools[SPACE]
    assert underscore.run({}) == "the tool with an underscore"
    assert space.run({}) == "the tool with a space"
    gate = Gate(mode="never", allow=("mcp__odd__a_b",), deny=("mcp__odd__a b",))
    call = ToolCall("1", "x", {})
    assert gate.check(call, underscore) is None
    assert gate.check(call, space) == f"refused: the tool {SPACE} is denied by the agent's rules"


def test_names_stay_unique_across_servers_and_restarts() -> None:
    names = Names()
    first = names.assign("a.b", ["x"])
    second = names.assign("a_b", ["x"])
    assert list(first) == ["mcp__a_b__x"] and list(second) != list(first)
    assert names.assign("a.b", ["x"]) == first  # again after a restart: the same name


def test_the_specs_share_of_the_window_is_capped_with_one_line(servers) -> None:
    source = start(servers, stdio("big"), stdio("small"), tool_tokens=200)
    engine = engine_with(source)
    events: list[Event] = []
    drain(engine.chat("hello"), events.append)
    offered = [spec.name for spec in engine.request([]).tools]
    assert 0 < len(offered) < 10
    lines = [e.text for e in events if isinstance(e, Notice) and e.level == "warning"]
    assert lines and all("the tools' specs would take more than 200 tokens" in line
                         for line in lines)
    assert lines[-1].startswith("MCP server 'small': 5 tools left out (add, cwd, env, fail, "
                                "sleep)")
    listing = {e.name: e.state for e in source.entries(engine.tools)}
    assert listing["mcp__small__add"].startswith("left out: the tools' specs")


def test_a_task_only_tool_is_recognized_by_the_sdk_s_own_type() -> None:
    from mcp.types import Tool, ToolExecution

    schema = {"type": "object"}
    assert needs_task(Tool(name="t", input_schema=schema,
                           execution=ToolExecution(task_support="required")))
    assert not needs_task(Tool(name="t", input_schema=schema,
                               execution=ToolExecution(task_support="optional")))
    assert not needs_task(Tool(name="t", input_schema=schema))


@SHARED
def test_a_resource_link_can_be_read_through_the_read_only_reader(servers, odd) -> None:
    engine = engine_with(odd[0])
    turn = drain(engine.chat("use link")).turn
    assert turn.tools[0].result == "[resource: note://hello (hello)]"
    reader = engine.tools["mcp__odd__read_resource"]
    assert reader.read_only and "resource link" in reader.spec.description
    turn = drain(engine.chat('use read_resource {"uri": "note://hello"}')).turn
    assert turn.tools[0].result == "the note says hello"
    plain, _ = start(servers, stdio("plain")).collect(wait=True)
    assert "mcp__plain__read_resource" not in plain  # a server with no resources: none


@SHARED
def test_progress_reports_are_shown_from_the_chat_s_thread(odd) -> None:
    source, shown = odd
    shown.clear()
    tools, _ = source.collect(wait=True)
    assert tools["mcp__odd__steps"].run({}) == "done"
    assert shown and shown[0][0] == "steps"
    assert {text for _, text, _ in shown} <= {"step 1 (1/3)", "step 2 (2/3)", "step 3 (3/3)"}
    assert {thread for _, _, thread in shown} == {threading.current_thread().name}


def test_a_request_too_large_because_of_the_tools_says_so(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from dataclasses import replace

    from rollchat.config.settings import AgentConfig, Config, ModelConfig, SessionConfig
    from rollchat.engine.core import EngineSettings
    from rollchat.events import TurnFinished
    from rollchat.models.tokens import context_window
    from rollchat.providers.base import RetryPolicy, ToolSpec
    from rollchat.providers.offline import OfflineProvider
    from rollchat.session.core import Session
    from rollchat.storage.store import SessionStore
    from rollchat.tools import Tool

    model, window = "offline", 2048
    wide = Tool(ToolSpec("wide", "word " * 3000, {"type": "object"}), lambda _: "")
    session = replace(SessionConfig(), dir=tmp_path / "sessions")
    agent = AgentConfig(key="a", name="A", provider="offline", model=model,
                        system_prompt="sys", max_output_tokens=300)
    config = Config(agents={"a": agent}, default_agent="a",
                    models={model: ModelConfig(window)}, session=session)
    store = SessionStore(session.dir)
    store.ensure()
    provider = OfflineProvider()
    settings = EngineSettings(provider, model=model, system="sys", max_output_tokens=300,
                              temperature=None, retry=RetryPolicy(0, 0.0, 0.0), tools=(wide,))
    chat = Session(config=config, agent=agent, engine_settings=settings,
                   summary_provider=provider, summary_model=model, provider_name="offline",
                   store=store, confirm=lambda q: False,
                   context_window=context_window(model, window))
    events: list[Event] = []
    for event in chat.turn("a short question"):
        events.append(event)
    [done] = [e for e in events if isinstance(e, TurnFinished)]
    assert done.turn.status == "unanswered" and done.turn.error is not None
    assert done.turn.error.startswith("request too large because of the tools (their specs "
                                      "take about 3,")
    assert done.hint is not None and done.hint.startswith("Offer fewer tools")
    assert "Shorten" not in done.hint
