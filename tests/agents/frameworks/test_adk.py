"""A Google ADK ``LlmAgent`` behind the Runner seam, run by ADK's own Runner with its real
``LiteLlm`` model pointed at the local wire server: a tool turn as events (rollchat's additions
appended to the agent's instruction), the history given back as ADK events, a refused call
reaching the model as ADK's ``{"error": ...}`` response, the session state kept from turn to
turn, thinking, and workflow roots (Ctrl-C and the plain call: test_adapters.py)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from rollchat.domain import Message, ToolCall
from rollchat.engine.runner import RunRequest, ToolCalled, ToolReturned
from rollchat.providers.base import ChatRequest, TextDelta, ThinkingDelta, UsageEvent
from tests.framework_agents import ADK_IMPORT_TIMEOUT, adk_adder, one_worker, require_adk
from tests.wire_servers import WireServer, openai_server, text, tool, tools

__all__ = ["openai_server"]
pytestmark = [one_worker("adk"), ADK_IMPORT_TIMEOUT]  # (ADK and litellm imported in one worker)


@pytest.fixture
def adapter(monkeypatch: pytest.MonkeyPatch) -> Any:
    require_adk()
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no fetch from the internet
    from rollchat.agents.frameworks import adk
    return adk


build = adk_adder  # an LlmAgent with one tool, add, its LiteLlm at the server


def request(user: str, history: tuple[Message, ...] = (), refuse: str | None = None,
            asked: list[ToolCall] | None = None) -> RunRequest:
    def approve(call: ToolCall) -> str | None:
        (asked if asked is not None else []).append(call)
        return refuse

    return RunRequest("You add numbers.\n\nProject rule: be brief.", history,
                      Message("user", user), approve)


def test_a_tool_turn_streams_calls_results_text_and_usage(openai_server: WireServer,
                                                           adapter: Any) -> None:
    ran: list[tuple[int, int]] = []
    asked: list[ToolCall] = []
    agent = adapter.adapt(build(openai_server, ran), "root_agent")
    assert (agent.framework, agent.model, agent.has_tools) == ("google-adk", "gpt-4o-mini", True)
    assert agent.instructions == "You add numbers."
    openai_server.push(tool("add", {"a": 2, "b": 3}, input_tokens=40, cache_read=30),
                       text("It is 5."))
    events = list(agent.runner.run(request("what is 2+3?", asked=asked)))
    call = ToolCall("call_1", "add", {"a": 2, "b": 3})
    assert [(type(e), e.call) for e in events if isinstance(e, (ToolCalled, ToolReturned))] == [
        (ToolCalled, call), (ToolReturned, call)]
    [returned] = [e for e in events if isinstance(e, ToolReturned)]
    assert (returned.content, returned.status) == ('{"result": 5}', "ok")
    assert asked == [call] and ran == [(2, 3)]
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "It is 5."
    usages = [e.usage for e in events if isinstance(e, UsageEvent)]
    assert [(u.input_tokens, u.output_tokens, u.cache_read_tokens) for u in usages] == [
        (40, 7, 30), (11, 7, 0)]
    first, second = openai_server.bodies
    system = first["messages"][0]
    assert system["role"] == "system" and system["content"].startswith("You add numbers.")
    assert system["content"].endswith("Project rule: be brief.")  # appended, once
    assert system["content"].count("Project rule") == 1
    assert first["messages"][-1] == {"role": "user", "content": "what is 2+3?"}
    assert second["messages"][0] == system  # the same prefix in the run's next call
    assert [m["role"] for m in second["messages"]] == ["system", "user", "assistant", "tool"]
    assert second["messages"][-1]["content"] == returned.content  # what the model read


def test_history_is_given_back_as_adk_events(openai_server: WireServer, adapter: Any) -> None:
    agent = adapter.adapt(build(openai_server, []), "root_agent")
    call = ToolCall("call_7", "add", {"a": 1, "b": 1})
    history = (Message("user", "Summary of our talk: we add."), Message("assistant", "Noted."),
               Message("user", "1+1?"), Message("assistant", "", (call,)),
               Message("tool", '{"result": 2}', tool_call_id="call_7", name="add"),
               Message("assistant", "It is 2."))
    openai_server.push(text("First."), text("Yes."))
    list(agent.runner.run(request("first")))  # the same agent's next turn: a new run
    list(agent.runner.run(request("and again?", history)))
    sent = [m for m in openai_server.bodies[1]["messages"] if m["role"] != "system"]
    assert [(m["role"], m.get("content")) for m in sent] == [
        ("user", "Summary of our talk: we add."), ("assistant", "Noted."), ("user", "1+1?"),
        ("assistant", None), ("tool", '{"result": 2}'), ("assistant", "It is 2."),
        ("user", "and again?")]
    [asked] = sent[3]["tool_calls"]
    assert (asked["id"], asked["function"]["name"], json.loads(asked["function"]["arguments"])
            ) == ("call_7", "add", {"a": 1, "b": 1})
    assert sent[4]["tool_call_id"] == "call_7"


def test_a_refused_call_reaches_the_model_as_adks_refusal(openai_server: WireServer,
                                                          adapter: Any) -> None:
    ran: list[tuple[int, int]] = []
    agent = adapter.adapt(build(openai_server, ran), "root_agent")
    openai_server.push(tools(("c1", "add", {"a": 1, "b": 2}), ("c2", "add", {"a": 3, "b": 4})),
                       text("I was not allowed."))
    refusal = "refused by the user: not now"
    events = list(agent.runner.run(request("add them", refuse=refusal)))
    assert ran == []
    returned = [e for e in events if isinstance(e, ToolReturned)]
    assert sorted((e.call.id, e.content, e.status) for e in returned) == [
        ("c1", refusal, "refused"), ("c2", refusal, "refused")]
    results = [m for m in openai_server.bodies[1]["messages"] if m["role"] == "tool"]
    assert sorted((m["tool_call_id"], json.loads(m["content"])) for m in results) == [
        ("c1", {"error": refusal}), ("c2", {"error": refusal})]
    assert "I was not allowed." in "".join(e.text for e in events if isinstance(e, TextDelta))


def test_the_session_state_is_kept_from_turn_to_turn(openai_server: WireServer,
                                                     adapter: Any) -> None:
    agent = adapter.adapt(build(openai_server, []), "root_agent")
    for _ in range(2):
        openai_server.push(tool("add", {"a": 1, "b": 1}), text("2."))
        list(agent.runner.run(request("1+1?")))
    assert agent.runner.state == {"adds": 2}  # the tool saw the first turn's state


def test_thinking_streams_as_thinking_and_is_counted_once(openai_server: WireServer,
                                                          adapter: Any) -> None:
    """A model's reasoning (LiteLlm's thought parts) is thinking, not text; its tokens are
    already in the completion's, counted once."""
    agent = adapter.adapt(build(openai_server, []), "root_agent")
    openai_server.push(text("It is 5.", reasoning="Let me add 2 and 3.", output_tokens=9))
    events = list(agent.runner.run(request("2+3?")))
    assert "".join(e.text for e in events if isinstance(e, ThinkingDelta)) == (
        "Let me add 2 and 3.")
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "It is 5."
    assert [(e.usage.input_tokens, e.usage.output_tokens) for e in events
            if isinstance(e, UsageEvent)] == [(11, 9)]


def _by_agent(body: dict[str, Any]) -> Any:
    """The model of a workflow's two agents: the adder calls ``add`` then says the sum, the
    reporter reports (each known by its instruction)."""
    system = str(body["messages"][0].get("content"))
    if system.startswith("You report."):
        return text("Reported.")
    return text("It is 5.") if body["messages"][-1]["role"] == "tool" else tool(
        "add", {"a": 2, "b": 3})


@pytest.mark.parametrize("kind", ["SequentialAgent", "LoopAgent", "ParallelAgent"])
def test_a_workflow_root_runs_its_agents_through_adks_runner(adapter: Any, kind: str) -> None:
    """A root that is not an LlmAgent (ADK's workflow agents) is run by ADK's Runner as any
    BaseAgent: each sub-agent's calls approved through the plugin, rollchat's additions in
    each model call, the first LlmAgent's model for summaries."""
    from google.adk import agents
    from google.adk.models.lite_llm import LiteLlm

    from rollchat.agents.frameworks import adapt as adapt_any
    from tests.wire_servers import OpenAIDialect

    with WireServer(OpenAIDialect(), responder=_by_agent) as server:
        ran: list[tuple[int, int]] = []
        reporter = agents.LlmAgent(name="reporter", instruction="You report.", model=LiteLlm(
            model="openai/gpt-4o-mini", api_base=server.url, api_key="test"))
        more = {"max_iterations": 1} if kind == "LoopAgent" else {}
        root = getattr(agents, kind)(name="pipeline", sub_agents=[build(server, ran), reporter],
                                     **more)
        agent = adapt_any(root, "root_agent", "agent.py")  # found as ADK's, not refused
        assert (agent.framework, agent.model, agent.has_tools) == (
            "google-adk", "gpt-4o-mini", True)
        assert agent.instructions == ""  # a workflow has none: each LlmAgent sends its own
        asked: list[ToolCall] = []
        events = list(agent.runner.run(request("what is 2+3?", asked=asked)))
        assert ran == [(2, 3)] and [(c.name, dict(c.arguments)) for c in asked] == [
            ("add", {"a": 2, "b": 3})]
        said = "".join(e.text for e in events if isinstance(e, TextDelta))
        assert "It is 5." in said and "Reported." in said
        assert len(server.bodies) == 3  # the adder twice, the reporter once
        for body in server.bodies:
            assert str(body["messages"][0]["content"]).endswith("Project rule: be brief.")
        server.push(text("A summary."))
        plain = list(agent.provider.stream(ChatRequest(
            "gpt-4o-mini", "Summarize.", (Message("user", "Write the summary."),),
            purpose="summary")))
        assert "".join(e.text for e in plain if isinstance(e, TextDelta)) == "A summary."


def _example_agent(monkeypatch: pytest.MonkeyPatch) -> Any:
    """examples/adk_agent's LlmAgent with its offline model (no key: no litellm needed)."""
    import runpy
    from pathlib import Path

    pytest.importorskip("google.adk")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    example = Path(__file__).resolve().parents[3] / "examples" / "adk_agent" / "agent.py"
    return runpy.run_path(str(example))["root_agent"]


@pytest.mark.parametrize("refuse", [None, "refused: not now"])
def test_an_apps_root_agent_runs_with_the_apps_plugins_after_rollchats_gate(
        monkeypatch: pytest.MonkeyPatch, refuse: str | None) -> None:
    """An ``App`` (as `adk web` and `adk api_server` take it) is run as its root agent, its
    own plugins after rollchat's: a call rollchat refused never reaches them."""
    pytest.importorskip("google.adk")
    from google.adk.apps import App
    from google.adk.plugins.base_plugin import BasePlugin

    from rollchat.agents.frameworks import adapt as adapt_any

    seen: list[str] = []

    class Recorder(BasePlugin):
        async def before_model_callback(self, **kwargs: Any) -> None:
            seen.append("model")

        async def before_tool_callback(self, *, tool: Any, **kwargs: Any) -> None:
            seen.append(f"tool {tool.name}")

    app = App(name="words", root_agent=_example_agent(monkeypatch),
              plugins=[Recorder(name="recorder")])
    agent = adapt_any(app, "app", "agent.py")
    assert (agent.framework, agent.name, agent.has_tools) == ("google-adk", "app", True)
    asked: list[ToolCall] = []
    events = list(agent.runner.run(request('use word_count {"text": "one two"}',
                                           refuse=refuse, asked=asked)))
    assert [c.name for c in asked] == ["word_count"]
    returned = [e for e in events if isinstance(e, ToolReturned)]
    assert [(e.call.name, e.status) for e in returned] == [
        ("word_count", "ok" if refuse is None else "refused")]
    if refuse is None:
        assert "2 words" in returned[0].content
        assert seen == ["model", "tool word_count", "model"]
    else:
        assert refuse in returned[0].content
        assert seen == ["model", "model"]  # the refused call never reached the App's plugin


def test_an_app_of_an_adk2_graph_workflow_is_one_line() -> None:
    pytest.importorskip("google.adk")
    from google.adk.apps import App
    from google.adk.workflow import START, Workflow

    from rollchat.agents.frameworks import adapt as adapt_any
    from rollchat.errors import ConfigError

    def greet(node_input: str) -> str:
        return "hi"

    app = App(name="flow", root_agent=Workflow(name="flow", edges=[(START, greet)]))
    with pytest.raises(ConfigError) as caught:
        adapt_any(app, "app", "agent.py")
    assert str(caught.value) == ("agent.py: app is an ADK App whose root_agent is a Workflow (an "
                                 "ADK 2 graph workflow, not a BaseAgent), which rollchat "
                                 "cannot run")
