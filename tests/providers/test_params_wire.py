"""Each request carries only the parameters its model takes (providers/model_params.py), through the
real SDKs against the local wire servers, which answer a parameter the model does not take
with the provider's documented HTTP 400 (tests/wire_servers.param_refusal)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rollchat.domain import Message, ThinkingSetting
from rollchat.providers.anthropic import AnthropicProvider
from rollchat.providers.base import ChatRequest, Done, TextDelta, ToolSpec
from rollchat.providers.model_params import family_of, fitted
from rollchat.providers.openai import OpenAIProvider
from rollchat.providers.refused import REFUSED
from tests.compaction.test_compact_resume_wire import rollchat
from tests.memory.test_memory_wire import FACTS
from tests.wire_servers import WireServer, anthropic_server, openai_server, text

__all__ = ["anthropic_server", "openai_server"]


def ask(provider: OpenAIProvider | AnthropicProvider, temperature: float | None) -> str:
    request = ChatRequest(model=provider.model, system="be brief",
                          messages=(Message("user", "hi"),), temperature=temperature)
    events = list(provider.stream(request))
    assert isinstance(events[-1], Done)
    return "".join(e.text for e in events if isinstance(e, TextDelta))


def test_the_table_says_what_each_family_takes() -> None:
    assert family_of("gpt-5-mini").name == "openai-reasoning"
    assert family_of("openai/o4-mini").name == "openai-reasoning"
    assert family_of("gpt-5-chat-latest").sampling
    assert family_of("claude-opus-4-7-20260416").name == "claude-sampling-removed"
    assert family_of("claude-sonnet-4-5-20250929").one_sampler
    params = {"temperature": 0.2, "top_p": 0.9, "reasoning_effort": "low", "max_tokens": 5}
    assert fitted(params, "gpt-5") == {"reasoning_effort": "low", "max_tokens": 5}
    assert fitted(params, "claude-sonnet-4-6") == {"temperature": 0.2, "max_tokens": 5}
    assert fitted(params, "gpt-4.1") == {"temperature": 0.2, "top_p": 0.9, "max_tokens": 5}
    assert fitted(params, "llama3") == params  # unknown: sent, a refusal is learned
    assert fitted({"extra_body": {"temperature": 0}}, "claude-opus-4-7") == {}
    # the current models (see model_params' sources): reasoning, no sampling
    for model in ("gpt-5.5", "gpt-5.4-mini", "gpt-5.4-nano", "gpt-5.1", "gpt-6-luna"):
        assert fitted(params, model) == {"reasoning_effort": "low", "max_tokens": 5}, model
    for model in ("claude-fable-5-1", "claude-opus-5-5", "claude-sonnet-5-5"):
        assert fitted(params, model) == {"max_tokens": 5}, model


def test_gpt5_gets_no_temperature_and_its_output_limit_by_its_name(
        openai_server: WireServer) -> None:
    provider = OpenAIProvider("gpt-5-mini", api_key="k", base_url=openai_server.url,
                              timeout=5)
    openai_server.push(text("one"), text("two"))
    assert ask(provider, 0.0) == "one"
    # the compatible server's max_tokens was refused once, then sent by its new name
    assert [json.loads(json.dumps(b)).get("max_tokens") for b in openai_server.refused_params
            ] == [4096]
    assert ask(provider, 0.0) == "two"
    assert len(openai_server.refused_params) == 1  # remembered: not refused again
    for body in openai_server.bodies:
        assert "temperature" not in body and "max_tokens" not in body
        assert body["max_completion_tokens"] == 4096


def test_claude_opus_4_7_gets_no_temperature_and_sonnet_4_5_keeps_it(
        anthropic_server: WireServer) -> None:
    opus = AnthropicProvider("claude-opus-4-7", api_key="k", base_url=anthropic_server.url,
                             timeout=5)
    sonnet = AnthropicProvider("claude-sonnet-4-5", api_key="k",
                               base_url=anthropic_server.url, timeout=5)
    anthropic_server.push(text("opus"), text("sonnet"))
    assert ask(opus, 0.0) == "opus"
    assert ask(sonnet, 0.3) == "sonnet"
    assert anthropic_server.refused_params == []
    assert "temperature" not in anthropic_server.bodies[0]
    assert anthropic_server.bodies[1]["temperature"] == 0.3


def test_a_refused_parameter_is_dropped_once_and_remembered_for_the_model(
        anthropic_server: WireServer) -> None:
    model = "claude-opus-4-8"  # not in the table: the server's refusal teaches it
    REFUSED.clear()
    provider = AnthropicProvider(model, api_key="k", base_url=anthropic_server.url, timeout=5)
    anthropic_server.push(text("first"), text("second"))
    assert ask(provider, 0.5) == "first"
    assert [b["temperature"] for b in anthropic_server.refused_params] == [0.5]
    assert ask(provider, 0.5) == "second"
    assert len(anthropic_server.refused_params) == 1
    assert all("temperature" not in b for b in anthropic_server.bodies)
    assert "temperature" in REFUSED.of(model, anthropic_server.url)


def test_another_bad_request_is_not_retried(openai_server: WireServer) -> None:
    from rollchat.providers.base import BadRequestError
    from tests.wire_servers import error

    provider = OpenAIProvider("gpt-4.1", api_key="k", base_url=openai_server.url, timeout=5)
    openai_server.push(error(400, "Invalid 'messages': empty", error_type="invalid_request_error",
                             code="invalid_value", param="messages"))
    with pytest.raises(BadRequestError):
        ask(provider, 0.2)
    assert len(openai_server.requests) == 1


@pytest.mark.parametrize(("server_name", "model"), [("openai_server", "gpt-5-mini"),
                                                    ("anthropic_server", "claude-opus-4-7")])
def test_memory_extraction_works_on_models_that_take_no_temperature(
        server_name: str, model: str, request: pytest.FixtureRequest, tmp_path: Path) -> None:
    server: WireServer = request.getfixturevalue(server_name)
    server.extraction_reply = json.dumps(FACTS)
    server.push(text("Rabbitmq is a fine choice."))
    out, err, code = rollchat(server, tmp_path, "I'd pick rabbitmq for job queues\nexit\n",
                              "--trust-input", "--model", model)
    assert code == 0, err
    assert "Remembered: prefers rabbitmq for job queues" in out
    assert "no facts extracted" not in out + err
    assert server.extractions and all("temperature" not in b for b in server.extractions)


def ask_thinking(provider: OpenAIProvider, thinking: ThinkingSetting) -> str:
    request = ChatRequest(model=provider.model, system="be brief",
                          messages=(Message("user", "hi"),), thinking=thinking)
    return "".join(e.text for e in provider.stream(request) if isinstance(e, TextDelta))


@pytest.mark.parametrize(("model", "thinking", "effort"), [
    ("gpt-5-mini", 1000, "low"), ("gpt-5-mini", 20_000, "high"), ("gpt-5-mini", "on", "medium"),
    ("gpt-5-mini", "off", "minimal"), ("gpt-5.1", "off", "none"), ("o4-mini", "off", "low"),
    ("gpt-5.2", 8000, "medium"), ("openai/o3", "on", "medium"), ("gpt-5.5", "off", "none"),
    ("gpt-5.4-mini", "on", "medium"), ("gpt-5.4-nano", "off", "none"),
    ("gpt-6-sol", "off", "none"), ("gpt-5.6-sol", "off", "none"), ("gpt-5.6-luna", "on", "medium"),
    ("gpt-6.2-sol", "off", "low"), ("gpt-6-sol", 60_000, "high")])
def test_chat_completions_sends_the_thinking_setting_as_reasoning_effort(
        model: str, thinking: ThinkingSetting, effort: str, openai_server: WireServer) -> None:
    """Each value is one the model takes: the server (OpenAI's documented 400 for an effort a
    model does not take) refuses none of them."""
    provider = OpenAIProvider(model, api_key="k", base_url=openai_server.url, timeout=5)
    openai_server.push(text("ok"))
    assert ask_thinking(provider, thinking) == "ok"
    # refused only for max_tokens (a compatible server's name, learned as in the test above)
    assert all("max_tokens" in b for b in openai_server.refused_params)
    assert openai_server.bodies[-1]["reasoning_effort"] == effort


READ = ToolSpec("read_file", "Read a file.", {"type": "object", "properties": {
    "path": {"type": "string"}}, "required": ["path"]})


@pytest.mark.parametrize("thinking", [None, "on", 8000])
def test_gpt_6_sol_with_tools_on_chat_completions_is_sent_effort_none(
        thinking: ThinkingSetting, openai_server: WireServer) -> None:
    """gpt-6-sol calls functions through Chat Completions only with reasoning_effort none (its
    developers.openai.com page; the server refuses tools with any other effort, its default
    medium included): with tools the request says none, whatever the thinking setting."""
    provider = OpenAIProvider("gpt-6-sol", api_key="k", base_url=openai_server.url, timeout=5)
    openai_server.push(text("ok"))
    request = ChatRequest(model="gpt-6-sol", system="be brief", messages=(Message("user", "hi"),),
                          thinking=thinking, tools=(READ,))
    events = list(provider.stream(request))
    assert isinstance(events[-1], Done)
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "ok"
    body = openai_server.bodies[-1]
    assert body["reasoning_effort"] == "none"
    assert body["tools"][0]["function"]["name"] == "read_file"


def test_the_server_refuses_gpt_6_sol_tools_with_reasoning_and_other_models_keep_theirs(
        openai_server: WireServer) -> None:
    """The rule the test above passes: without none the tools are refused (HTTP 400); on
    gpt-5.6-sol (no such rule on its page) the thinking setting goes with the tools."""
    from openai import BadRequestError, OpenAI

    client = OpenAI(api_key="k", base_url=openai_server.url, max_retries=0, timeout=5)
    tool = {"type": "function", "function": {"name": "read_file", "parameters": {}}}
    with pytest.raises(BadRequestError, match="reasoning_effort"):
        client.chat.completions.create(model="gpt-6-sol", messages=[{"role": "user",
                                                                    "content": "hi"}],
                                       tools=[tool])  # type: ignore[list-item]
    provider = OpenAIProvider("gpt-5.6-sol", api_key="k", base_url=openai_server.url, timeout=5)
    openai_server.push(text("ok"))
    request = ChatRequest(model="gpt-5.6-sol", system="be brief",
                          messages=(Message("user", "hi"),), thinking="on", tools=(READ,))
    assert isinstance(list(provider.stream(request))[-1], Done)
    assert openai_server.bodies[-1]["reasoning_effort"] == "medium"


@pytest.mark.parametrize("model", ["gpt-4.1", "gpt-4o-mini", "gpt-5-chat-latest", "gpt-5-pro"])
def test_a_model_without_reasoning_effort_is_sent_none_for_any_setting(
        model: str, openai_server: WireServer) -> None:
    provider = OpenAIProvider(model, api_key="k", base_url=openai_server.url, timeout=5)
    for setting in ("on", "off", 4000):
        openai_server.push(text("ok"))
        assert ask_thinking(provider, setting) == "ok"
    assert all("max_tokens" in b for b in openai_server.refused_params)
    assert all("reasoning_effort" not in b for b in openai_server.bodies)


def test_no_thinking_setting_sends_no_effort(openai_server: WireServer) -> None:
    provider = OpenAIProvider("gpt-5", api_key="k", base_url=openai_server.url, timeout=5)
    openai_server.push(text("ok"))
    assert ask_thinking(provider, None) == "ok"
    assert "reasoning_effort" not in openai_server.bodies[-1]


def test_a_refused_parameter_is_not_sent_again_by_the_next_run(openai_server: WireServer,
                                                               tmp_path: Path) -> None:
    """gpt-5-mini behind a compatible server (a proxy) refuses max_tokens: the first run pays
    the refused request once, the second none (providers/refused.py, beside windows.json)."""
    openai_server.push(text("first answer"))
    out, err, code = rollchat(openai_server, tmp_path, "hello\nexit\n", "--model", "gpt-5-mini")
    assert code == 0, err
    assert "first answer" in out
    refused = list(openai_server.refused_params)
    assert refused and all("max_tokens" in b for b in refused)
    [saved] = (tmp_path / "home").rglob("refused_params.json")
    entry = json.loads(saved.read_text())["models"][f"{openai_server.url} gpt-5-mini"]
    assert entry["params"] == ["max_tokens"]
    assert saved.stat().st_mode & 0o077 == 0

    openai_server.push(text("second answer"))
    out, err, code = rollchat(openai_server, tmp_path, "again\nexit\n", "--model", "gpt-5-mini")
    assert code == 0, err
    assert "second answer" in out
    assert openai_server.refused_params == refused  # the second run was refused nothing
    assert openai_server.bodies[-1]["max_completion_tokens"] > 0


def test_what_another_process_learns_does_not_change_this_runs_requests(tmp_path: Path) -> None:
    """The file is read once per server and model: a refusal written by another rollchat
    meanwhile leaves this run's parameters (its request prefix) as they began."""
    from rollchat.providers.refused import Refused

    path = tmp_path / "refused_params.json"
    ours, other = Refused(lambda: path), Refused(lambda: path)
    assert ours.of("gpt-5", "http://proxy/v1") == frozenset()
    other.add("gpt-5", "temperature", "http://proxy/v1")
    assert ours.of("gpt-5", "http://proxy/v1") == frozenset()  # this run goes on unchanged
    assert Refused(lambda: path).of("gpt-5", "http://proxy/v1") == {"temperature"}  # next run
    ours.add("gpt-5", "top_p", "http://proxy/v1")  # both kept in the file
    assert Refused(lambda: path).of("gpt-5", "http://proxy/v1") == {"temperature", "top_p"}
    assert Refused(lambda: path).of("gpt-5", "http://other/v1") == frozenset()
    path.write_text("{not json")
    assert Refused(lambda: path).of("gpt-5", "http://proxy/v1") == frozenset()  # unreadable
