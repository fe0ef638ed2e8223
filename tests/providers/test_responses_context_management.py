"""compaction.engine: provider on the Responses API at api.openai.com: the window comes from
``context_management`` inside a ``responses.create`` on the chat's own request (instructions,
tools and input as the chat sent them: its prefix a cache read), not ``responses.compact``
(which takes no tools); through the real openai SDK against tests/wire_responses.py."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from rollchat.domain import Message, ToolCall
from rollchat.providers.base import ChatRequest, Done, ToolSpec
from rollchat.providers.names import OPENAI_RESPONSES
from rollchat.providers.openai_responses import ResponsesProvider
from rollchat.providers.openai_responses_compaction import REPLY_CAP
from tests.wire_responses import (
    Compaction,
    ResponsesServer,
    _Events,
    rendered_tokens,
    responses_server,
    said,
)

__all__ = ["responses_server"]  # the fixture, imported for pytest

READ = ToolSpec("read_file", "Read a file.",
                {"type": "object", "properties": {"path": {"type": "string"}}})
HISTORY = (Message("user", "why does the refund test fail?"),
           Message("assistant", "", tool_calls=(ToolCall("c1", "read_file",
                                                         {"path": "retry.py"}),)),
           Message("tool", "def retry(n):\n    return n - 1\n" * 40, tool_call_id="c1",
                   name="read_file"),
           Message("assistant", "The retry limit is off by one."))
SUMMARY = "**Topics Discussed:**\n- the refund retries"


def provider(server: ResponsesServer, **kw: Any) -> ResponsesProvider:
    return ResponsesProvider("gpt-5-mini", api_key="sk-test-key-123456", base_url=server.url,
                             timeout=10, **kw)


def chat_request(**kw: Any) -> ChatRequest:
    return ChatRequest("gpt-5-mini", "You are a coding agent.", HISTORY, 4096, tools=(READ,),
                       purpose="summary", cache_key="chain-1", **kw)


def test_the_window_comes_from_context_management_on_the_chats_own_request(
        responses_server: ResponsesServer) -> None:
    responses_server.push(said("Noted, the retries.", input_tokens=900, cached=896,
                               output_tokens=120),
                          said(SUMMARY, input_tokens=930, cached=896, output_tokens=12))
    done = provider(responses_server, in_response=True).compact(chat_request(),
                                                                "Summarize in 50 words.")
    assert responses_server.bodies("/v1/responses/compact") == []
    compacting, writing = responses_server.bodies()
    # the chat's own request: its instructions, tools and input, so its prefix is a cache read
    assert compacting["instructions"] == "You are a coding agent."
    assert [t["name"] for t in compacting["tools"]] == ["read_file"]
    assert writing["input"][:-1] == compacting["input"] and \
        writing["tools"] == compacting["tools"]
    [entry] = compacting["context_management"]
    assert entry["type"] == "compaction"
    assert 0 < entry["compact_threshold"] < rendered_tokens(compacting)  # compacts at once
    assert compacting["max_output_tokens"] == REPLY_CAP  # its answer is not read
    assert "context_management" not in writing  # the summary is read from the whole prefix
    assert writing["input"][-1] == {"role": "user", "content": "Summarize in 50 words."}
    # the window: the compaction item alone, as it came; the summary is rollchat's
    assert done.content == SUMMARY
    assert (done.block.provider, done.block.type) == (OPENAI_RESPONSES, "compacted")
    [item] = json.loads(done.block.data)
    assert item["type"] == "compaction" and item["encrypted_content"] in responses_server.issued
    assert (done.usage.input_tokens, done.usage.cache_read_tokens,
            done.usage.output_tokens) == (1830, 1792, 132)


def test_the_window_goes_first_on_the_childs_requests_and_is_accepted(
        responses_server: ResponsesServer) -> None:
    chat = provider(responses_server, in_response=True)
    done = chat.compact(chat_request(), "Summarize.")
    restoring = Message("user", "Here is the summary.", extra=(done.block,))
    out = list(chat.stream(ChatRequest("gpt-5-mini", "You are a coding agent.", (restoring,),
                                       tools=(READ,))))
    assert out[-1] == Done("end")
    sent = responses_server.bodies()[-1]["input"]
    assert json.dumps(sent[:1], separators=(",", ":"), ensure_ascii=False) == done.block.data
    assert sent[1] == {"role": "user", "content": "Here is the summary."}


def test_a_server_that_drops_context_management_gets_responses_compact(
        responses_server: ResponsesServer) -> None:
    responses_server.context_management = False
    responses_server.push(said("Noted.", input_tokens=900, cached=0, output_tokens=16))
    responses_server.compactions.append(Compaction(input_tokens=880, cached=0))
    done = provider(responses_server, in_response=True).compact(chat_request(), "Summarize.")
    [compacted] = responses_server.bodies("/v1/responses/compact")
    assert "tools" not in compacted
    assert [i["type"] for i in json.loads(done.block.data)][-1] == "compaction"
    # every request billed is counted: the answer without a compaction too
    assert done.usage.input_tokens == 900 + 880 + 50


def test_elsewhere_than_openai_responses_compact_is_used_and_nothing_unknown_is_sent(
        responses_server: ResponsesServer) -> None:
    provider(responses_server).compact(chat_request(), "Summarize.")
    assert len(responses_server.bodies("/v1/responses/compact")) == 1
    assert all("context_management" not in b for b in responses_server.bodies())


def test_an_unknown_context_management_type_is_refused() -> None:
    from tests.wire_responses import bad_context_management

    assert bad_context_management({"context_management": [{"type": "compaction"}]}) is None
    assert "'clear'" in (bad_context_management(
        {"context_management": [{"type": "clear"}]}) or "")


@pytest.mark.parametrize("answer", [said("Noted."), said("Noted.", reasoning=True)])
def test_the_compaction_events_are_the_sdks_types(answer: Any,
                                                  responses_server: ResponsesServer) -> None:
    """The compacting stream validates as the SDK's ResponseStreamEvent: the compaction item
    (ResponseCompactionItem) added and done, response.compaction.compacting between."""
    from openai.types.responses import ResponseStreamEvent
    from pydantic import TypeAdapter

    body = {"model": "gpt-5-mini", "include": ["reasoning.encrypted_content"], "store": False,
            "input": [{"role": "user", "content": "hi " * 50}],
            "context_management": [{"type": "compaction", "compact_threshold": 10}]}
    adapter: TypeAdapter[Any] = TypeAdapter(ResponseStreamEvent)
    kinds = []
    for frame in _Events(responses_server, body).of(answer):
        kind, _, data = frame.partition("\ndata: ")
        event = adapter.validate_python(json.loads(data))
        assert kind == f"event: {event.type}"
        kinds.append((event.type, getattr(getattr(event, "item", None), "type", None)))
    assert kinds[2:5] == [("response.output_item.added", "compaction"),
                          ("response.compaction.compacting", None),
                          ("response.output_item.done", "compaction")]


def test_a_chat_at_openai_compacts_in_response_and_its_child_sends_the_item_first(
        responses_server: ResponsesServer, tmp_path: Path) -> None:
    """A whole chat (rollchat piped, api.openai.com reached through HTTP_PROXY: the wire
    server answers): `compact` sends the chat's request with context_management, then the
    summary request; the child's restoration and turn send the compaction item first, and
    the parent's summary block is rollchat's readable one."""
    from rollchat.storage.transcript import parse
    from tests.providers.test_cache_key import CHAT, responses_reply, rollchat, root_of

    responses_server.responder = responses_reply
    rollchat(root_of(responses_server), tmp_path, CHAT, "openai-responses", engine="provider")
    bodies = responses_server.bodies()
    assert responses_server.bodies("/v1/responses/compact") == []
    compacting, summary, restoring, child_turn = bodies[2:6]
    assert "context_management" in compacting and "context_management" not in summary
    # the chat's own request: the last turn's prefix, its instructions and tools
    assert compacting["input"][:len(bodies[1]["input"])] == bodies[1]["input"]
    assert summary["input"][:-1] == compacting["input"]
    assert compacting["instructions"] == bodies[1]["instructions"] == summary["instructions"]
    assert compacting.get("tools") == bodies[1].get("tools") == summary.get("tools")
    first = restoring["input"][0]
    assert first["type"] == "compaction" and first["encrypted_content"] in \
        responses_server.issued
    assert child_turn["input"][0] == first
    files = [parse(p.read_text(encoding="utf-8")) for p in (tmp_path / "sessions").glob("*.md")]
    [parent] = [t for t in files if t.header.resumed_from is None]
    assert parent.summary is not None and parent.summary.topics == ("the queue for jobs",)
    # the window rides with the parent's summary too, so resuming the parent sends it first
    assert parent.summary.signed is not None
    assert first["encrypted_content"] in parent.summary.signed.data
