"""Agents built with Strands (strands-agents, its OpenAIModel), the OpenAI Agents SDK
(openai-agents, an AsyncOpenAI client), Pydantic AI, LangGraph and Google ADK (its LiteLlm,
where installed), from PyPI, their clients pointed at the local wire server, run by rollchat
as their developers run them: ``rollchat agent.py``. For Strands and the SDK: a tool turn
recorded as rollchat's blocks and a call refused through rollchat's approval (Strands'
cancel_tool; the SDK's needs_approval interruption rejected); for those and ADK, Ctrl-C in a
terminal keeping the partial answer (Pydantic AI's and LangGraph's are in frameworks/); for
all of them: an automatic compaction (the budget from the model's ``context_window``)
summarized through the agent's own model, and a resume in a new process."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pexpect
import pytest

from rollchat.domain import Text
from tests.e2e import PROMPT, exit_chat, spawn
from tests.framework_agents import (
    ADK_AGENT,
    LANGGRAPH_AGENT,
    OPENAI_AGENT,
    PYDANTIC_AI_AGENT,
    SMALL_WINDOW,
    STRANDS_AGENT,
    asks_summary,
    calls_and_results,
    chat,
    framework_env,
    one_worker,
    preloaded,
    require_adk,
    sessions,
    summarizing,
    tool_messages,
    turns,
)
from tests.wire_servers import WireServer, held, last_user_text, openai_server, text, tool

__all__ = ["openai_server"]

FRAMEWORKS = [pytest.param(STRANDS_AGENT, "strands", id="strands", marks=one_worker("strands")),
              pytest.param(OPENAI_AGENT, "agents", id="openai-agents",
                           marks=one_worker("openai-agents"))]
ADK = pytest.param(ADK_AGENT, "google.adk.models.lite_llm", id="adk", marks=one_worker("adk"))
each = pytest.mark.parametrize(("source", "module"), FRAMEWORKS)
every = pytest.mark.parametrize(("source", "module"), [
    *FRAMEWORKS, pytest.param(PYDANTIC_AI_AGENT, "pydantic_ai", id="pydantic-ai",
                              marks=one_worker("pydantic-ai")),
    pytest.param(LANGGRAPH_AGENT, "langchain.agents", id="langgraph",
                 marks=one_worker("langgraph")), ADK])


def installed(module: str) -> None:
    """Skip unless the framework is installed (ADK: google-adk and litellm)."""
    if module.startswith("google.adk"):
        require_adk()
    else:
        pytest.importorskip(module)


@each
def test_a_tool_turn_is_recorded_as_rollchats_blocks(openai_server: WireServer, tmp_path: Path,
                                                      source: str, module: str) -> None:
    pytest.importorskip(module)
    openai_server.push(tool("word_count", {"text": "a b c"}), text("It has 3 words."))
    done = chat(tmp_path, openai_server, source, "count a b c\n", "--yes")
    assert done.returncode == 0, done.stderr
    assert "wire-model via " in done.stdout
    assert "It has 3 words." in done.stdout
    first, second = openai_server.bodies[:2]
    assert first["messages"][0] == {"role": "system", "content": "You count words."}
    assert first.get("stream_options") == {"include_usage": True}
    assert [t["function"]["name"] for t in first["tools"]] == ["word_count"]
    assert [m["content"] for m in tool_messages(second)] == ["3 words"]
    [turn] = turns(sessions(tmp_path)[0])
    uses, results = calls_and_results(turn)
    assert [(u.call.name, dict(u.call.arguments)) for u in uses] == [
        ("word_count", {"text": "a b c"})]
    assert [(r.content, r.is_error) for r in results] == [("3 words", False)]
    assert isinstance(turn.blocks[-1], Text) and turn.blocks[-1].text == "It has 3 words."
    assert turn.usage.input_tokens == 22  # both model calls, as the server reported them


@each
def test_a_refused_call_reaches_the_model_as_the_frameworks_refusal(
        openai_server: WireServer, tmp_path: Path, source: str, module: str) -> None:
    pytest.importorskip(module)
    openai_server.push(tool("word_count", {"text": "a b c"}), text("I could not count."))
    done = chat(tmp_path, openai_server, source, "count a b c\n")  # no --yes, piped
    assert done.returncode == 0, done.stderr
    [sent] = tool_messages(openai_server.bodies[1])
    assert "refused" in str(sent["content"]) and "3 words" not in str(sent["content"])
    [turn] = turns(sessions(tmp_path)[0])
    _, [result] = calls_and_results(turn)
    assert result.is_error and "refused" in result.content


@every
def test_compaction_through_the_agents_model_and_resume_in_a_new_process(
        tmp_path: Path, source: str, module: str) -> None:
    installed(module)
    with WireServer(openai_server_dialect(), responder=summarizing, counting=True) as server:
        long = " ".join(["the zanzibar ferry leaves early"] * 60)
        done = chat(tmp_path, server, source, f"{long}\n{long}\n{long}\n",
                    config=SMALL_WINDOW)
        assert done.returncode == 0, done.stderr
        asked = [b for b in server.bodies if asks_summary(b)]
        assert asked, "the summary was not asked of the agent's model"
        assert not asked[0].get("tools")  # a plain call, no tools
        files = sessions(tmp_path)
        assert len(files) >= 2, done.stdout[-1500:]
        assert "take the morning boat" in files[0].read_text(encoding="utf-8")
        before = len(server.bodies)
        again = chat(tmp_path, server, source, "what was pending?\n", "-c",
                     config=SMALL_WINDOW)
        assert again.returncode == 0, again.stderr
        chats = [b for b in server.bodies[before:] if last_user_text(b) == "what was pending?"]
        assert chats, again.stdout
        assert chats[-1].get("tools")  # the framework's run, not the plain call
        history = str(chats[-1]["messages"])
        assert "buy tickets" in history  # the framework got the restored summary


def openai_server_dialect() -> Any:
    from tests.wire_servers import OpenAIDialect

    return OpenAIDialect()


@pytest.mark.parametrize(("source", "module"), [*FRAMEWORKS, ADK])
def test_ctrl_c_stops_the_run_and_keeps_the_partial_answer(
        openai_server: WireServer, tmp_path: Path, source: str, module: str) -> None:
    """In a terminal: Ctrl-C while the framework streams stops its run (Strands'
    cancel_signal, the SDK's cancel(), ADK's abort_signal); the part streamed is kept, the
    rest (held back by the server) never reaches the transcript. Each wait is bounded."""
    installed(module)
    agent = tmp_path / "agent.py"
    agent.write_text(source, encoding="utf-8")
    openai_server.push(held("The first part.\n\n", "never sent"))
    preload = preloaded(source)  # (forked in a terminal from the server that imported it)
    child = spawn(tmp_path, str(agent), env=framework_env(
        tmp_path / "home", preload, WIRE_URL=openai_server.url,
        OPENAI_AGENTS_DISABLE_TRACING="1"), timeout=90, preload=preload)  # each expect's wait
    shown = io.StringIO()
    try:
        child.expect_exact(PROMPT)
        child.sendline("tell me")
        child.expect_exact("The first part.")
        child.logfile_read = shown
        child.sendintr()
        child.expect_exact("interrupted")
        exit_chat(child)
    finally:
        child.close(force=True)
    assert "Traceback" not in shown.getvalue(), shown.getvalue()[-2000:]
    [turn] = turns(sessions(tmp_path)[0])
    assert turn.status == "interrupted"
    said = "".join(b.text for b in turn.blocks if isinstance(b, Text))
    assert "The first part." in said and "never sent" not in said
    assert pexpect  # the child was driven through a terminal
