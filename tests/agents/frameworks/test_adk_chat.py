"""A Google ADK agent file (google-adk from PyPI, its ``LiteLlm`` model pointed at the local wire
server) run as its developer runs it: ``rollchat agent.py``. A tool turn recorded as rollchat's
blocks, a call refused through rollchat's approval (ADK's ``before_tool_callback``), the
offline example's session state, a framework error as one line, a PostToolUse hook. Its
Ctrl-C and its compaction and resume are cases of tests/agents/test_framework_wire.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rollchat.domain import Text
from rollchat.storage.transcript import parse
from tests.e2e import clean_env, run_piped
from tests.framework_agents import (
    ADK_AGENT,
    calls_and_results,
    chat,
    require_adk,
    sessions,
    tool_messages,
    turns,
)
from tests.wire_servers import (
    WireServer,
    error,
    openai_server,
    text,
    tool,
)

__all__ = ["openai_server"]



@pytest.fixture(autouse=True)
def adk_installed() -> None:
    require_adk()



def test_a_tool_turn_is_recorded_as_rollchats_blocks(openai_server: WireServer,
                                                      tmp_path: Path) -> None:
    openai_server.push(tool("word_count", {"text": "a b c"}), text("It has 3 words."),
                       text("Still 3."))
    done = chat(tmp_path, openai_server, ADK_AGENT, "count a b c\nand now?\n", "--yes")
    assert done.returncode == 0, done.stderr
    assert "wire-model via " in done.stdout
    assert "It has 3 words." in done.stdout and "Still 3." in done.stdout
    first, second, third = openai_server.bodies[:3]
    assert first["messages"][0]["content"].startswith("You count words.")
    assert [t["function"]["name"] for t in first["tools"]] == ["word_count"]
    assert [json.loads(m["content"]) for m in tool_messages(second)] == [
        {"result": "3 words"}]
    saved = parse(sessions(tmp_path)[0].read_text(encoding="utf-8"))
    turn, later = saved.turns
    queries = turn.usage.input_tokens + turn.usage.output_tokens + later.usage.input_tokens \
        + later.usage.output_tokens
    assert queries == 54 and saved.header.total_tokens >= queries  # each call billed
    uses, results = calls_and_results(turn)
    assert [(u.call.name, dict(u.call.arguments)) for u in uses] == [
        ("word_count", {"text": "a b c"})]
    assert [(json.loads(r.content), r.is_error) for r in results] == [
        ({"result": "3 words"}, False)]
    assert isinstance(turn.blocks[-1], Text) and turn.blocks[-1].text == "It has 3 words."
    assert turn.usage.input_tokens == 22  # both model calls, as the server reported them
    again = [m for m in third["messages"] if m["role"] != "system"]  # the next turn's history
    assert [m["role"] for m in again] == ["user", "assistant", "tool", "assistant", "user"]
    assert again[2]["content"] == tool_messages(second)[0]["content"]  # byte for byte
    assert third["messages"][0] == first["messages"][0]  # the same system prompt


def test_a_refused_call_reaches_the_model_as_adks_refusal(openai_server: WireServer,
                                                          tmp_path: Path) -> None:
    openai_server.push(tool("word_count", {"text": "a b c"}), text("I could not count."))
    done = chat(tmp_path, openai_server, ADK_AGENT, "count a b c\n")  # no --yes, piped
    assert done.returncode == 0, done.stderr
    assert "I could not count." in done.stdout
    [sent] = tool_messages(openai_server.bodies[1])
    refusal = json.loads(str(sent["content"]))
    assert list(refusal) == ["error"] and "refused" in refusal["error"]
    [turn] = turns(sessions(tmp_path)[0])
    _, [result] = calls_and_results(turn)
    assert result.is_error and result.content == refusal["error"]


def test_the_example_runs_offline_and_keeps_its_session_state(tmp_path: Path) -> None:
    """examples/adk_agent/agent.py with no key: rollchat's offline model as an ADK BaseLlm;
    its tool counts in ADK's session state, carried from one turn to the next."""
    example = Path(__file__).resolve().parents[3] / "examples" / "adk_agent" / "agent.py"
    ask = 'use word_count {"text": "one two three"}\n'
    done = run_piped(tmp_path, ask + ask, str(example), "--yes",
                     env=clean_env(tmp_path / "home"), timeout=120)
    assert done.returncode == 0, done.stderr
    first, second = turns(sessions(tmp_path)[0])
    results = [calls_and_results(turn)[1] for turn in (first, second)]
    assert [json.loads(r.content) for [r] in results] == [
        {"result": "3 words (text 1 counted in this session)"},
        {"result": "3 words (text 2 counted in this session)"}]


def test_a_framework_error_is_one_line_and_the_chat_goes_on(openai_server: WireServer,
                                                            tmp_path: Path) -> None:
    openai_server.push(error(400, "bad request here"), text("Fine again."))
    done = chat(tmp_path, openai_server, ADK_AGENT, "hi\nagain\n")
    assert done.returncode == 0, done.stderr
    assert "Fine again." in done.stdout
    shown = done.stdout + done.stderr
    assert "Traceback" not in shown and "Give Feedback" not in shown, shown
    [line] = [x for x in shown.splitlines() if "bad request here" in x]
    assert "agent framework error" in line


def test_a_posttooluse_hook_joins_the_response_the_model_reads(openai_server: WireServer,
                                                               tmp_path: Path) -> None:
    """The user's PostToolUse hook runs after ADK ran the call (the plugin's
    ``after_tool_callback``); its word joins the function response the model reads, and the
    transcript records the response as the model read it."""
    from tests.session.test_hooks import _config, _hook, _log

    agent = tmp_path / "agent.py"
    agent.write_text(ADK_AGENT, encoding="utf-8")
    config = _config(tmp_path, f"""\
  PostToolUse:
    - matcher: word_count
      command: {json.dumps(_hook(tmp_path, "say", "checked by the hook"))}
""", agent=f"agents:\n  it:\n    file: {agent}\n    approval: auto\ndefault_agent: it\n")
    openai_server.push(tool("word_count", {"text": "a b c"}), text("Done."))
    done = run_piped(tmp_path, "go\n", "--config", str(config), timeout=120,
                     env=clean_env(tmp_path / "home", WIRE_URL=openai_server.url))
    assert done.returncode == 0, done.stderr
    assert "Done." in done.stdout, done.stdout
    [sent] = tool_messages(openai_server.bodies[1])
    assert json.loads(str(sent["content"])) == {
        "result": "3 words", "post_tool_use": "[PostToolUse hook: checked by the hook]"}
    [event] = [e for e in _log(tmp_path) if e["hook_event_name"] == "PostToolUse"]
    assert (event["tool_name"], event["tool_input"]) == ("word_count", {"text": "a b c"})
    assert event["tool_response"] == {"text": '{"result": "3 words"}', "status": "ok"}
    [turn] = turns(sessions(tmp_path)[0])
    _, [recorded] = calls_and_results(turn)
    assert recorded.content == sent["content"]
