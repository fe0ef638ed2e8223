"""AnthropicProvider through the real anthropic SDK against the local Messages server."""

from __future__ import annotations

import sys

import pytest

from rollchat.domain import Message, ToolCall, Usage
from rollchat.providers.anthropic import AnthropicProvider, message_params
from rollchat.providers.base import (
    AuthError,
    BadRequestError,
    ChatRequest,
    ContextTooLongError,
    Done,
    OverloadedError,
    ProviderConnectionError,
    ProviderError,
    RateLimitError,
    ServerError,
    StreamEvent,
    TextDelta,
    ToolCallEvent,
    ToolSpec,
    UsageEvent,
)
from tests.wire_servers import (
    Reply,
    WireServer,
    anthropic_server,
    closed_port,
    error,
    stream_error,
    text,
    tool,
)

__all__ = ["anthropic_server"]

KEY = "sk-ant-test-secret-0123456789"
CACHE = {"type": "ephemeral"}
SEARCH = ToolSpec("search", "Search the archive",
                  {"type": "object", "properties": {"query": {"type": "string"}}})


def provider(server: WireServer, timeout: float = 5.0) -> AnthropicProvider:
    return AnthropicProvider("claude-test", api_key=KEY, base_url=server.url, timeout=timeout)


def ask(*messages: Message, **kw: object) -> ChatRequest:
    return ChatRequest(model="claude-test", system="You are terse.",
                       messages=messages or (Message("user", "hello"),),
                       **kw)  # type: ignore[arg-type]


def collect(p: AnthropicProvider, request: ChatRequest) -> list[StreamEvent]:
    return list(p.stream(request))


def test_streams_text_usage_and_done(anthropic_server: WireServer) -> None:
    anthropic_server.push(text("Bonjour tout le monde", input_tokens=10, output_tokens=6,
                               cache_read=100, cache_write=20))
    events = collect(provider(anthropic_server), ask())
    deltas = [e.text for e in events if isinstance(e, TextDelta)]
    assert len(deltas) >= 3
    assert "".join(deltas) == "Bonjour tout le monde"
    assert events[-2:] == [UsageEvent(Usage(130, 6, cache_read_tokens=100,
                                            cache_write_tokens=20)), Done("end")]


def test_system_prompt_is_cached_and_request_shape(anthropic_server: WireServer) -> None:
    collect(provider(anthropic_server), ask(temperature=0.2, max_output_tokens=77))
    body = anthropic_server.bodies[0]
    assert body["system"] == [{"type": "text", "text": "You are terse.", "cache_control": CACHE}]
    assert body["messages"] == [{"role": "user", "content": [
        {"type": "text", "text": "hello", "cache_control": CACHE}]}]  # the newest message
    assert body["max_tokens"] == 77
    assert body["temperature"] == 0.2
    assert body["stream"] is True
    assert "tools" not in body


def test_cache_breakpoint_ends_the_stable_prefix(anthropic_server: WireServer) -> None:
    request = ask(Message("user", "Here is the summary of our last session."),
                  Message("assistant", "Got it, ready to continue."),
                  Message("user", "next question"), cache_prefix_messages=2)
    collect(provider(anthropic_server), request)
    messages = anthropic_server.bodies[0]["messages"]
    assert "cache_control" not in messages[0]["content"][-1]
    assert messages[1]["content"][-1]["cache_control"] == CACHE
    assert messages[2]["content"][-1]["cache_control"] == CACHE  # the newest: next turn's hit
    assert "temperature" not in anthropic_server.bodies[0]


def test_tool_call_round_trip(anthropic_server: WireServer) -> None:
    anthropic_server.push(tool("search", {"query": "rate limiter"}, tool_id="toolu_7",
                               text="Searching."))
    p = provider(anthropic_server)
    events = collect(p, ask(Message("user", "what did we decide?"), tools=(SEARCH,)))
    call = ToolCall("toolu_7", "search", {"query": "rate limiter"})
    assert [e for e in events if isinstance(e, ToolCallEvent)] == [ToolCallEvent(call)]
    assert events[-1] == Done("tool_use")
    assert anthropic_server.bodies[0]["tools"] == [
        {"name": "search", "description": "Search the archive",
         "input_schema": dict(SEARCH.parameters)}]

    collect(p, ask(Message("user", "what did we decide?"),
                   Message("assistant", "Searching.", tool_calls=(call,)),
                   Message("tool", "token bucket, 10/s", tool_call_id="toolu_7", name="search"),
                   tools=(SEARCH,)))
    sent = anthropic_server.bodies[1]["messages"]
    assert sent[1] == {"role": "assistant", "content": [
        {"type": "text", "text": "Searching."},
        {"type": "tool_use", "id": "toolu_7", "name": "search",
         "input": {"query": "rate limiter"}}]}
    assert sent[2] == {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "toolu_7", "content": "token bucket, 10/s",
         "cache_control": CACHE}]}


def test_messages_alternate_and_merge() -> None:
    a = ToolCall("t1", "search", {})
    b = ToolCall("t2", "search", {"query": "x"})
    out = message_params([
        Message("user", "one"), Message("user", "two"),
        Message("assistant", "", tool_calls=(a, b)),
        Message("tool", "r1", tool_call_id="t1"), Message("tool", "r2", tool_call_id="t2"),
        Message("user", "three"), Message("assistant", ""), Message("assistant", "four")])
    assert [m["role"] for m in out] == ["user", "assistant", "user", "assistant"]
    assert [b["type"] for b in out[0]["content"]] == ["text", "text"]
    assert [b["type"] for b in out[1]["content"]] == ["tool_use", "tool_use"]
    assert [b.get("tool_use_id", b.get("text")) for b in out[2]["content"]] == [
        "t1", "t2", "three"]
    assert out[3]["content"] == [{"type": "text", "text": "four"}]


def test_reply_without_usage(anthropic_server: WireServer) -> None:
    anthropic_server.push(text("quiet", usage=False))
    events = collect(provider(anthropic_server), ask())
    assert not any(isinstance(e, UsageEvent) for e in events)
    assert events[-1] == Done("end")


def test_max_tokens_stop(anthropic_server: WireServer) -> None:
    anthropic_server.push(text("cut short", stop="max_tokens"))
    assert collect(provider(anthropic_server), ask())[-1] == Done("max_tokens")


@pytest.mark.parametrize(("reply", "kind", "fragment"), [
    (error(401, f"invalid x-api-key {KEY}"), AuthError, "HTTP 401"),
    (error(403, "not allowed"), AuthError, "not allowed"),
    (error(429, "rate limited", headers={"retry-after": "4"}), RateLimitError, "rate limited"),
    (error(500, "internal"), ServerError, "internal"),
    (error(529, "Overloaded"), OverloadedError, "Overloaded"),
    (error(400, "prompt is too long: 210000 tokens > 200000 maximum"), ContextTooLongError,
     "210000"),
    (error(400, "messages: roles must alternate"), BadRequestError, "alternate"),
])
def test_errors_are_mapped(anthropic_server: WireServer, reply: Reply, kind: type,
                           fragment: str) -> None:
    anthropic_server.push(reply)
    with pytest.raises(kind) as info:
        collect(provider(anthropic_server), ask())
    line = info.value.one_line()
    assert fragment in line
    assert "\n" not in line
    assert KEY not in line
    assert type(info.value).__module__ == "rollchat.providers.base"


def test_error_event_mid_stream(anthropic_server: WireServer) -> None:
    anthropic_server.push(stream_error("Overloaded"))
    with pytest.raises(OverloadedError, match="Overloaded"):
        collect(provider(anthropic_server), ask())


def test_connection_refused() -> None:
    p = AnthropicProvider("m", api_key=KEY, base_url=f"http://127.0.0.1:{closed_port()}",
                          timeout=2)
    with pytest.raises(ProviderConnectionError) as info:
        collect(p, ask())
    assert KEY not in info.value.one_line()


def test_missing_sdk(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "anthropic", None)
    p = AnthropicProvider("m", api_key=KEY, base_url="http://127.0.0.1:9", timeout=1)
    with pytest.raises(ProviderError, match="pip install anthropic"):
        collect(p, ask())


def test_server_answers_without_streaming(anthropic_server: WireServer) -> None:
    import anthropic

    anthropic_server.push(tool("f", {"a": 1}, text="hi"))
    client = anthropic.Anthropic(api_key=KEY, base_url=anthropic_server.url, max_retries=0)
    reply = client.messages.create(model="m", max_tokens=5,
                                   messages=[{"role": "user", "content": "x"}])
    assert [b.type for b in reply.content] == ["text", "tool_use"]
    assert reply.stop_reason == "tool_use"
    assert reply.usage.output_tokens == 7
