"""Preserved thinking on the wire (issue 34): on the models that bind a thinking block to
everything before it (claude-sonnet-5-5, the default, and the others the docs list), the local
Messages server refuses a block whose prefix changed, with the API's 400 ("The block is bound
to a different conversation"), unless the request asks for such blocks to be dropped
(tests/wire_thinking.py). rollchat keeps those requests append-only: older tool results are
not shortened between compactions."""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from typing import Any

import pytest

from rollchat.domain import Message, ToolCall
from rollchat.engine.context import WorkingContext
from rollchat.engine.core import Engine, EngineSettings
from rollchat.providers.anthropic import AnthropicProvider
from rollchat.providers.base import RetryPolicy, ToolSpec
from rollchat.providers.names import ANTHROPIC, DEFAULT_MODELS, binds_thinking
from rollchat.tools import Tool
from tests.drive import drain
from tests.wire_servers import AnthropicDialect, WireServer, text, tool
from tests.wire_thinking import BINDING_BETA, BOUND, issued_signature, unmarked

MODEL = DEFAULT_MODELS[ANTHROPIC]
PAGE = "line of a long file\n" * 400  # a result big enough to be worth shortening


@pytest.fixture
def thinker() -> Iterator[WireServer]:
    """A Messages server whose model thinks by default (adaptive thinking)."""
    with WireServer(AnthropicDialect(thinks=True)) as server:
        yield server


def _engine(server: WireServer, model: str) -> Engine:
    provider = AnthropicProvider(model, api_key="k", base_url=server.url, timeout=5)
    read = Tool(ToolSpec("read_file", "Read a file.", {"type": "object", "properties": {
        "path": {"type": "string"}}}), lambda args: f"{args['path']}:\n{PAGE}", read_only=True)
    # the engine's own context: older results shortened as soon as more than two are whole
    return Engine(EngineSettings(provider, model=model, system="sys", max_output_tokens=1000,
                                 temperature=None, retry=RetryPolicy(max_retries=0),
                                 sleep=lambda s: None, tools=(read,)),
                  context=WorkingContext("sys"))


def _reads(n: int) -> list[Any]:
    return [tool("read_file", {"path": f"f{k}.txt"}, tool_id=f"c{k}") for k in range(n)]


def test_the_default_model_binds_its_thinking() -> None:
    assert binds_thinking(MODEL) and MODEL.startswith(BOUND)
    assert all(binds_thinking(m) for m in BOUND)
    assert not binds_thinking("claude-opus-4-7") and not binds_thinking("claude-sonnet-4-6")


def test_a_tool_heavy_turn_on_the_default_model_keeps_its_requests_append_only(
        thinker: WireServer) -> None:
    """The bug: the third result shortened the first (WorkingContext.append), so the thinking
    after it was bound to a different conversation and the next request got HTTP 400."""
    thinker.push(*_reads(5), text("Read them all."))
    engine = _engine(thinker, MODEL)
    answer = drain(engine.chat("read five files"))
    assert thinker.rejected == [], thinker.rejected[0].body["messages"][-1]
    assert answer.error is None and answer.turn.assistant == "Read them all."
    bodies = thinker.bodies
    assert len(bodies) == 6
    for before, after in itertools.pairwise(bodies):  # each starts with the previous one
        sent = unmarked(before["messages"])  # (its cache breakpoint moves on: not content)
        assert unmarked(after["messages"][:len(sent)]) == sent
    results = [b for m in bodies[-1]["messages"] if m["role"] == "user"
               for b in m["content"] if isinstance(b, dict) and b.get("type") == "tool_result"]
    assert len(results) == 5 and all(PAGE in str(r["content"]) for r in results)


def test_a_model_that_does_not_bind_its_thinking_still_gets_older_results_shortened(
        thinker: WireServer) -> None:
    thinker.push(*_reads(5), text("Read them all."))
    engine = _engine(thinker, "claude-opus-4-7")
    drain(engine.chat("read five files"))
    assert thinker.rejected == []
    assert "result shortened to save context" in json.dumps(thinker.bodies[-1]["messages"])


def test_the_context_shortens_at_compaction_what_it_kept_whole() -> None:
    """Append-only between compactions; a compaction (``reset``) is where results shrink."""
    context = WorkingContext("sys")
    for k in range(4):
        call = ToolCall(f"c{k}", "read_file", {"path": f"f{k}"})
        context.append(Message("assistant", "", tool_calls=(call,)), append_only=True)
        context.append(Message("tool", PAGE, tool_call_id=f"c{k}", name="read_file"),
                       append_only=True)
    assert all(m.content == PAGE for m in context.messages if m.role == "tool")
    context.reset([Message("user", "go"), *context.messages], prefix_len=0)
    assert sum(m.content == PAGE for m in context.messages if m.role == "tool") == 2


# ---------------------------------------------------------------- the server's rules


def _first_exchange(server: WireServer) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """A tool call answered with bound thinking, and the messages to send its result with."""
    import anthropic  # (where used: at the top it was 1-3 s of every worker's collection)

    server.push(tool("read_file", {"path": "a"}, tool_id="c1", thought="Read a first."))
    first = {"model": MODEL, "max_tokens": 100, "system": "sys",
             "thinking": {"type": "adaptive", "display": "summarized"},
             "messages": [{"role": "user", "content": "read a"}]}
    client = anthropic.Anthropic(api_key="k", base_url=server.url, max_retries=0)
    with client.messages.stream(**first) as stream:
        reply = stream.get_final_message()
    assistant = {"role": "assistant", "content": [b.model_dump(exclude_none=True)
                                                  for b in reply.content]}
    assert assistant["content"][0]["signature"] == issued_signature("Read a first.", first)
    result = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "c1",
                                           "content": "A"}]}
    return first, [first["messages"][0], assistant, result]


def test_the_server_takes_the_block_back_unchanged_and_refuses_it_after_an_edit(
        thinker: WireServer) -> None:
    import anthropic

    _, messages = _first_exchange(thinker)
    client = anthropic.Anthropic(api_key="k", base_url=thinker.url, max_retries=0)
    thinker.push(text("Done."), text("Done."))
    client.messages.create(model=MODEL, max_tokens=100, system="sys", messages=messages)
    edited = [{"role": "user", "content": "read a, please"}, *messages[1:]]
    with pytest.raises(anthropic.BadRequestError) as refused:
        client.messages.create(model=MODEL, max_tokens=100, system="sys", messages=edited)
    assert ("messages.1.content.0: Invalid `signature` in `thinking` block. The block is bound "
            "to a different conversation.") in str(refused.value)
    with pytest.raises(anthropic.BadRequestError, match="bound to a different conversation"):
        client.messages.create(model=MODEL, max_tokens=100, system="other", messages=messages)


def test_the_server_drops_a_mismatched_block_when_asked_with_the_beta_header(
        thinker: WireServer) -> None:
    import anthropic

    _, messages = _first_exchange(thinker)
    client = anthropic.Anthropic(api_key="k", base_url=thinker.url, max_retries=0)
    edited = [{"role": "user", "content": "read a, please"}, *messages[1:]]
    drop = {"thinking": {"type": "adaptive",
                         "block_binding": {"prefix_mismatch_behavior": "drop_block"}}}
    with pytest.raises(anthropic.BadRequestError, match=BINDING_BETA):
        client.messages.create(model=MODEL, max_tokens=100, system="sys", messages=edited,
                               extra_body=drop)
    thinker.push(text("Done."))
    reply = client.messages.create(model=MODEL, max_tokens=100, system="sys", messages=edited,
                                   extra_body=drop,
                                   extra_headers={"anthropic-beta": BINDING_BETA})
    assert reply.content[-1].type == "text"


# ---------------------------------------------------------------- relevant history


def test_a_relevant_history_on_the_default_model_is_not_refused(thinker: WireServer) -> None:
    """``session.history: relevant`` leaves older exchanges out; the thinking of the exchanges
    sent was bound to a prefix that held them, so it was refused with the API's 400 ("bound to
    a different conversation"). Now the thinking of the exchanges before the current one is
    removed (the docs' fix), and the current exchange's tool loop keeps its own."""
    from rollchat.engine.history import RelevantHistory

    engine = _engine(thinker, MODEL)
    engine.context.select = RelevantHistory()
    questions = ["kafka brokers", "redis eviction", "nginx proxy", "docker volumes"]
    for question in questions:
        thinker.push(text(f"About {question}.", thought=f"Think about {question}."))
        assert drain(engine.chat(question)).turn.status == "ok"
    # the fifth asks about kafka again: redis is left out, nginx and docker stay (recent)
    thinker.push(tool("read_file", {"path": "kafka.yml"}, tool_id="c9",
                      thought="Read the kafka file."), text("Twelve partitions."))
    answer = drain(engine.chat("kafka partitions again"))
    assert thinker.rejected == [], thinker.rejected[0].body["messages"]
    assert answer.turn.status == "ok" and answer.turn.assistant == "Twelve partitions."
    last = thinker.bodies[-1]["messages"]
    said = json.dumps(last)
    assert "redis eviction" not in said and "nginx proxy" in said  # the relevant choice
    thoughts = [b["thinking"] for m in last if m["role"] == "assistant"
                for b in m["content"] if isinstance(b, dict) and b.get("type") == "thinking"]
    assert thoughts == ["Read the kafka file."]  # the current exchange's only
    # kept in the context: four answers, the tool round and the last answer
    assert sum(m.extra != () for m in engine.context.messages) == 6
