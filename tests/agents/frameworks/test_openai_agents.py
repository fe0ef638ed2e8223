"""The OpenAI Agents SDK adapter keeps its clone of the agent and the converted history from
turn to turn (the first word's own cost, bench/bench_frameworks.py); each is made again when
what it was made of changed: the system prompt, an attribute of the agent, a tool added (whose
calls ask rollchat's gate like the others), the working context compacted or restored. The
real SDK, its OpenAI client at the local wire server."""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

import pytest

from rollchat.domain import Message, ToolCall
from rollchat.engine.runner import RunRequest, ToolReturned
from tests.framework_agents import one_worker, run_request
from tests.wire_servers import WireServer, openai_server, text, tool

__all__ = ["openai_server"]
pytestmark = one_worker("openai-agents")


def _agent(server: WireServer, ran: list[str]) -> Any:
    pytest.importorskip("agents")
    from openai import AsyncOpenAI

    from agents import Agent, OpenAIChatCompletionsModel, function_tool

    @function_tool
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        ran.append("add")
        return a + b

    client = AsyncOpenAI(base_url=server.url, api_key="test")
    return Agent(name="adder", instructions="You add numbers.", tools=[add],
                 model=OpenAIChatCompletionsModel(model="gpt-4o-mini", openai_client=client))


def _sent(body: dict[str, Any]) -> list[tuple[str, str]]:
    """A request's messages as (role, content), tool calls as their names."""
    out = []
    for m in body["messages"]:
        said = m.get("content") or ",".join(c["function"]["name"]
                                            for c in m.get("tool_calls") or ())
        out.append((m["role"], str(said)))
    return out


def test_the_clone_is_made_again_when_the_prompt_or_the_agent_changed(
        openai_server: WireServer) -> None:
    """One clone for turns alike; a new one for a new system prompt, an attribute set anew,
    and a tool added to the agent's list, whose call then asks rollchat's gate (and its
    refusal reaches the model) as the agent's first tools' calls do."""
    from agents import ModelSettings, function_tool
    from rollchat.agents.frameworks import openai_agents

    ran: list[str] = []
    agent = _agent(openai_server, ran)
    runner = openai_agents.adapt(agent, "agent").runner
    openai_server.push(text("One."), text("Two."), text("Three."), text("Four."))
    for user in ("a", "b"):
        list(runner.run(run_request(user)))
    assert runner.clones == 1
    list(runner.run(RunRequest("Another rule.", (), Message("user", "c"), lambda call: None)))
    assert runner.clones == 2
    assert ("system", "Another rule.") in _sent(openai_server.bodies[2])
    agent.model_settings = ModelSettings(temperature=0.25)
    list(runner.run(run_request("d")))
    assert runner.clones == 3
    assert openai_server.bodies[3]["temperature"] == 0.25
    assert ("system", "Project rule: be brief.") in _sent(openai_server.bodies[3])

    @function_tool
    def double(n: int) -> int:
        """Double a number."""
        ran.append("double")
        return 2 * n

    agent.tools.append(double)  # the same list, one more tool
    openai_server.push(tool("double", {"n": 4}, tool_id="call_9"), text("I may not."))
    asked: list[ToolCall] = []
    events = list(runner.run(run_request("double 4", refuse="refused: not now",
                                         asked=asked)))
    assert runner.clones == 4
    assert asked == [ToolCall("call_9", "double", {"n": 4})] and "double" not in ran
    assert [e.status for e in events if isinstance(e, ToolReturned)] == ["refused"]
    [result] = [m for m in openai_server.bodies[5]["messages"] if m["role"] == "tool"]
    assert "refused: not now" in str(result["content"])
    offered = {t["function"]["name"] for t in openai_server.bodies[5]["tools"]}
    assert offered == {"add", "double"}


def _engine(agent: Any) -> Any:
    from rollchat.agents.frameworks import adapt
    from rollchat.engine.core import Engine, EngineSettings
    from rollchat.providers.base import RetryPolicy

    framework = adapt(agent, "agent", "agent.py")
    return Engine(EngineSettings(framework.provider, model=framework.model, system="sys",
                                 max_output_tokens=100, temperature=None,
                                 retry=RetryPolicy(max_retries=0), runner=framework.runner))


def _drain(stream: Generator[Any, None, Any]) -> Any:
    while True:
        try:
            next(stream)
        except StopIteration as done:
            return done.value


def test_the_history_is_converted_once_and_again_after_a_restoration(
        openai_server: WireServer) -> None:
    """Each turn converts only the messages new since the turn before; after the context is
    restored from a summary (what compaction and resume do: engine.restore) the history sent
    is the restoration exchange, none of the turns before it; an older message rewritten in
    place (an edited summary) is sent as it is now."""
    engine = _engine(_agent(openai_server, []))
    history = engine.settings.runner.history
    openai_server.push(text("First answer."), text("Second answer."), text("Third answer."))
    for user in ("first question", "second question", "third question"):
        _drain(engine.chat(user))
    assert history.converted == 4  # turn 2: its 2 earlier messages; turn 3: 2 more
    assert _sent(openai_server.bodies[2])[1:] == [
        ("user", "first question"), ("assistant", "First answer."),
        ("user", "second question"), ("assistant", "Second answer."),
        ("user", "third question")]
    openai_server.push(text("Restored."), text("After."), text("Later."))
    _drain(engine.restore("Summary: we asked three questions."))
    _drain(engine.chat("what now?"))
    assert _sent(openai_server.bodies[4])[1:] == [
        ("user", "Summary: we asked three questions."), ("assistant", "Restored."),
        ("user", "what now?")]
    assert history.converted == 6
    engine.context.rewrite(0, Message("user", "Summary, edited."))
    _drain(engine.chat("and later?"))
    assert _sent(openai_server.bodies[5])[1:] == [
        ("user", "Summary, edited."), ("assistant", "Restored."),
        ("user", "what now?"), ("assistant", "After."), ("user", "and later?")]
    assert history.converted == 10  # all four again, from the rewritten first one
