"""The Pydantic AI and LangChain ``create_agent`` example agents run as a user runs them
(``rollchat agent.py``, piped, in a child process), their real OpenAI clients at the local wire
server: a tool turn recorded as rollchat's ordered blocks, the next turn given the history,
a call refused by a deny rule, and a resume in a new process starting from the summary."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from rollchat.domain import Text, ToolResult, ToolUse
from rollchat.storage.transcript.parse import parse
from tests.e2e import run_piped, write_config
from tests.framework_agents import by_framework, framework_env, one_worker, preloaded
from tests.wire_servers import WireServer, openai_server, text, tool

__all__ = ["openai_server"]

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
FILES = {"pydantic-ai": ("pydantic_ai", "pydantic_ai_agent"),
         "langgraph": ("langchain.agents", "langgraph_agent")}


@pytest.fixture(params=by_framework(*sorted(FILES)))
def agent_file(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    """The example agent of each framework (examples/*/agent.py), as a user runs it."""
    module, example = FILES[request.param]
    if importlib.util.find_spec(module.split(".")[0]) is None:
        pytest.skip(f"{module} is not installed (pip install -e '.[frameworks]')")
    return EXAMPLES / example / "agent.py"


def chat(server: WireServer, tmp_path: Path, agent: Path | None, lines: str, *args: str,
         runs: Path | None = None) -> str:
    """``rollchat [AGENT] ARGS``, piped: forked from the fork server that has imported the
    framework of the agent file it runs (``agent``, or ``runs``: named in the config), a new
    process still."""
    runs = runs or agent
    assert runs is not None
    preload = preloaded(runs.read_text(encoding="utf-8"))
    env = framework_env(tmp_path / "home", preload, OPENAI_BASE_URL=server.url,
                        OPENAI_API_KEY="test")
    where = (str(agent),) if agent is not None else ()
    done = run_piped(tmp_path, lines, *where, *args, env=env, timeout=120, preload=preload)
    assert done.returncode == 0, done.stderr
    return done.stdout


def sessions(tmp_path: Path) -> list[Path]:
    return sorted((tmp_path / "sessions").glob("*.md"))


def non_system(body: dict[str, object]) -> list[dict[str, object]]:
    return [m for m in body["messages"] if m["role"] != "system"]  # type: ignore[index,union-attr]


def test_a_tool_turn_is_recorded_as_blocks_and_given_back(openai_server: WireServer,
                                                          tmp_path: Path, agent_file: Path,
                                                          ) -> None:
    openai_server.push(tool("add", {"a": 2, "b": 3}), text("It is 5."), text("Still 5."))
    out = chat(openai_server, tmp_path, agent_file, "what is 2+3?\nand now?\n", "--yes")
    assert "It is 5." in out and "Still 5." in out
    [saved] = sessions(tmp_path)
    turn = parse(saved.read_text(encoding="utf-8")).turns[0]
    assert [type(b) for b in turn.blocks] == [ToolUse, ToolResult, Text]
    use, result, answer = turn.blocks
    assert isinstance(use, ToolUse) and isinstance(result, ToolResult)
    assert (use.call.name, dict(use.call.arguments), result.content) == (
        "add", {"a": 2, "b": 3}, "5")
    assert isinstance(answer, Text) and answer.text == "It is 5."
    second = non_system(openai_server.bodies[2])
    assert [m["role"] for m in second] == ["user", "assistant", "tool", "assistant", "user"]
    assert second[2]["content"] == "5" and second[3]["content"] == "It is 5."
    assert str(second[4]["content"]).endswith("and now?")


def test_a_denied_call_reaches_the_model_as_a_refusal(openai_server: WireServer,
                                                      tmp_path: Path, agent_file: Path) -> None:
    """The agent named in ``agents:`` by its file, its deny rule applied to the framework's
    call through the framework's own refusal."""
    config = write_config(tmp_path / "config.yaml", (
        "default_agent: adder\nagents:\n  adder:\n"
        f"    file: {agent_file}\n    approval: auto\n    deny: [add]\n"))
    openai_server.push(tool("add", {"a": 2, "b": 3}), text("I may not add."))
    out = chat(openai_server, tmp_path, None, "what is 2+3?\n", "--config", str(config),
               runs=agent_file)
    assert "I may not add." in out
    [result] = [m for m in openai_server.bodies[1]["messages"] if m["role"] == "tool"]
    assert "denied" in str(result["content"])
    turn = parse(sessions(tmp_path)[0].read_text(encoding="utf-8")).turns[0]
    [refused] = [b for b in turn.blocks if isinstance(b, ToolResult)]
    assert refused.is_error and refused.content == result["content"]


def test_resume_in_a_new_process_starts_from_the_summary(openai_server: WireServer,
                                                         tmp_path: Path, agent_file: Path,
                                                         ) -> None:
    openai_server.push(tool("add", {"a": 40, "b": 2}), text("It is 42, the answer."))
    chat(openai_server, tmp_path, agent_file, "what is 40+2?\n", "--yes")
    [first] = sessions(tmp_path)
    summary = parse(first.read_text(encoding="utf-8")).summary
    assert summary is not None
    openai_server.requests.clear()
    out = chat(openai_server, tmp_path, agent_file, "what did we compute?\n", "--yes", "-c")
    assert "echo: what did we compute?" in out
    restore = openai_server.bodies[0]  # the restoration, through the agent's plain call
    assert "tools" not in restore
    [question] = [b for b in openai_server.bodies if "tools" in b]  # the framework's run
    sent = non_system(question)
    assert summary.background and summary.background in str(sent[0]["content"])
    assert [m["role"] for m in sent] == ["user", "assistant", "user"]
    assert non_system(restore)[0]["content"] == sent[0]["content"]  # the same exchange
    assert all(topic in str(sent[0]["content"]) for topic in summary.topics)


HOOKED = [pytest.param("pydantic_ai", "pydantic_ai_agent", "add", {"a": 2, "b": 3}, "5",
                       id="pydantic-ai", marks=one_worker("pydantic-ai")),
          pytest.param("langchain", "langgraph_agent", "add", {"a": 2, "b": 3}, "5",
                       id="langgraph", marks=one_worker("langgraph")),
          pytest.param("agents", "openai_agents_agent", "word_count", {"text": "a b c"},
                       "3 words", id="openai-agents", marks=one_worker("openai-agents")),
          pytest.param("strands", "strands_agent", "word_count", {"text": "a b c"},
                       "3 words", id="strands", marks=one_worker("strands"))]


@pytest.mark.parametrize(("module", "example", "name", "args", "result"), HOOKED)
def test_a_posttooluse_hook_adds_to_the_result_the_model_reads(
        openai_server: WireServer, tmp_path: Path, module: str, example: str, name: str,
        args: dict[str, object], result: str) -> None:
    """The user's PostToolUse hook runs after the framework ran the call; its word reaches
    the model with the result (Pydantic AI's ``after_tool_execute``; LangGraph: the state
    after its tool node; the Agents SDK: the function tool's invocation; Strands: its
    ``AfterToolCallEvent``) and the transcript records the result as the model read it."""
    from tests.session.test_hooks import _config, _hook, _log

    pytest.importorskip(module)
    config = _config(tmp_path, f"""\
  PostToolUse:
    - matcher: {name}
      command: {json.dumps(_hook(tmp_path, "say", "checked by the hook"))}
""", agent=f"agents:\n  it:\n    file: {EXAMPLES / example / 'agent.py'}\n"
           "    approval: auto\ndefault_agent: it\n")
    openai_server.push(tool(name, args), text("Done."))
    out = chat(openai_server, tmp_path, None, "go\n", "--config", str(config),
               runs=EXAMPLES / example / "agent.py")
    assert "Done." in out
    [sent] = [m for m in openai_server.bodies[1]["messages"] if m["role"] == "tool"]
    assert sent["content"] == f"{result}\n\n[PostToolUse hook: checked by the hook]"
    [event] = [e for e in _log(tmp_path) if e["hook_event_name"] == "PostToolUse"]
    assert (event["tool_name"], event["tool_input"]) == (name, args)
    assert event["tool_response"] == {"text": result, "status": "ok"}
    turn = parse(sessions(tmp_path)[0].read_text(encoding="utf-8")).turns[0]
    [recorded] = [b for b in turn.blocks if isinstance(b, ToolResult)]
    assert recorded.content == sent["content"]


def test_the_memory_layers_reach_the_framework_agent(openai_server: WireServer, tmp_path: Path,
                                                     agent_file: Path) -> None:
    """The user profile joins the agent's own instructions (as the framework sends extra
    instructions: a system message of its own) and a remembered fact relevant to the message
    rides in the user message's context block, as for rollchat's own agents."""
    from rollchat.memory.store import MemoryStore
    from tests.e2e import user_memory
    from tests.memory import project_memory

    store = MemoryStore(tmp_path / "sessions", "assistant",
                        user_dir=user_memory(tmp_path / "home"),
                        **project_memory(tmp_path / "home", tmp_path))
    store.add("prefers answers in roman numerals", "preference", source_session="s_1")
    store.add("the invoice batch job adds shipping fees", "project", source_session="s_1")
    config = write_config(tmp_path / "config.yaml",
                          f"agents:\n  assistant:\n    file: {agent_file}\n")
    openai_server.push(text("V."))
    chat(openai_server, tmp_path, None, "what does the invoice batch job add?\n",
         "--config", str(config), "--yes", runs=agent_file)
    messages = openai_server.bodies[0]["messages"]
    system = [str(m["content"]) for m in messages if m["role"] == "system"]
    assert system[0] == "You add numbers with the add tool and answer briefly."
    assert any("prefers answers in roman numerals" in s for s in system[1:])
    user = str(messages[-1]["content"])
    assert "the invoice batch job adds shipping fees" in user
    assert user.endswith("what does the invoice batch job add?")
    assert "roman" not in user and "shipping" not in "".join(system)
