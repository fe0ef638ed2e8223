"""A LangChain ``create_agent`` graph behind the Runner seam, its real ``ChatOpenAI`` pointed at
the local wire server: a tool turn as events, the history given back as LangChain messages, a
refused call (LangGraph's human-in-the-loop breakpoint) reaching the model as a ToolMessage,
Ctrl-C stopping the run, and the graph's model as a plain call (summaries)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from rollchat.domain import Message, ToolCall
from rollchat.engine.runner import RunRequest, ToolCalled, ToolReturned
from rollchat.providers.base import ChatRequest, TextDelta, UsageEvent
from tests.wire_servers import WireServer, held, openai_server, text, tool, tools

__all__ = ["openai_server"]


@pytest.fixture
def adapter() -> Any:
    pytest.importorskip("langchain.agents")
    from rollchat.agents.frameworks import langgraph
    return langgraph


def build(server: WireServer, ran: list[tuple[int, int]]) -> Any:
    from langchain.agents import create_agent
    from langchain_core.tools import tool as as_tool
    from langchain_openai import ChatOpenAI

    @as_tool
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        ran.append((a, b))
        return a + b

    model = ChatOpenAI(model="gpt-4o-mini", base_url=server.url, api_key="test",
                       stream_usage=True)
    return create_agent(model, tools=[add], system_prompt="You add numbers.")


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
    assert (agent.framework, agent.model, agent.has_tools) == ("langgraph", "gpt-4o-mini", True)
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
    assert first[:2] == [{"role": "system", "content": "You add numbers."},
                         {"role": "system", "content": "Project rule: be brief."}]
    assert first[-1] == {"role": "user", "content": "what is 2+3?"}


def test_history_is_given_back_in_langchain_messages(openai_server: WireServer,
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
            {"type": "function", "id": "call_7",
             "function": {"name": "add", "arguments": '{"a": 1, "b": 1}'}}]},
        {"role": "tool", "tool_call_id": "call_7", "content": "2"},
        {"role": "assistant", "content": "It is 2."},
        {"role": "user", "content": "and again?"}]


def test_a_refused_call_reaches_the_model_as_a_tool_message(openai_server: WireServer,
                                                            adapter: Any) -> None:
    ran: list[tuple[int, int]] = []
    agent = adapter.adapt(build(openai_server, ran), "agent")
    openai_server.push(tools(("c1", "add", {"a": 1, "b": 2}), ("c2", "add", {"a": 3, "b": 4})),
                       text("One was refused."))
    refused = {"c2"}

    def approve(call: ToolCall) -> str | None:
        return "refused by the user: not now" if call.id in refused else None

    events = list(agent.runner.run(RunRequest("", (), Message("user", "add"), approve)))
    assert ran == [(1, 2)]
    returned = [(e.call.id, e.content, e.status) for e in events if isinstance(e, ToolReturned)]
    assert sorted(returned) == [("c1", "3", "ok"),
                                ("c2", "refused by the user: not now", "refused")]
    results = [m for m in openai_server.bodies[1]["messages"] if m["role"] == "tool"]
    assert sorted((m["tool_call_id"], m["content"]) for m in results) == [
        ("c1", "3"), ("c2", "refused by the user: not now")]
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "One was refused."


def test_closing_the_run_stops_the_framework(openai_server: WireServer, adapter: Any) -> None:
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


def test_the_plain_call_is_the_graphs_model_without_tools(openai_server: WireServer,
                                                          adapter: Any) -> None:
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


def test_graph_state_besides_messages_is_kept_from_turn_to_turn(openai_server: WireServer,
                                                                 adapter: Any) -> None:
    """A graph's own state keys (here ``turns``) as the last turn left them start the next
    turn's run; rollchat's history stays the truth for ``messages``."""
    from typing import Annotated, TypedDict

    from langchain_openai import ChatOpenAI
    from langgraph.graph import END, START, StateGraph
    from langgraph.graph.message import add_messages

    # (made by a call: this module's annotations are strings LangGraph cannot resolve here)
    State = TypedDict("State", {  # noqa: UP013
        "messages": Annotated[list[Any], add_messages], "turns": int},
        total=False)

    seen: list[int] = []
    model = ChatOpenAI(model="gpt-4o-mini", base_url=openai_server.url, api_key="test")

    async def call(state: State) -> dict[str, Any]:
        seen.append(state.get("turns", 0))
        return {"messages": [await model.ainvoke(state["messages"])],
                "turns": state.get("turns", 0) + 1}

    graph = StateGraph(State)
    graph.add_node("model", call)
    graph.add_edge(START, "model")
    graph.add_edge("model", END)
    agent = adapter.adapt(graph.compile(), "agent")
    openai_server.push(text("One."), text("Two."))
    list(agent.runner.run(request("first")))
    history = (Message("user", "first"), Message("assistant", "One."))
    list(agent.runner.run(request("second", history)))
    assert seen == [0, 1]
    assert [m["content"] for m in openai_server.bodies[1]["messages"]] == [
        "Project rule: be brief.", "first", "One.", "second"]
