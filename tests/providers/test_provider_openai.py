"""OpenAIProvider through the real openai SDK against the local Chat Completions server."""

from __future__ import annotations

import sys

import pytest

from rollchat.domain import Message, ToolCall, Usage
from rollchat.providers.base import (
    AuthError,
    BadRequestError,
    ChatRequest,
    ContextTooLongError,
    Done,
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
from rollchat.providers.openai import OpenAIProvider, request_params
from rollchat.providers.sdk import RAW_ARGUMENTS_KEY
from tests.wire_servers import (
    WireServer,
    closed_port,
    error,
    openai_server,
    stream_error,
    text,
    tool,
)

__all__ = ["openai_server"]

KEY = "sk-test-secret-key-0123456789"
WEATHER = ToolSpec("get_weather", "Weather for a city",
                   {"type": "object", "properties": {"city": {"type": "string"}}})


def provider(server: WireServer, timeout: float = 5.0) -> OpenAIProvider:
    return OpenAIProvider("test-model", api_key=KEY, base_url=server.url, timeout=timeout)


def ask(content: str = "hello", **kw: object) -> ChatRequest:
    return ChatRequest(model="test-model", system="Be brief.",
                       messages=(Message("user", content),), **kw)  # type: ignore[arg-type]


def collect(p: OpenAIProvider, request: ChatRequest) -> list[StreamEvent]:
    return list(p.stream(request))


def test_streams_text_usage_and_done(openai_server: WireServer) -> None:
    openai_server.push(text("Hello there, friend!", input_tokens=42, output_tokens=5,
                            cache_read=30))
    events = collect(provider(openai_server), ask())
    deltas = [e.text for e in events if isinstance(e, TextDelta)]
    assert len(deltas) >= 3
    assert "".join(deltas) == "Hello there, friend!"
    assert events[-2:] == [UsageEvent(Usage(42, 5, cache_read_tokens=30)), Done("end")]


def test_request_shape(openai_server: WireServer) -> None:
    collect(provider(openai_server), ask("hi", temperature=0.3, max_output_tokens=99))
    body = openai_server.bodies[0]
    assert body["messages"] == [{"role": "system", "content": "Be brief."},
                                {"role": "user", "content": "hi"}]
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}
    assert body["max_tokens"] == 99
    assert body["temperature"] == 0.3
    assert "tools" not in body
    assert openai_server.requests[0].headers["authorization"] == f"Bearer {KEY}"


def test_temperature_omitted_when_none_and_official_uses_max_completion_tokens() -> None:
    params = request_params(ask(), official=True)
    assert "temperature" not in params
    assert params["max_completion_tokens"] == 4096
    assert "max_tokens" not in params


def test_tool_call_round_trip(openai_server: WireServer) -> None:
    openai_server.push(tool("get_weather", {"city": "Paris"}, tool_id="call_9",
                            text="Let me check."))
    p = provider(openai_server)
    events = collect(p, ask("weather in Paris?", tools=(WEATHER,)))
    call = ToolCall("call_9", "get_weather", {"city": "Paris"})
    assert ToolCallEvent(call) in events
    assert events[-1] == Done("tool_use")
    first = openai_server.bodies[0]
    assert first["tools"] == [{"type": "function", "function": {
        "name": "get_weather", "description": "Weather for a city",
        "parameters": dict(WEATHER.parameters)}}]

    follow = ChatRequest(model="test-model", system="", tools=(WEATHER,), messages=(
        Message("user", "weather in Paris?"),
        Message("assistant", "Let me check.", tool_calls=(call,)),
        Message("tool", "18C, sunny", tool_call_id="call_9", name="get_weather")))
    events = collect(p, follow)
    assert events[-1] == Done("end")
    sent = openai_server.bodies[1]["messages"]
    assert sent[1] == {"role": "assistant", "content": "Let me check.", "tool_calls": [
        {"id": "call_9", "type": "function",
         "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}]}
    assert sent[2] == {"role": "tool", "tool_call_id": "call_9", "content": "18C, sunny"}
    assert sent[0]["role"] == "user"  # no system message when the prompt is empty


def test_invalid_tool_arguments_are_kept_raw(openai_server: WireServer) -> None:
    openai_server.push(tool("f", {}, raw_args='{"x": 1'), tool("g", {}, raw_args=""))
    p = provider(openai_server)
    calls = [e.call for e in collect(p, ask()) if isinstance(e, ToolCallEvent)]
    assert calls == [ToolCall("call_1", "f", {RAW_ARGUMENTS_KEY: '{"x": 1'})]
    calls = [e.call for e in collect(p, ask()) if isinstance(e, ToolCallEvent)]
    assert calls == [ToolCall("call_1", "g", {})]


def test_reply_without_usage(openai_server: WireServer) -> None:
    openai_server.push(text("no usage here", usage=False))
    events = collect(provider(openai_server), ask())
    assert not any(isinstance(e, UsageEvent) for e in events)
    assert events[-1] == Done("end")


def test_max_tokens_finish(openai_server: WireServer) -> None:
    openai_server.push(text("cut", stop="length"))
    assert collect(provider(openai_server), ask())[-1] == Done("max_tokens")


@pytest.mark.parametrize(("reply", "kind", "fragment"), [
    (error(401, f"Incorrect API key provided: {KEY}"), AuthError, "HTTP 401"),
    (error(403, "forbidden"), AuthError, "forbidden"),
    (error(429, "slow down", headers={"retry-after": "3"}), RateLimitError, "slow down"),
    (error(500, "boom"), ServerError, "boom"),
    (error(503, "unavailable"), ServerError, "unavailable"),
    (error(400, "This model's maximum context length is 8192 tokens",
           code="context_length_exceeded"), ContextTooLongError, "8192"),
    (error(400, "unknown parameter foo"), BadRequestError, "foo"),
])
def test_errors_are_mapped(openai_server: WireServer, reply: object, kind: type,
                           fragment: str) -> None:
    openai_server.push(reply)  # type: ignore[arg-type]
    with pytest.raises(kind) as info:
        collect(provider(openai_server), ask())
    line = info.value.one_line()
    assert fragment in line
    assert "\n" not in line
    assert KEY not in line
    assert type(info.value).__module__ == "rollchat.providers.base"


def test_connection_refused() -> None:
    p = OpenAIProvider("m", api_key=KEY, base_url=f"http://127.0.0.1:{closed_port()}/v1",
                       timeout=2)
    with pytest.raises(ProviderConnectionError) as info:
        collect(p, ask())
    assert KEY not in info.value.one_line()


def test_default_reply_echoes_and_no_key_uses_dummy(openai_server: WireServer) -> None:
    p = OpenAIProvider("m", api_key=None, base_url=openai_server.url, timeout=5)
    events = collect(p, ask("ping"))
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "echo: ping"
    assert openai_server.requests[0].headers["authorization"] == "Bearer not-needed"


def test_missing_sdk(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "openai", None)
    p = OpenAIProvider("m", api_key=KEY, base_url="http://127.0.0.1:9/v1", timeout=1)
    with pytest.raises(ProviderError, match="pip install openai"):
        collect(p, ask())


def test_error_inside_the_stream(openai_server: WireServer) -> None:
    openai_server.push(stream_error("The server had an error", error_type="server_error"))
    with pytest.raises(ServerError, match="The server had an error"):
        collect(provider(openai_server), ask())


def test_server_answers_without_streaming(openai_server: WireServer) -> None:
    import openai

    openai_server.push(tool("f", {"a": 1}, text="hi"))
    client = openai.OpenAI(api_key=KEY, base_url=openai_server.url, max_retries=0)
    reply = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])
    assert reply.choices[0].message.content == "hi"
    assert reply.choices[0].message.tool_calls[0].function.arguments == '{"a": 1}'
    assert reply.usage is not None and reply.usage.prompt_tokens == 11


def test_stopping_early_closes_the_sdk_stream(openai_server: WireServer) -> None:
    p = provider(openai_server)
    real = p._sdk_client()
    closed: list[bool] = []

    class Spy:
        def __init__(self, stream: object) -> None:
            self.stream = stream

        def __iter__(self) -> object:
            return iter(self.stream)  # type: ignore[call-overload]

        def close(self) -> None:
            closed.append(True)
            self.stream.close()  # type: ignore[attr-defined]

    class Completions:
        def create(self, **params: object) -> Spy:
            return Spy(real.chat.completions.create(**params))

    class Chat:
        completions = Completions()

    class Client:
        chat = Chat()

    p._client = Client()
    events = p.stream(ask())
    assert isinstance(next(events), TextDelta)
    events.close()  # what the caller does on Ctrl-C
    assert closed == [True]
