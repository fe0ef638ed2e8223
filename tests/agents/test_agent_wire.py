"""An agent file with typed tools, driven through the CLI (piped) against the local Anthropic
and OpenAI wire servers: one definition sent in each provider's tool format, streamed tool
calls (several in one reply), arguments validated before the call, errors back to the model,
every call and result in the transcript."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from rollchat.storage.transcript import parse
from tests.e2e import clean_env, run_piped
from tests.wire_servers import WireServer, anthropic_server, openai_server, text, tool, tools

__all__ = ["anthropic_server", "openai_server"]  # the fixtures, imported for pytest

AGENT = '''
"""A test agent."""
import asyncio
from enum import Enum
from typing import Literal, Optional

name = "Forecaster"
system_prompt = "You forecast."
approval = "ask"
allow = ["forecast", "slow_*"]


class Unit(Enum):
    C = "celsius"
    F = "fahrenheit"


def forecast(city: str, days: int = 1, unit: Literal["c", "f"] = "c",
             note: Optional[str] = None) -> str:
    """Forecast the weather.

    Args:
        city: The city to forecast.
        days: How many days ahead.
        unit: Temperature unit.
        note: Anything to add.
    """
    return f"{city}: sunny for {days} day(s) in {unit}"


async def slow_echo(words: list[str]) -> str:
    """Echo words after a short wait.

    :param words: The words to echo.
    """
    await asyncio.sleep(0.01)
    return " ".join(words)


def explode(reason: str) -> str:
    """Fail on purpose.

    Parameters
    ----------
    reason
        Why it fails.
    """
    raise RuntimeError(reason)


tools = [forecast, slow_echo, explode]
'''


def run(server: WireServer, tmp_path: Path, lines: str, *args: str) -> tuple[str, str, int]:
    agent = tmp_path / "forecaster.py"
    agent.write_text(AGENT, encoding="utf-8")
    if server.url.endswith("/v1"):
        env, flags = clean_env(tmp_path / "home", OPENAI_API_KEY="test"), ["--provider",
                                                                           "openai"]
    else:
        env, flags = clean_env(tmp_path / "home", ANTHROPIC_API_KEY="test"), ["--provider",
                                                                              "anthropic"]
    done = run_piped(tmp_path, lines, str(agent), *flags, "--model", "test-model",
                     "--base-url", server.url, *args, env=env)
    return done.stdout, done.stderr, done.returncode


def specs(body: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Tool name -> its JSON schema, in either provider's format."""
    out = {}
    for t in body.get("tools", []):
        if "function" in t:  # OpenAI function tools
            assert t["type"] == "function"
            out[t["function"]["name"]] = {"description": t["function"]["description"],
                                          **t["function"]["parameters"]}
        else:  # Anthropic tools
            out[t["name"]] = {"description": t["description"], **t["input_schema"]}
    return out


def tool_results(body: dict[str, Any]) -> dict[str, str]:
    """Tool call id -> the result sent back, in either provider's format."""
    out = {}
    for m in body["messages"]:
        if m["role"] == "tool":
            out[m["tool_call_id"]] = m["content"]
        elif isinstance(m.get("content"), list):
            for b in m["content"]:
                if b.get("type") == "tool_result":
                    content = b["content"]
                    out[b["tool_use_id"]] = content if isinstance(content, str) else "".join(
                        c.get("text", "") for c in content)
    return out


@pytest.mark.parametrize("server_name", ["openai_server", "anthropic_server"])
def test_typed_tools_run_in_parallel_and_land_in_the_transcript(
        server_name: str, request: pytest.FixtureRequest, tmp_path: Path) -> None:
    server: WireServer = request.getfixturevalue(server_name)
    server.push(
        tools(("c1", "forecast", {"city": "Oslo", "days": 2}),
              ("c2", "slow_echo", {"words": ["a", "b"]}), text="Checking."),
        text("Oslo is sunny."),
    )
    out, err, code = run(server, tmp_path, "weather in Oslo?\n")
    assert code == 0, err
    first = server.bodies[0]
    schema = specs(first)
    # the file's order, then the archive tool (it reads back cut or shortened results) and
    # the memory's search
    assert list(schema) == ["forecast", "slow_echo", "explode", "session_archive_read",
                            "memory_search"]
    f = schema["forecast"]
    assert f["description"] == "Forecast the weather."
    assert f["required"] == ["city"]
    assert f["properties"]["city"] == {"type": "string", "description": "The city to forecast."}
    assert f["properties"]["days"] == {"type": "integer", "default": 1,
                                       "description": "How many days ahead."}
    assert f["properties"]["unit"]["enum"] == ["c", "f"]
    assert {"type": "null"} in f["properties"]["note"]["anyOf"]
    assert schema["slow_echo"]["properties"]["words"]["description"] == "The words to echo."
    assert schema["explode"]["properties"]["reason"]["description"] == "Why it fails."
    results = tool_results(server.bodies[1])
    assert results == {"c1": "Oslo: sunny for 2 day(s) in c", "c2": "a b"}
    # shown as they happen: name, compact arguments, then size and time
    assert '→ tool forecast({"city": "Oslo", "days": 2})' in out
    assert "← forecast: 29 chars in" in out and "← slow_echo: 3 chars in" in out
    [session] = (tmp_path / "sessions").glob("*.md")
    transcript = parse(session.read_text())
    assert transcript.header.agent == "Forecaster"
    assert transcript.header.agent_path == str((tmp_path / "forecaster.py").resolve())
    assert transcript.header.tools == ("forecast", "slow_echo", "explode")
    [turn] = transcript.turns
    assert [(t.call.name, t.result) for t in turn.tools] == [
        ("forecast", "Oslo: sunny for 2 day(s) in c"), ("slow_echo", "a b")]
    assert turn.status == "ok" and turn.assistant.endswith("Oslo is sunny.")


@pytest.mark.parametrize("server_name", ["openai_server", "anthropic_server"])
def test_bad_arguments_and_a_raising_tool_go_back_to_the_model(
        server_name: str, request: pytest.FixtureRequest, tmp_path: Path) -> None:
    server: WireServer = request.getfixturevalue(server_name)
    server.push(tool("forecast", {"city": 3, "days": "many", "extra": 1}, tool_id="c1"),
                tool("explode", {"reason": "no fuel"}, tool_id="c2"),
                text("Both failed."))
    out, err, code = run(server, tmp_path, "try\n", "--yes")
    assert code == 0, err
    bad = tool_results(server.bodies[1])["c1"]
    assert bad.startswith("error: invalid arguments:")
    assert "city: Input should be a valid string" in bad and "days:" in bad
    assert "extra: Extra inputs are not permitted" in bad
    assert tool_results(server.bodies[2])["c2"] == "error: RuntimeError: no fuel"
    assert "← explode: failed" in out
    [session] = (tmp_path / "sessions").glob("*.md")
    [turn] = parse(session.read_text()).turns
    assert [t.result.split(":")[0] for t in turn.tools] == ["error", "error"]


def test_a_tool_needing_approval_is_refused_when_piped(openai_server: WireServer,
                                                       tmp_path: Path) -> None:
    openai_server.push(tool("explode", {"reason": "x"}, tool_id="c1"), text("Understood."))
    out, err, code = run(openai_server, tmp_path, "go\n")
    assert code == 0, err
    result = tool_results(openai_server.bodies[1])["c1"]
    assert result.startswith("refused:") and "--yes" in result
    assert "← explode: refused:" in out


def test_show_tools_prints_full_arguments_and_results(openai_server: WireServer,
                                                      tmp_path: Path) -> None:
    openai_server.push(tool("forecast", {"city": "Rome", "note": "n" * 150}), text("ok"))
    out, err, code = run(openai_server, tmp_path, "go\n", "--show-tools")
    assert code == 0, err
    assert '"note": "' + "n" * 150 + '"' in out  # compact mode cuts arguments at 100
    assert "Rome: sunny for 1 day(s) in c" in out
    openai_server.push(tool("forecast", {"city": "Rome", "note": "n" * 150}), text("ok"))
    out, _, _ = run(openai_server, tmp_path, "go\n")
    assert "n" * 150 not in out and "…" in out


def test_request_prefix_is_stable_from_turn_to_turn(openai_server: WireServer,
                                                    tmp_path: Path) -> None:
    openai_server.push(text("one"), text("two"))
    run(openai_server, tmp_path, "first\nsecond\n")
    a, b = openai_server.bodies[:2]
    assert json.dumps(a["tools"]) == json.dumps(b["tools"])
    assert a["messages"][0] == b["messages"][0]  # the system prompt
