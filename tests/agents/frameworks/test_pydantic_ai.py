"""What is Pydantic AI's own behind the Runner seam (the rest, shared with LangGraph, is in
test_adapters.py): a refused call reaches the model as Pydantic AI's ``ToolDenied``."""

from __future__ import annotations

from rollchat.engine.runner import ToolReturned
from tests.framework_agents import adder_for, one_worker, run_request
from tests.wire_servers import WireServer, openai_server, text, tools

__all__ = ["openai_server"]
pytestmark = one_worker("pydantic-ai")


def test_a_refused_call_reaches_the_model_as_pydantic_ai_refusal(
        openai_server: WireServer) -> None:
    ran: list[tuple[int, int]] = []
    agent = adder_for("pydantic-ai").adapt(openai_server, ran)
    openai_server.push(tools(("c1", "add", {"a": 1, "b": 2}), ("c2", "add", {"a": 3, "b": 4})),
                       text("I was not allowed."))
    refusal = "refused by the user: not now"
    events = list(agent.runner.run(run_request("add them", refuse=refusal)))
    assert ran == []
    returned = [e for e in events if isinstance(e, ToolReturned)]
    assert [(e.call.id, e.content, e.status) for e in returned] == [
        ("c1", refusal, "refused"), ("c2", refusal, "refused")]
    results = [m for m in openai_server.bodies[1]["messages"] if m["role"] == "tool"]
    assert [(m["tool_call_id"], m["content"]) for m in results] == [
        ("c1", refusal), ("c2", refusal)]
