"""Anthropic's on-demand compaction through the real anthropic SDK against the local wire
server of tests/wire_anthropic_compaction.py: the request, the streamed block read back, the
block sent first later, the compaction errors, context editing."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest

from rollchat.domain import Message, ProviderBlock, ToolCall, Usage
from rollchat.providers.anthropic import AnthropicProvider
from rollchat.providers.anthropic_compaction import COMPACT_BETA, SignedBlockRefused
from rollchat.providers.base import (
    BadRequestError,
    ChatRequest,
    OverloadedError,
    RetryPolicy,
    TextDelta,
    UsageEvent,
    stream_with_retries,
)
from rollchat.providers.compacting import CompactingProvider, CompactionFailed
from tests.wire_anthropic_compaction import CompactionServer, compaction_server, sign

__all__ = ["compaction_server"]
Server = tuple[CompactionServer, str]
LONG = "the build log says " + "step ok; " * 400  # over the minimum cacheable prefix


def provider(url: str, **kw: Any) -> AnthropicProvider:
    return AnthropicProvider("test-model", api_key="test", base_url=url, timeout=10, **kw)


def chat(*messages: Message) -> ChatRequest:
    return ChatRequest("test-model", "You are the wire test agent.", messages,
                       cache_prefix_messages=0)


CONVERSATION = (Message("user", "read the log"),
                Message("assistant", "", tool_calls=(ToolCall("t1", "read", {"p": "log"}),)),
                Message("tool", LONG, tool_call_id="t1", name="read"),
                Message("assistant", "The build passed."))


def test_the_anthropic_provider_compacts_on_the_server() -> None:
    assert isinstance(provider("http://127.0.0.1:9"), CompactingProvider)


def test_compact_sends_the_chat_with_the_instructions_and_reads_the_signed_block(
        compaction_server: Server) -> None:
    server, url = compaction_server
    server.summary = lambda body: "**Background Context:** the build."
    p = provider(url)
    list(p.stream(chat(*CONVERSATION[:3])))  # the chat's request writes the cache
    compacted = p.compact(chat(*CONVERSATION), "Summarize in 50 words.")
    seen = server.requests[-1]
    assert COMPACT_BETA in seen.headers["anthropic-beta"]
    assert seen.body["compaction"] == {"type": "summarize",
                                       "instructions": "Summarize in 50 words."}
    assert seen.path.startswith("/v1/messages")
    # the same prefix as the chat: system, tools, messages; the last one marked for the cache
    assert seen.body["system"] == server.requests[0].body["system"]
    assert seen.body["messages"][:2] == [
        {k: v for k, v in m.items()} for m in server.requests[0].body["messages"][:2]]
    assert compacted.content == "**Background Context:** the build."
    block = json.loads(compacted.block.data)
    assert block == {"type": "compaction", "content": compacted.content,
                     "signature": sign(compacted.content)}
    assert compacted.block.provider == "anthropic" and compacted.block.type == "compaction"
    # billed: the compaction iteration (the top level is zero), mostly cache reads
    billed = seen.billed
    assert billed is not None and billed.read > 1000
    assert billed.written == 0  # the last answer is never sent again: not written
    marked = [i for i, m in enumerate(seen.body["messages"])
              if "cache_control" in m["content"][-1]]
    assert marked == [2]  # the tool result: where the chat's last request ended
    assert compacted.usage.cache_read_tokens == billed.read
    assert compacted.usage.input_tokens == billed.uncached + billed.read + billed.written
    assert compacted.usage.output_tokens > 0


@pytest.mark.parametrize("code, kind", [("compaction_unavailable", OverloadedError),
                                        ("compaction_nothing_to_summarize", BadRequestError),
                                        ("compaction_incomplete_turn", BadRequestError)])
def test_compaction_errors_are_compaction_failed_with_their_code(
        compaction_server: Server, code: str, kind: type) -> None:
    server, url = compaction_server
    server.failures.append(code)
    with pytest.raises(CompactionFailed) as info:
        provider(url).compact(chat(*CONVERSATION), "Summarize.")
    assert info.value.code == code and code in info.value.one_line()


def test_a_model_without_compaction_and_a_null_summary_fail(compaction_server: Server) -> None:
    server, url = compaction_server
    with pytest.raises(BadRequestError, match="does not support compaction"):
        provider(url).compact(replace(chat(*CONVERSATION), model="claude-3-haiku"),
                              "Summarize.")
    server.summary = lambda body: None  # the server's summary failed: null content
    with pytest.raises(CompactionFailed, match="no summary"):
        provider(url).compact(chat(*CONVERSATION), "Summarize.")


def signed(content: str, signature: str | None = None) -> ProviderBlock:
    data = {"type": "compaction", "content": content,
            "signature": signature or sign(content)}
    return ProviderBlock("anthropic", "compaction", json.dumps(data))


def test_the_signed_block_goes_first_with_the_beta(compaction_server: Server) -> None:
    server, url = compaction_server
    server.issued[sign("the summary")] = "the summary"
    events = list(provider(url).stream(chat(
        Message("user", "CONTEXT RESTORATION", extra=(signed("the summary"),)),
        Message("assistant", "Ready."), Message("user", "go on"))))
    assert any(isinstance(e, TextDelta) for e in events)
    body = server.requests[-1].body
    assert body["messages"][0] == {"role": "assistant", "content": [
        json.loads(signed("the summary").data)]}
    assert [m["role"] for m in body["messages"]] == ["assistant", "user", "assistant", "user"]
    assert COMPACT_BETA in server.requests[-1].headers["anthropic-beta"]


@pytest.mark.parametrize("block, code", [
    (signed("the summary", "0" * 64), "compaction_signature_invalid"),
    (signed("the summary, edited"), "compaction_signature_invalid"),
])
def test_a_refused_signed_block_is_dropped_and_the_request_sent_again(
        compaction_server: Server, block: ProviderBlock, code: str) -> None:
    server, url = compaction_server
    server.issued[sign("the summary")] = "the summary"
    p = provider(url)
    request = chat(Message("user", "CONTEXT RESTORATION: the summary", extra=(block,)),
                   Message("assistant", "Ready."), Message("user", "go on"))
    events = list(stream_with_retries(p, request, RetryPolicy(max_retries=1),
                                      sleep=lambda s: None, announce=True))
    notice = events[0]
    assert isinstance(notice.error, SignedBlockRefused) and notice.error.code == code
    assert notice.wait == 0 and "rollchat's readable summary is sent instead" in \
        notice.error.one_line()
    assert any(isinstance(e, TextDelta) for e in events)
    resent = server.requests[-1]
    assert [m["role"] for m in resent.body["messages"]] == ["user", "assistant", "user"]
    assert COMPACT_BETA not in resent.headers.get("anthropic-beta", "")
    list(p.stream(request))  # never sent again
    assert "compaction" not in json.dumps(server.requests[-1].body["messages"])


def test_content_changed_under_its_signature_is_a_content_mismatch(
        compaction_server: Server) -> None:
    server, url = compaction_server
    server.issued[sign("the summary")] = "the summary"
    tampered = signed("the summary, edited", sign("the summary"))
    with pytest.raises(SignedBlockRefused) as info:
        list(provider(url).stream(chat(Message("user", "R", extra=(tampered,)),
                                       Message("assistant", "ok"), Message("user", "go"))))
    assert info.value.code == "compaction_content_mismatch"


def test_hygiene_provider_asks_for_context_editing(compaction_server: Server) -> None:
    server, url = compaction_server
    list(provider(url, hygiene="provider").stream(chat(*CONVERSATION[:3])))
    seen = server.requests[-1]
    assert seen.body["context_management"]["edits"][0]["type"] == "clear_tool_uses_20250919"
    assert "context-management-2025-06-27" in seen.headers["anthropic-beta"]
    list(provider(url).stream(chat(*CONVERSATION[:3])))
    assert "context_management" not in server.requests[-1].body


def test_context_editing_clears_old_results_and_the_report_counts_it(
        compaction_server: Server) -> None:
    server, url = compaction_server
    calls = [Message("user", "read them")]
    for n in range(5):
        calls += [Message("assistant", "", tool_calls=(ToolCall(f"t{n}", "read", {}),)),
                  Message("tool", LONG * 20, tool_call_id=f"t{n}", name="read")]
    events = list(provider(url, hygiene="provider").stream(chat(*calls)))
    seen = server.requests[-1]
    assert seen.cleared > 40_000  # two old results of five cleared, the last three kept
    [usage] = [e.usage for e in events if isinstance(e, UsageEvent)]
    assert seen.billed is not None
    assert usage.input_tokens == seen.billed.uncached + seen.billed.read + seen.billed.written
    assert usage != Usage()
