"""The Pydantic AI agent and the LangChain ``create_agent`` graph behind the Runner seam, each
with its real OpenAI client at the local wire server (tests/framework_agents.py ``adder``): a
tool turn as events, the history given back in the framework's own messages; and for those
and Google ADK's LlmAgent (``any_adder``, where installed): Ctrl-C stopping the run, and the
agent's model as a plain call (summaries). What differs per framework is in
test_pydantic_ai.py, test_langgraph.py and test_adk.py."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from rollchat.domain import Message, ToolCall
from rollchat.engine.runner import ToolCalled, ToolReturned
from rollchat.providers.base import ChatRequest, TextDelta, UsageEvent
from tests.framework_agents import Adder, adder, any_adder, run_request
from tests.wire_servers import WireServer, held, openai_server, text, tool

__all__ = ["adder", "any_adder", "openai_server"]


def test_a_tool_turn_streams_calls_results_text_and_usage(openai_server: WireServer,
                                                           adder: Adder) -> None:
    ran: list[tuple[int, int]] = []
    asked: list[ToolCall] = []
    agent = adder.adapt(openai_server, ran)
    assert (agent.framework, agent.model, agent.has_tools) == (adder.framework, "gpt-4o-mini",
                                                               True)
    openai_server.push(tool("add", {"a": 2, "b": 3}, input_tokens=40, cache_read=30),
                       text("It is 5."))
    events = list(agent.runner.run(run_request("what is 2+3?", asked=asked)))
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


def test_history_is_given_back_in_the_frameworks_messages(openai_server: WireServer,
                                                          adder: Adder) -> None:
    agent = adder.adapt(openai_server)
    call = ToolCall("call_7", "add", {"a": 1, "b": 1})
    history = (Message("user", "Summary of our talk: we add."), Message("assistant", "Noted."),
               Message("user", "1+1?"), Message("assistant", "", (call,)),
               Message("tool", "2", tool_call_id="call_7", name="add"),
               Message("assistant", "It is 2."))
    openai_server.push(text("First."), text("Yes."))
    list(agent.runner.run(run_request("first")))  # the same agent's next turn: a new run
    list(agent.runner.run(run_request("and again?", history)))  # (its async client works)
    sent = [m for m in openai_server.bodies[1]["messages"] if m["role"] != "system"]
    [asked] = sent[3]["tool_calls"]
    assert (asked["id"], asked["type"], asked["function"]["name"]) == (
        "call_7", "function", "add")
    assert json.loads(asked["function"]["arguments"]) == {"a": 1, "b": 1}
    assert sent == [
        {"role": "user", "content": "Summary of our talk: we add."},
        {"role": "assistant", "content": "Noted."},
        {"role": "user", "content": "1+1?"},
        {"role": "assistant", "content": None, "tool_calls": [asked]},
        {"role": "tool", "tool_call_id": "call_7", "content": "2"},
        {"role": "assistant", "content": "It is 2."},
        {"role": "user", "content": "and again?"}]


def test_closing_the_run_stops_the_framework(openai_server: WireServer,
                                             any_adder: Adder) -> None:
    """Ctrl-C: the Engine closes the iterator; the run is cancelled (ADK: aborted), the
    partial text kept by the caller, the held stream no longer read, and the agent runs
    again after it."""
    agent = any_adder.adapt(openai_server)
    openai_server.push(held("The first part.", "the rest never comes"))
    run: Iterator[Any] = agent.runner.run(run_request("tell me"))
    seen = ""
    for event in run:
        if isinstance(event, TextDelta):
            seen += event.text
            if "first part." in seen:
                break
    run.close()  # what the Engine does on Ctrl-C
    assert "The first part." in seen and "never" not in seen
    openai_server.push(text("Back."))
    events = list(agent.runner.run(run_request("again")))
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "Back."


def test_the_plain_call_is_the_agents_model_without_tools(openai_server: WireServer,
                                                          any_adder: Adder) -> None:
    agent = any_adder.adapt(openai_server)
    openai_server.push(text("A summary."))
    events = list(agent.provider.stream(ChatRequest(
        "gpt-4o-mini", "Summarize.", (Message("user", "hi"), Message("assistant", "hello"),
                                      Message("user", "Write the summary.")),
        purpose="summary")))
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "A summary."
    assert [e.usage.input_tokens for e in events if isinstance(e, UsageEvent)] == [11]
    body = openai_server.bodies[0]
    assert "tools" not in body
    assert body["messages"] == [{"role": "system", "content": "Summarize."},
                                {"role": "user", "content": "hi"},
                                {"role": "assistant", "content": "hello"},
                                {"role": "user", "content": "Write the summary."}]
