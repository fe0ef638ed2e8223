"""Framework state that is not messages (Strands ``agent.state``, a LangGraph graph's state keys
besides ``messages``, ADK's ``session.state``) kept in the session file with the summary and
given back to the framework by ``resume N`` in a new process: the real frameworks from PyPI,
their clients at the local wire server, run as ``rollchat agent.py``."""

from __future__ import annotations

import signal
from pathlib import Path
from typing import Any

import pytest

from rollchat.storage.transcript import parse
from tests.e2e import PROMPT, spawn
from tests.framework_agents import (
    SUMMARY,
    adk_counter,
    asks_summary,
    chat,
    framework_env,
    one_worker,
    preloaded,
    require_adk,
    sessions,
    tool_messages,
)
from tests.wire_servers import OpenAIDialect, Reply, WireServer, last_user_text, text, tool

STRANDS_STATEFUL = '''
import os
from strands import Agent, ToolContext, tool
from strands.models.openai import OpenAIModel


@tool(context=True)
def word_count(text: str, tool_context: ToolContext) -> str:
    """Count words, and how many times it counted.

    Args:
        text: The text.
    """
    state = tool_context.agent.state
    state.set("counted", (state.get("counted") or 0) + 1)
    return f"{len(text.split())} words, count number {state.get('counted')}"


root_agent = Agent(
    model=OpenAIModel(client_args={"base_url": os.environ["WIRE_URL"], "api_key": "test"},
                      model_id="wire-model"),
    tools=[word_count], system_prompt="You count words.", callback_handler=None)
'''

LANGGRAPH_STATEFUL = '''
import os
from langchain.agents import AgentState, create_agent
from langchain.tools import ToolRuntime, tool
from langchain_core.messages import ToolMessage
from langchain_openai import ChatOpenAI
from langgraph.types import Command
from typing_extensions import NotRequired


class Counting(AgentState):
    counted: NotRequired[int]


@tool
def word_count(text: str, runtime: ToolRuntime) -> Command:
    """Count words, and how many times it counted."""
    counted = runtime.state.get("counted", 0) + 1
    said = f"{len(text.split())} words, count number {counted}"
    return Command(update={"counted": counted, "messages": [
        ToolMessage(said, tool_call_id=runtime.tool_call_id)]})


root_agent = create_agent(
    ChatOpenAI(model="wire-model", base_url=os.environ["WIRE_URL"], api_key="test",
               stream_usage=True), tools=[word_count], system_prompt="You count words.",
    state_schema=Counting)
'''

def _strands() -> None:
    pytest.importorskip("strands")


def _langgraph() -> None:
    pytest.importorskip("langchain.agents")


STATEFUL = pytest.mark.parametrize(("source", "installed"), [
    pytest.param(STRANDS_STATEFUL, _strands, id="strands", marks=one_worker("strands")),
    pytest.param(LANGGRAPH_STATEFUL, _langgraph, id="langgraph", marks=one_worker("langgraph")),
    pytest.param(adk_counter(says_count=True), require_adk, id="adk",
                 marks=one_worker("adk"))])


def counting(body: dict[str, Any]) -> Reply:
    """The model: a word_count call for "count ...", the summary when asked, else "done"."""
    if asks_summary(body):
        return text(SUMMARY)
    last = body["messages"][-1]
    if last.get("role") == "user" and "count these words" in last_user_text(body):
        return tool("word_count", {"text": "one two"})
    return text("done")


def _results(bodies: list[dict[str, Any]]) -> list[str]:
    return [str(m["content"]) for b in bodies for m in tool_messages(b)]


@STATEFUL
@pytest.mark.timeout(300)  # two chats (each bounded at 120 s), each importing its framework
def test_the_frameworks_state_is_kept_across_resume_in_a_new_process(
        tmp_path: Path, source: str, installed: Any) -> None:
    installed()
    with WireServer(OpenAIDialect(), responder=counting) as server:
        first = chat(tmp_path, server, source, "count these words\n", "--yes")
        assert first.returncode == 0, first.stderr
        assert any("count number 1" in r for r in _results(server.bodies)), first.stdout
        [saved] = sessions(tmp_path)
        summary = parse(saved.read_text(encoding="utf-8")).summary
        assert summary is not None and summary.framework_state is not None
        assert summary.framework_state.data == '{"counted":1}'

        before = len(server.bodies)
        again = chat(tmp_path, server, source, "resume 1\ncount these words\n", "--yes")
        assert again.returncode == 0, again.stderr
        later = _results(server.bodies[before:])
        # the tool read the state the first process left: its second count, not a first
        assert later and "count number 2" in later[-1], (later, again.stdout)
        newest = sessions(tmp_path)[-1]
        kept = parse(newest.read_text(encoding="utf-8")).summary
        assert kept is not None and kept.framework_state is not None
        assert kept.framework_state.data == '{"counted":2}'


@one_worker("langgraph")
@pytest.mark.timeout(300)  # a chat killed, then one resuming it (each wait bounded)
def test_a_session_that_crashed_resumes_with_the_state_its_turn_kept(tmp_path: Path) -> None:
    """The turn that changed the state keeps it in the file (``*Framework state:*``), so a
    chat killed before it wrote a summary resumes with it: the transcript is summarized
    first (its summary keeps the state too), and the tool reads the count the dead process
    left."""
    _langgraph()
    agent = tmp_path / "agent.py"
    agent.write_text(LANGGRAPH_STATEFUL, encoding="utf-8")
    with WireServer(OpenAIDialect(), responder=counting) as server:
        preload = preloaded(LANGGRAPH_STATEFUL)  # (forked, in a terminal of its own)
        child = spawn(tmp_path, str(agent), "--yes", env=framework_env(
            tmp_path / "home", preload, WIRE_URL=server.url), timeout=90, preload=preload)
        try:
            child.expect_exact(PROMPT)
            child.sendline("count these words")
            child.expect_exact("done")
            child.expect_exact(PROMPT)  # the turn is on disk before the prompt comes back
            child.kill(signal.SIGKILL)
        finally:
            child.close(force=True)
        [crashed] = sessions(tmp_path)
        saved = parse(crashed.read_text(encoding="utf-8"))
        assert saved.summary is None  # it died before writing one
        [turn] = saved.turns
        assert turn.framework_state is not None and turn.framework_state.data == '{"counted":1}'
        before = len(server.bodies)
        again = chat(tmp_path, server, LANGGRAPH_STATEFUL, "resume 1\ncount these words\n",
                     "--yes")
        assert again.returncode == 0, again.stderr
        later = _results(server.bodies[before:])
        assert later and "count number 2" in later[-1], (later, again.stdout)
        summary = parse(crashed.read_text(encoding="utf-8")).summary
        assert summary is not None and summary.framework_state == turn.framework_state
