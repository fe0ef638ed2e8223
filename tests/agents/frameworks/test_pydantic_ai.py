"""A Pydantic AI agent behind the Runner seam, its real OpenAI model client pointed at the local
wire server: a tool turn as events (and the blocks they make), the history given back in
Pydantic AI's messages, a refused call reaching the model as ``ToolDenied``, Ctrl-C stopping
the run, and its model as a plain call (summaries)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from rollchat.domain import Message, ToolCall
from rollchat.engine.runner import RunRequest, ToolCalled, ToolReturned
from rollchat.providers.base import ChatRequest, TextDelta, UsageEvent
from tests.wire_servers import WireServer, openai_server, text, tool, tools

__all__ = ["openai_server"]


@pytest.fixture
def adapter() -> Any:
    pytest.importorskip("pydantic_ai")
    from rollchat.agents.frameworks import pydantic_ai
    return pydantic_ai


def build(server: WireServer, calls: list[tuple[int, int]]) -> Any:
    from pydantic_ai import Agent
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    model = OpenAIChatModel("gpt-4o-mini",
                            provider=OpenAIProvider(base_url=server.url, api_key="test"))
    agent: Agent[None, str] = Agent(model, instructions="You add numbers.")

    @agent.tool_plain
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        calls.append((a, b))
        return a + b

    return agent


def request(user: str, history: tuple[Message, ...] = (), refuse: str | None = None,
            asked: list[ToolCall] | None = None) -> RunRequest:
    def approve(call: ToolCall) -> str | None:
        (asked if asked is not None else []).append(call)
        return refuse

    return RunRequest("Project rule: be brief.", history, Message("user", user), approve)


def test_a_tool_turn_streams_calls_results_text_and_usage(openai_server: WireServer,
                                                           adapter: Any) -> None:
    ran: list[tuple[int, int]] = []
    asked: list[ToolCall] = []
    agent = adapter.adapt(build(openai_server, ran), "agent")
    assert (agent.framework, agent.model, agent.has_tools) == ("pydantic-ai", "gpt-4o-mini", True)
    openai_server.push(tool("add", {"a": 2, "b": 3}, input_tokens=40, cache_read=30),
                       text("It is 5."))
    events = list(agent.runner.run(request("what is 2+3?", asked=asked)))
    call = ToolCall("call_1", "add", {"a": 2, "b": 3})
    assert [e for e in events if isinstance(e, (ToolCalled, ToolReturned))] == [
        ToolCalled(call), ToolReturned(call, "5", "ok")]
    assert asked == [call] and ran == [(2, 3)]
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "It is 5."
    usages = [e.usage for e in events if isinstance(e, UsageEvent)]
    assert [(u.input_tokens, u.output_tokens) for u in usages] == [(40, 7), (11, 7)]
    first = openai_server.bodies[0]["messages"]
    assert first[0] == {"role": "system", "content": "You add numbers."}
    assert {"role": "system", "content": "Project rule: be brief."} in first
    assert first[-1] == {"role": "user", "content": "what is 2+3?"}


def test_history_is_given_back_in_pydantic_ai_messages(openai_server: WireServer,
                                                       adapter: Any) -> None:
    agent = adapter.adapt(build(openai_server, []), "agent")
    call = ToolCall("call_7", "add", {"a": 1, "b": 1})
    history = (Message("user", "Summary of our talk: we add."), Message("assistant", "Noted."),
               Message("user", "1+1?"), Message("assistant", "", (call,)),
               Message("tool", "2", tool_call_id="call_7", name="add"),
               Message("assistant", "It is 2."))
    openai_server.push(text("First."), text("Yes."))
    list(agent.runner.run(request("first")))  # the same agent's next turn: a new run (the
    list(agent.runner.run(request("and again?", history)))  # async client kept working)
    sent = [m for m in openai_server.bodies[1]["messages"] if m["role"] != "system"]
    assert sent == [
        {"role": "user", "content": "Summary of our talk: we add."},
        {"role": "assistant", "content": "Noted."},
        {"role": "user", "content": "1+1?"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_7", "type": "function",
             "function": {"name": "add", "arguments": '{"a":1,"b":1}'}}]},
        {"role": "tool", "tool_call_id": "call_7", "content": "2"},
        {"role": "assistant", "content": "It is 2."},
        {"role": "user", "content": "and again?"}]


def test_a_refused_call_reaches_the_model_as_pydantic_ai_refusal(openai_server: WireServer,
                                                                 adapter: Any) -> None:
    ran: list[tuple[int, int]] = []
    agent = adapter.adapt(build(openai_server, ran), "agent")
    openai_server.push(tools(("c1", "add", {"a": 1, "b": 2}), ("c2", "add", {"a": 3, "b": 4})),
                       text("I was not allowed."))
    refusal = "refused by the user: not now"
    events = list(agent.runner.run(request("add them", refuse=refusal)))
    assert ran == []
    returned = [e for e in events if isinstance(e, ToolReturned)]
    assert [(e.call.id, e.content, e.status) for e in returned] == [
        ("c1", refusal, "refused"), ("c2", refusal, "refused")]
    results = [m for m in openai_server.bodies[1]["messages"] if m["role"] == "tool"]
    assert [(m["tool_call_id"], m["content"]) for m in results] == [
        ("c1", refusal), ("c2", refusal)]


def test_closing_the_run_stops_the_framework(openai_server: WireServer, adapter: Any) -> None:
    """Ctrl-C: the Engine closes the iterator; the run is cancelled, the partial text kept by
    the caller, and the held stream is no longer read."""
    from tests.wire_servers import held

    agent = adapter.adapt(build(openai_server, []), "agent")
    openai_server.push(held("The first part.", "the rest never comes"))
    run: Iterator[Any] = agent.runner.run(request("tell me"))
    seen = ""
    for event in run:
        if isinstance(event, TextDelta):
            seen += event.text
            if "first part." in seen:
                break
    run.close()  # what the Engine does on Ctrl-C
    assert "The first part." in seen and "never" not in seen


def test_the_plain_call_has_no_tools(openai_server: WireServer, adapter: Any) -> None:
    agent = adapter.adapt(build(openai_server, []), "agent")
    openai_server.push(text("A summary."))
    events = list(agent.provider.stream(ChatRequest(
        "gpt-4o-mini", "Summarize.", (Message("user", "hi"), Message("assistant", "hello"),
                                      Message("user", "Write the summary.")),
        purpose="summary")))
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "A summary."
    body = openai_server.bodies[0]
    assert "tools" not in body
    assert body["messages"][0] == {"role": "system", "content": "Summarize."}
    assert body["messages"][-1] == {"role": "user", "content": "Write the summary."}
