"""A Google ADK agent file (google-adk from PyPI, its ``LiteLlm`` model pointed at the local wire
server) run as its developer runs it: ``rollchat agent.py`` at a terminal. A tool turn recorded
as rollchat's blocks, a call refused through rollchat's approval (ADK's
``before_tool_callback``), the offline example's session state, a framework error as one line,
a PostToolUse hook. The chats run in this process (tests/terminal.py's ``run_chat``: the real
CLI, prompt_toolkit and rich), so ADK and litellm are imported once per worker, not once per
chat; Ctrl-C, and compaction and resume in a new process, are cases of
tests/agents/test_framework_wire.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rollchat.domain import Text
from rollchat.storage.transcript import parse
from tests.e2e import PROMPT, clean_env
from tests.framework_agents import (
    ADK_AGENT,
    calls_and_results,
    one_worker,
    require_adk,
    sessions,
    tool_messages,
    turns,
)
from tests.terminal import Terminal, run_chat
from tests.wire_servers import (
    WireServer,
    error,
    openai_server,
    text,
    tool,
)

__all__ = ["openai_server"]

TIMEOUT = 120  # each wait of a chat (the first imports ADK and litellm: slow when loaded)
# the first chat of a worker imports ADK and litellm (over a minute on a loaded 2-core machine)
pytestmark = [pytest.mark.timeout(300), one_worker("adk")]
ANSWERED = r"Time: [0-9.]+s \| Tokens"  # the footer that ends each answer


@pytest.fixture(autouse=True)
def adk_installed() -> None:
    require_adk()


def env(tmp_path: Path, **extra: str) -> dict[str, str]:
    """The chat's environment: no keys; litellm's price list read from the package (no
    internet), whichever chat of this worker imports it first."""
    return clean_env(tmp_path / "home", LITELLM_LOCAL_MODEL_COST_MAP="True", **extra)


def chat(tmp_path: Path, args: list[str], lines: list[str], *, approve: str | None = None,
         environ: dict[str, str] | None = None) -> str:
    """``rollchat ARGS`` at a terminal in this process: each of ``lines`` typed at the prompt
    (``approve``, when given, the answer to each "Allow?" on the way), then ``exit``; the
    screen's text once the chat ended with status 0."""
    shown: list[str] = []

    def script(term: Terminal) -> None:
        for line in lines:
            term.expect_exact(PROMPT, TIMEOUT)
            term.sendline(line)
            if approve is not None:
                term.expect_exact("Allow?", TIMEOUT)
                term.sendline(approve)
            term.expect(ANSWERED, TIMEOUT)  # the turn ended: the next line is typed after it
        term.expect_exact(PROMPT, TIMEOUT)
        shown.append(term.screen.text())
        term.sendline("exit")

    code = run_chat(tmp_path, args, script, env=environ or env(tmp_path), timeout=TIMEOUT)
    assert code == 0, shown
    return shown[0]


def adk_chat(tmp_path: Path, server: WireServer, lines: list[str], *args: str,
             approve: str | None = None) -> str:
    """``rollchat agent.py ARGS``, the file ADK_AGENT, its LiteLlm at ``server``."""
    agent = tmp_path / "agent.py"
    agent.write_text(ADK_AGENT, encoding="utf-8")
    return chat(tmp_path, [str(agent), *args], lines, approve=approve,
                environ=env(tmp_path, WIRE_URL=server.url))


def test_a_tool_turn_is_recorded_as_rollchats_blocks(openai_server: WireServer,
                                                      tmp_path: Path) -> None:
    openai_server.push(tool("word_count", {"text": "a b c"}), text("It has 3 words."),
                       text("Still 3."))
    out = adk_chat(tmp_path, openai_server, ["count a b c", "and now?"], "--yes")
    assert "wire-model via " in out
    assert "It has 3 words." in out and "Still 3." in out
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
    out = adk_chat(tmp_path, openai_server, ["count a b c"], approve="n")  # asked: no
    assert "I could not count." in out
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
    ask = 'use word_count {"text": "one two three"}'
    chat(tmp_path, [str(example), "--yes"], [ask, ask])
    first, second = turns(sessions(tmp_path)[0])
    results = [calls_and_results(turn)[1] for turn in (first, second)]
    assert [json.loads(r.content) for [r] in results] == [
        {"result": "3 words (text 1 counted in this session)"},
        {"result": "3 words (text 2 counted in this session)"}]


def test_a_framework_error_is_one_line_and_the_chat_goes_on(openai_server: WireServer,
                                                            tmp_path: Path) -> None:
    openai_server.push(error(400, "bad request here"), text("Fine again."))
    shown = adk_chat(tmp_path, openai_server, ["hi", "again"])
    assert "Fine again." in shown
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
    out = chat(tmp_path, ["--config", str(config)], ["go"],
               environ=env(tmp_path, WIRE_URL=openai_server.url))
    assert "Done." in out, out
    [sent] = tool_messages(openai_server.bodies[1])
    assert json.loads(str(sent["content"])) == {
        "result": "3 words", "post_tool_use": "[PostToolUse hook: checked by the hook]"}
    [event] = [e for e in _log(tmp_path) if e["hook_event_name"] == "PostToolUse"]
    assert (event["tool_name"], event["tool_input"]) == ("word_count", {"text": "a b c"})
    assert event["tool_response"] == {"text": '{"result": "3 words"}', "status": "ok"}
    [turn] = turns(sessions(tmp_path)[0])
    _, [recorded] = calls_and_results(turn)
    assert recorded.content == sent["content"]
