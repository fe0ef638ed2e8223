"""What is LangGraph's own behind the Runner seam (the rest, shared with Pydantic AI, is in
test_adapters.py): a call refused at LangGraph's human-in-the-loop breakpoint reaching the model
as a ToolMessage while the other call runs, and the graph's state besides ``messages`` kept
from turn to turn."""

from __future__ import annotations

from typing import Any

from rollchat.domain import Message, ToolCall
from rollchat.engine.runner import RunRequest, ToolReturned
from rollchat.providers.base import TextDelta
from tests.framework_agents import adder_for, one_worker, run_request
from tests.wire_servers import WireServer, openai_server, text, tools

__all__ = ["openai_server"]
pytestmark = one_worker("langgraph")


def test_a_refused_call_reaches_the_model_as_a_tool_message(openai_server: WireServer,
                                                            ) -> None:
    ran: list[tuple[int, int]] = []
    agent = adder_for("langgraph").adapt(openai_server, ran)
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


def test_graph_state_besides_messages_is_kept_from_turn_to_turn(openai_server: WireServer,
                                                                 ) -> None:
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
    agent = adder_for("langgraph").adapter.adapt(graph.compile(), "agent")
    openai_server.push(text("One."), text("Two."))
    list(agent.runner.run(run_request("first")))
    history = (Message("user", "first"), Message("assistant", "One."))
    list(agent.runner.run(run_request("second", history)))
    assert seen == [0, 1]
    assert [m["content"] for m in openai_server.bodies[1]["messages"]] == [
        "Project rule: be brief.", "first", "One.", "second"]
