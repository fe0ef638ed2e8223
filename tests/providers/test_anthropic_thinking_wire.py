"""Anthropic thinking on the wire, through the real anthropic SDK, against a local Messages
server holding requests to the documented rules (tests/wire_thinking.py): a model that thinks by
default answers with signed thinking before tool_use, and a tool turn whose thinking is missing
or altered is refused with HTTP 400."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from rollchat.config.fields import parse_thinking
from rollchat.domain import Message, ProviderBlock, Thinking, ToolCall
from rollchat.engine.core import Engine, EngineSettings, ModelRefused
from rollchat.engine.replay import turn_messages
from rollchat.providers.anthropic import AnthropicProvider, request_params, thinking_params
from rollchat.providers.base import (
    BadRequestError,
    ChatRequest,
    Done,
    RetryPolicy,
    ThinkingDelta,
    ToolCallEvent,
    ToolSpec,
)
from rollchat.providers.names import ANTHROPIC, DEFAULT_MODELS
from rollchat.storage.transcript import parse
from rollchat.tools import Tool
from tests.cli.test_oneshot_wire import model_calls, run
from tests.drive import drain
from tests.wire_servers import AnthropicDialect, WireServer, anthropic_server, text, tool
from tests.wire_thinking import REDACTED, sign

__all__ = ["anthropic_server"]  # the fixture, imported for pytest


@pytest.fixture
def thinker() -> Iterator[WireServer]:
    """A Messages server whose model thinks by default (adaptive thinking)."""
    with WireServer(AnthropicDialect(thinks=True)) as server:
        yield server


def test_a_tool_loop_on_a_model_that_thinks_by_default_passes_end_to_end(
        thinker: WireServer, tmp_path: Path) -> None:
    """The bug of issue 34: the thinking was dropped, so the request carrying the tool's result
    was refused (400, "Expected `thinking` or `redacted_thinking`, but found `tool_use`")."""
    thinker.push(tool("count_words", {"text": "one two three"}, tool_id="c1",
                      thought="I should count them with the tool.", redacted=True),
                 text("Three words.", thought="The tool said 3."))
    done = run(thinker, tmp_path, "-p", "count them", "--output-format", "stream-json")
    assert done.returncode == 0, done.stderr + done.stdout
    assert thinker.rejected == []
    events = [json.loads(line) for line in done.stdout.splitlines()]
    thought = "".join(e["text"] for e in events if e["type"] == "thinking")
    assert "I should count them with the tool." in thought and "The tool said 3." in thought
    assert events[-1]["answer"] == "Three words."  # the thinking is not the answer
    second = model_calls(thinker)[1]["messages"]
    assistant = second[1]["content"]
    assert [b["type"] for b in assistant] == ["thinking", "redacted_thinking", "tool_use"]
    assert assistant[0] == {"type": "thinking", "thinking": "I should count them with the tool.",
                            "signature": sign("I should count them with the tool.")}
    assert assistant[1] == {"type": "redacted_thinking", "data": REDACTED}
    # the transcript keeps it: readable thinking, and the blocks sent back, byte for byte
    [turn] = parse(Path(events[-1]["session_path"]).read_text(encoding="utf-8")).turns
    assert [b.text for b in turn.blocks if isinstance(b, Thinking)] == [
        "I should count them with the tool.", "The tool said 3."]
    assert turn.assistant == "Three words."
    replayed = turn_messages(turn)
    assert [json.loads(b.data) for b in replayed[1].extra] == assistant[:2]


def test_the_server_refuses_a_tool_turn_without_its_thinking(thinker: WireServer) -> None:
    """What today's code sent: the assistant's tool_use with no thinking before it."""
    call = ToolCall("c1", "search", {"q": "x"})
    messages = (Message("user", "find x"), Message("assistant", "", tool_calls=(call,)),
                Message("tool", "found", tool_call_id="c1", name="search"))
    p = AnthropicProvider("claude-opus-4-7", api_key="k", base_url=thinker.url, timeout=5)
    with pytest.raises(BadRequestError, match="Expected `thinking` or `redacted_thinking`, "
                                              "but found `tool_use`"):
        list(p.stream(ChatRequest("claude-opus-4-7", "", messages)))
    altered = json.dumps({"type": "thinking", "thinking": "changed", "signature": sign("x")})
    messages = (messages[0], replace(messages[1], extra=(
        ProviderBlock("anthropic", "thinking", altered),)), messages[2])
    with pytest.raises(BadRequestError, match="Invalid `signature` in `thinking` block"):
        list(p.stream(ChatRequest("claude-opus-4-7", "", messages)))


def test_thinking_streams_as_deltas_and_comes_back_as_a_provider_block(
        thinker: WireServer) -> None:
    thinker.push(tool("search", {"q": "x"}, thought="Search first."))
    p = AnthropicProvider("claude-opus-4-7", api_key="k", base_url=thinker.url, timeout=5)
    # thinking on (its display asked for: "omitted" by default on claude-opus-4-7)
    events = list(p.stream(ChatRequest("claude-opus-4-7", "", (Message("user", "find x"),),
                                       thinking="on")))
    assert "".join(e.text for e in events if isinstance(e, ThinkingDelta)) == "Search first."
    [block] = [e for e in events if isinstance(e, ProviderBlock)]
    assert json.loads(block.data) == {"type": "thinking", "thinking": "Search first.",
                                      "signature": sign("Search first.")}
    kinds = [type(e).__name__ for e in events]
    assert kinds.index("ProviderBlock") < kinds.index("ToolCallEvent")
    assert isinstance(events[-1], Done) and events[-1].stop_reason == "tool_use"
    assert any(isinstance(e, ToolCallEvent) for e in events)


SHOWN = {"display": "summarized"}  # thinking asked for is shown (its text returned)


@pytest.mark.parametrize(("model", "setting", "expected"), [
    ("claude-sonnet-4-5", None, {}),
    ("claude-sonnet-4-5", "on", {"thinking": {"type": "enabled", "budget_tokens": 8192,
                                              **SHOWN}}),
    ("claude-sonnet-4-5", 2048, {"thinking": {"type": "enabled", "budget_tokens": 2048,
                                              **SHOWN}}),
    ("claude-sonnet-4-5", "off", {"thinking": {"type": "disabled"}}),
    ("claude-opus-4-6", "on", {"thinking": {"type": "adaptive", **SHOWN}}),
    ("claude-opus-4-6", 20000, {"thinking": {"type": "adaptive", **SHOWN},
                                "output_config": {"effort": "high"}}),
    ("claude-opus-4-7", None, {}),  # does not think unless asked
    ("claude-opus-4-7", "off", {"thinking": {"type": "disabled"}}),
    ("claude-opus-5", "off", {"thinking": {"type": "disabled"}}),
    # the default model thinks by default, its display "omitted" by default: asked for
    ("claude-sonnet-5-5", None, {"thinking": {"type": "adaptive", **SHOWN}}),
    ("claude-sonnet-5-5", "off", {"thinking": {"type": "between_tools"}}),
    ("claude-opus-5-5", "off", {"thinking": {"type": "adaptive", **SHOWN},
                                "output_config": {"effort": "low"}}),
    ("claude-fable-5-1", "off", {"thinking": {"type": "adaptive", **SHOWN},
                                 "output_config": {"effort": "low"}}),
])
def test_thinking_settings_become_the_models_parameters(model: str, setting: object,
                                                        expected: dict[str, object]) -> None:
    assert thinking_params(model, setting, 16000) == expected  # type: ignore[arg-type]


def test_a_budget_above_max_tokens_raises_it_and_drops_the_temperature() -> None:
    params = request_params(ChatRequest("claude-sonnet-4-5", "", (Message("user", "hi"),),
                                        max_output_tokens=4096, temperature=0.2,
                                        thinking=10000))
    assert params["thinking"] == {"type": "enabled", "budget_tokens": 10000, **SHOWN}
    assert params["max_tokens"] > 10000  # the API wants budget_tokens < max_tokens
    assert "extra_body" not in params  # temperature is refused with thinking


def _engine(server: WireServer, model: str = "claude-opus-4-7") -> Engine:
    provider = AnthropicProvider(model, api_key="k", base_url=server.url, timeout=5)
    return Engine(EngineSettings(provider, model=model, system="sys", max_output_tokens=1000,
                                 temperature=None, retry=RetryPolicy(max_retries=0),
                                 sleep=lambda s: None))


def test_a_refusal_is_shown_as_one_and_left_out_of_the_context(
        anthropic_server: WireServer) -> None:
    """stop_reason refusal: not a normal answer; the refused exchange is not sent again."""
    anthropic_server.push(text("I can't help with", stop="refusal"), text("Sure."))
    engine = _engine(anthropic_server)
    answer = drain(engine.chat("something bad"))
    assert answer.turn.status == "unanswered" and isinstance(answer.error, ModelRefused)
    assert "refus" in (answer.turn.error or "")
    assert answer.turn.assistant == "I can't help with"  # kept in the transcript
    drain(engine.chat("something else"))
    sent = anthropic_server.bodies[-1]["messages"]
    assert [m["role"] for m in sent] == ["user"]  # the refused exchange is not sent back
    assert "something bad" not in json.dumps(sent)


def test_pause_turn_is_continued_with_the_content_so_far(thinker: WireServer) -> None:
    """stop_reason pause_turn: the assistant content so far (its thinking too) is sent back as
    it came and the model goes on; one answer, one text."""
    thinker.push(text("First half, ", stop="pause_turn", thought="Long task."),
                 text("second half."))
    engine = _engine(thinker)
    answer = drain(engine.chat("go"))
    assert answer.turn.status == "ok" and answer.turn.assistant == "First half, second half."
    again = thinker.bodies[1]["messages"]
    assert again[-1]["role"] == "assistant"
    assert [b["type"] for b in again[-1]["content"]] == ["thinking", "text"]
    assert again[-1]["content"][1]["text"] == "First half, "
    assert thinker.rejected == []


def test_thinking_set_in_the_chat_goes_on_the_next_request(anthropic_server: WireServer) -> None:
    engine = _engine(anthropic_server, "claude-sonnet-4-5")
    drain(engine.chat("one"))
    engine.think(parse_thinking("4096"))
    drain(engine.chat("two"))
    engine.think(parse_thinking("off"))
    drain(engine.chat("three"))
    assert [b.get("thinking") for b in anthropic_server.bodies] == [
        None, {"type": "enabled", "budget_tokens": 4096, **SHOWN}, {"type": "disabled"}]
    with pytest.raises(ValueError, match="at least 1,024"):
        parse_thinking("100")


def test_thinking_sent_back_is_counted_in_the_estimate() -> None:
    from rollchat.models.tokens import TokenCounter

    signed = json.dumps({"type": "thinking", "thinking": "a long thought " * 50,
                         "signature": sign("a long thought " * 50)})
    bare = Message("assistant", "ok", tool_calls=(ToolCall("c1", "search", {}),))
    thought = replace(bare, extra=(ProviderBlock("anthropic", "thinking", signed),))
    counter = TokenCounter("claude-sonnet-4-5")
    assert counter.count_message(thought) >= counter.count_message(bare) + 100


def test_a_refusal_in_a_one_shot_run_is_an_error_not_an_answer(anthropic_server: WireServer,
                                                               tmp_path: Path) -> None:
    anthropic_server.push(text("I can't", stop="refusal"))
    done = run(anthropic_server, tmp_path, "-p", "something bad", "--output-format", "json")
    result = json.loads(done.stdout)
    assert done.returncode == 3 and result["stop_reason"] == "error"
    assert result["error"].startswith("refused: the model declined to answer")
    assert "refused: the model declined" in done.stderr


@pytest.mark.parametrize(("model", "sent"), [
    ("claude-opus-5-5", {"type": "adaptive", **SHOWN}),
    ("claude-fable-5", {"type": "adaptive", **SHOWN}),
    ("claude-mythos-5", {"type": "adaptive", **SHOWN}),
    ("claude-sonnet-5-5", {"type": "between_tools"}),
    ("claude-opus-5", {"type": "disabled"}),
])
def test_thinking_off_sends_what_each_model_takes(anthropic_server: WireServer,
                                                  model: str, sent: dict[str, str]) -> None:
    """The server holds the documented rule: a model whose thinking cannot be disabled refuses
    ``{"type": "disabled"}`` (HTTP 400, '"thinking.type.disabled" is not supported for this
    model'); Sonnet 5.5 refuses it too, pointing to between_tools. ``thinking off`` sends
    what each takes, and the chat goes on."""
    anthropic_server.push(text("Fine."))
    engine = _engine(anthropic_server, model)
    engine.think(parse_thinking("off"))
    answer = drain(engine.chat("hello"))
    assert answer.turn.status == "ok", answer.turn.error
    assert anthropic_server.rejected == []
    body = anthropic_server.bodies[-1]
    assert body["thinking"] == sent
    if sent["type"] == "adaptive":
        assert body["output_config"] == {"effort": "low"}


def test_the_server_refuses_disabled_where_the_docs_say_so(anthropic_server: WireServer) -> None:
    """What rollchat sent before, through the SDK as it is: ``disabled`` to a model that is
    always thinking, and to Sonnet 5.5."""
    import anthropic

    client = anthropic.Anthropic(api_key="k", base_url=anthropic_server.url, max_retries=0)
    for model, said in (("claude-opus-5-5", '"thinking.type.disabled" is not supported for '
                                            "this model"),
                        ("claude-sonnet-5-5", "between_tools")):
        with pytest.raises(anthropic.BadRequestError, match=said):
            client.messages.create(model=model, max_tokens=100, thinking={"type": "disabled"},
                                   messages=[{"role": "user", "content": "hi"}])


# ---------------------------------------------------------------- thinking display


def test_the_default_models_thinking_is_shown_between_tool_calls(thinker: WireServer) -> None:
    """claude-sonnet-5-5 thinks by default with its display "omitted" by default: the server
    then returns the thinking blocks empty (the signature only), and the user saw nothing
    between tool calls. rollchat asks for display "summarized", so the text streams."""
    model = DEFAULT_MODELS[ANTHROPIC]
    thinker.push(tool("search", {"q": "x"}, tool_id="c1", thought="Search for x first."),
                 text("Found it.", thought="The search found x."))
    read = Tool(ToolSpec("search", "Search.", {"type": "object", "properties": {
        "q": {"type": "string"}}}), lambda args: "x is here", read_only=True)
    provider = AnthropicProvider(model, api_key="k", base_url=thinker.url, timeout=5)
    engine = Engine(EngineSettings(provider, model=model, system="sys", max_output_tokens=1000,
                                   temperature=None, retry=RetryPolicy(max_retries=0),
                                   sleep=lambda s: None, tools=(read,)))
    events: list[object] = []
    answer = drain(engine.chat("find x"), events.append)
    assert thinker.rejected == [] and answer.turn.status == "ok", answer.turn.error
    shown = "".join(e.text for e in events if isinstance(e, ThinkingDelta))
    assert shown == "Search for x first.The search found x."
    assert [b.text for b in answer.turn.blocks if isinstance(b, Thinking)] == [
        "Search for x first.", "The search found x."]
    assert all(b["thinking"] == {"type": "adaptive", "display": "summarized"}
               for b in thinker.bodies)
    sent_back = thinker.bodies[1]["messages"][1]["content"][0]
    assert sent_back["type"] == "thinking" and sent_back["thinking"] == "Search for x first."


def test_the_server_omits_the_thinking_text_where_the_model_omits_it_by_default(
        thinker: WireServer) -> None:
    """The documented rule the server holds: with display omitted (asked, or the model's
    default) the block comes with empty thinking and a signature, which is taken back as it
    came; with summarized its text comes; display goes only with adaptive or enabled."""
    import anthropic  # (here: at the top it cost each worker's collection 1.4 s, 9 s cold)

    client = anthropic.Anthropic(api_key="k", base_url=thinker.url, max_retries=0)
    ask: dict[str, Any] = {"max_tokens": 100, "messages": [{"role": "user", "content": "hi"}]}

    def first_block(**kw: Any) -> Any:
        thinker.push(text("a", thought="Hm."))
        with client.messages.stream(**ask, **kw) as stream:
            return stream.get_final_message().content

    omitted = first_block(model="claude-sonnet-5-5")
    assert omitted[0].type == "thinking" and omitted[0].thinking == ""
    assert omitted[0].signature
    assert first_block(model="claude-opus-4-6", thinking={
        "type": "adaptive", "display": "omitted"})[0].thinking == ""
    assert first_block(model="claude-sonnet-5-5", thinking={
        "type": "adaptive", "display": "summarized"})[0].thinking == "Hm."
    assert first_block(model="claude-sonnet-4-6")[0].thinking == "Hm."  # summarized by default
    back = [*ask["messages"],
            {"role": "assistant", "content": [b.model_dump(exclude_none=True)
                                              for b in omitted]},
            {"role": "user", "content": "and?"}]
    thinker.push(text("e"))
    client.messages.create(model="claude-sonnet-5-5", max_tokens=100, messages=back)
    assert thinker.rejected == []
    with pytest.raises(anthropic.BadRequestError, match="Extra inputs are not permitted"):
        client.messages.create(model="claude-sonnet-5-5", max_tokens=100, messages=back,
                               extra_body={"thinking": {"type": "between_tools",
                                                        "display": "summarized"}})
