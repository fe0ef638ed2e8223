"""A whole chat through the command line (piped) on the Responses API against
tests/wire_responses.py: tool calls with reasoning, the reasoning items carried back in
order, each request starting with the previous one's input byte for byte, cached tokens in
the transcript, the transcript rebuilding the same input, and Ctrl-C mid-stream keeping
what was said (and the reasoning before it)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from rollchat.domain import ProviderBlock
from rollchat.engine.core import INTERRUPTED_NOTE, Engine, EngineSettings
from rollchat.engine.replay import turn_messages
from rollchat.events import Retrying
from rollchat.providers.base import RetryPolicy, TextDelta
from rollchat.providers.openai_responses import ResponsesProvider, input_items
from rollchat.storage.transcript import parse
from tests.drive import turn
from tests.e2e import clean_env, run_piped
from tests.wire_responses import ResponsesServer, calling, responses_server, said

__all__ = ["responses_server"]  # the fixture, imported for pytest

AGENT = '''
"""A test agent."""
name = "Forecaster"
system_prompt = "You forecast."
allow = ["forecast"]


def forecast(city: str) -> str:
    """Forecast the weather.

    Parameters
    ----------
    city
        The city to forecast.
    """
    return f"{city}: sunny"


tools = [forecast]
'''


def chat(server: ResponsesServer, tmp_path: Path, lines: str, *args: str) -> str:
    agent = tmp_path / "forecaster.py"
    agent.write_text(AGENT, encoding="utf-8")
    done = run_piped(tmp_path, lines, str(agent), "--model", "gpt-5-mini", "--base-url",
                     server.url, "--provider", "openai-responses", *args,
                     env=clean_env(tmp_path / "home", OPENAI_API_KEY="sk-test"))
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout + done.stderr


def dumped(items: list[dict[str, Any]]) -> list[str]:
    return [json.dumps(i, separators=(",", ":"), ensure_ascii=False) for i in items]


def test_a_chat_with_tools_carries_reasoning_and_keeps_its_prefix(
        responses_server: ResponsesServer, tmp_path: Path) -> None:
    responses_server.push(
        calling(("call_1", "forecast", {"city": "Rome"}), reasoning=True, input_tokens=300),
        said("Sunny in Rome.", reasoning=True, input_tokens=340, cached=256),
        said("Take a hat.", reasoning=True, input_tokens=380, cached=320))
    chat(responses_server, tmp_path, "weather in Rome?\nanything else?\n")
    first, second, third = responses_server.bodies()[:3]
    assert all(b["store"] is False for b in (first, second, third))
    # each request starts with the one before it, byte for byte
    assert dumped(second["input"])[:len(first["input"])] == dumped(first["input"])
    assert dumped(third["input"])[:len(second["input"])] == dumped(second["input"])
    assert json.dumps(first["tools"]) == json.dumps(third["tools"])
    assert first["instructions"] == third["instructions"]
    # the reasoning of the call comes back before the call, the answer's before the answer
    kinds = [i.get("type", i.get("role")) for i in third["input"]]
    assert kinds == ["user", "reasoning", "function_call", "function_call_output",
                     "reasoning", "message", "user"]
    assert [i.get("id") for i in third["input"][1:3]] == ["rs_0002", "fc_0003"]  # their ids
    assert third["input"][3]["output"] == "Rome: sunny"
    [session] = (tmp_path / "sessions").glob("*.md")
    text = session.read_text(encoding="utf-8")
    assert "cache read: 256" in text and "cache read: 320" in text
    one, two = parse(text).turns
    assert [b.type for b in one.blocks if isinstance(b, ProviderBlock)] == ["reasoning", "ids"] * 2
    # the transcript rebuilds the same input (a resumed or replayed context starts alike)
    rebuilt = input_items([m for t in (one, two) for m in turn_messages(t)], images=True)
    assert dumped(rebuilt)[:len(third["input"])] == dumped(third["input"])
    assert len(rebuilt) == len(third["input"]) + 2  # the second answer: reasoning, text


def test_a_reasoning_model_at_openai_is_told_in_the_banner(tmp_path: Path) -> None:
    done = run_piped(tmp_path, "", "--model", "o4-mini", "--no-save",
                     env=clean_env(tmp_path / "home", OPENAI_API_KEY="sk-test"))
    assert "o4-mini via openai-responses (OPENAI_API_KEY is set; o4-mini is a reasoning " \
           "model: the Responses API keeps its reasoning between turns)" in done.stdout


def test_ctrl_c_mid_stream_keeps_what_was_said_and_its_reasoning(
        responses_server: ResponsesServer) -> None:
    responses_server.push(said("One two three four five six.", reasoning=True))
    provider = ResponsesProvider("gpt-5-mini", api_key="sk-test", base_url=responses_server.url,
                                 timeout=10)
    engine = Engine(EngineSettings(provider, "gpt-5-mini", "Count.", 500, None,
                                   RetryPolicy(0, 0.0, 0.0)))

    def ctrl_c(event: object) -> None:
        if isinstance(event, TextDelta):
            raise KeyboardInterrupt

    first = turn(engine.chat("count"), ctrl_c)
    assert first.status == "interrupted" and first.assistant == "One two th"
    [reasoning] = [b for b in first.blocks if isinstance(b, ProviderBlock)]
    turn(engine.chat("go on"))
    sent = responses_server.bodies()[1]["input"]
    assert [i.get("type", i.get("role")) for i in sent] == ["user", "reasoning", "assistant",
                                                            "user"]
    assert sent[2]["content"] == f"One two th\n\n{INTERRUPTED_NOTE}"  # the model is told
    assert dumped([sent[1]]) == [reasoning.data]
    assert dumped(input_items(turn_messages(first), images=True)) == dumped(sent[:3])


def test_encrypted_items_the_server_cannot_verify_are_dropped_and_the_turn_goes_on(
        responses_server: ResponsesServer) -> None:
    """openai/codex#8119: a chat stuck for good on "The encrypted content ... could not be
    verified". Here the kept reasoning is dropped and the request sent again at once."""
    responses_server.push(said("Rome.", reasoning=True))
    provider = ResponsesProvider("gpt-5-mini", api_key="sk-test", base_url=responses_server.url,
                                 timeout=10)
    engine = Engine(EngineSettings(provider, "gpt-5-mini", "Answer.", 500, None,
                                   RetryPolicy(1, 0.0, 0.0)))
    turn(engine.chat("which city?"))
    responses_server.issued.clear()  # as after a change of key or organization
    seen: list[object] = []
    second = turn(engine.chat("why?"), seen.append)
    assert second.status == "ok" and second.assistant == "echo: why?"
    [retry] = [e for e in seen if isinstance(e, Retrying)]
    assert "could not be verified" in retry.error and "dropped" in retry.error
    refused, resent = responses_server.bodies()[1:3]
    assert "reasoning" in [i.get("type") for i in refused["input"]]
    assert [i.get("type", i.get("role")) for i in resent["input"]] == [
        "user", "message", "user"]
    turn(engine.chat("and then?"))  # dropped for good: the next turn goes without it too
    assert "reasoning" not in [i.get("type") for i in responses_server.bodies()[3]["input"]]
