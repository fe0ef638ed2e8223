"""What both SDK providers share (providers/sdk.py): the streaming template (the SDK stream is
closed however the answer ends, failures surface as our errors without the key), the SDK error
mapping, secret scrubbing and retry-after parsing."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from rollchat.domain import Message, ToolCall
from rollchat.providers.anthropic import AnthropicProvider
from rollchat.providers.base import (
    AuthError,
    ChatRequest,
    ConnectionLostError,
    MalformedStreamError,
    ProviderConnectionError,
    ProviderError,
    ProviderTimeoutError,
    ServerError,
    TextDelta,
)
from rollchat.providers.context_errors import is_context_error
from rollchat.providers.openai import OpenAIProvider
from rollchat.providers.sdk import (
    SDKProvider,
    SDKStream,
    map_sdk_error,
    retry_after,
    scrub,
)
from tests.wire_servers import AnthropicDialect, OpenAIDialect, WireServer, error, text

KEY = "sk-test-secret-key-0123456789"
PROVIDERS = {"openai": (OpenAIDialect, OpenAIProvider),
             "anthropic": (AnthropicDialect, AnthropicProvider)}


@pytest.fixture(params=list(PROVIDERS))
def setup(request: pytest.FixtureRequest) -> Iterator[tuple[SDKProvider, WireServer]]:
    dialect, cls = PROVIDERS[request.param]
    with WireServer(dialect()) as running:
        yield cls("m", api_key=KEY, base_url=running.url, timeout=5.0), running


def ask(*messages: Message) -> ChatRequest:
    return ChatRequest(model="m", system="terse", messages=messages or (Message("user", "hi"),))


class Spy:
    """Wraps the SDK stream the template opened and records that it was closed."""

    def __init__(self, stream: SDKStream, closed: list[bool]) -> None:
        self.stream, self.closed = stream, closed

    def __iter__(self) -> Iterator[object]:
        return iter(self.stream)

    def close(self) -> None:
        self.closed.append(True)
        self.stream.close()


def spy_on_open(monkeypatch: pytest.MonkeyPatch, p: SDKProvider) -> list[bool]:
    closed: list[bool] = []
    real_open = p._open
    monkeypatch.setattr(p, "_open", lambda client, request: Spy(real_open(client, request),
                                                                closed))
    return closed


def test_stream_is_closed_when_the_caller_stops_early(
        setup: tuple[SDKProvider, WireServer], monkeypatch: pytest.MonkeyPatch) -> None:
    p, server = setup
    server.push(text("one two three four five six"))
    closed = spy_on_open(monkeypatch, p)
    events = p.stream(ask())
    assert isinstance(next(events), TextDelta)
    assert closed == []
    events.close()  # what the caller does on Ctrl-C
    assert closed == [True]


def test_stream_is_closed_when_the_answer_ends(setup: tuple[SDKProvider, WireServer],
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    p, server = setup
    server.push(text("all of it"))
    closed = spy_on_open(monkeypatch, p)
    assert "".join(e.text for e in p.stream(ask()) if isinstance(e, TextDelta)) == "all of it"
    assert closed == [True]


def test_a_failed_stream_is_closed_and_mapped(setup: tuple[SDKProvider, WireServer],
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    p, server = setup
    server.push(text("partial"))
    closed = spy_on_open(monkeypatch, p)
    parser_class = type(p._parser())

    def broken_feed(self: object, item: object) -> Iterator[TextDelta]:
        raise KeyError("a field the format promised")
        yield TextDelta("")  # never reached: the yield makes this a generator, as feed is

    monkeypatch.setattr(parser_class, "feed", broken_feed)
    with pytest.raises(MalformedStreamError, match="unexpected data"):
        list(p.stream(ask()))
    assert closed == [True]


def test_errors_hide_the_key_and_the_sdk_exception(
        setup: tuple[SDKProvider, WireServer]) -> None:
    p, server = setup
    server.push(error(401, f"Incorrect API key provided: {KEY}"))
    with pytest.raises(AuthError) as info:
        list(p.stream(ask()))
    assert KEY not in str(info.value)
    assert info.value.__cause__ is None and info.value.__suppress_context__


def test_a_request_that_cannot_be_built_is_a_provider_error(
        setup: tuple[SDKProvider, WireServer]) -> None:
    p, server = setup
    history = (Message("user", "hi"),
               Message("assistant", "", tool_calls=(ToolCall("c1", "f", {"x": object()}),)),
               Message("tool", "done", tool_call_id="c1"))
    with pytest.raises(ProviderError, match="TypeError"):
        list(p.stream(ask(*history)))
    assert server.requests == []


def test_map_sdk_error_by_exception_class() -> None:
    error_ = ServerError("already ours")
    assert map_sdk_error(error_, KEY) is error_
    assert isinstance(map_sdk_error(TimeoutError(), KEY), ProviderTimeoutError)
    refused = map_sdk_error(ConnectionRefusedError(f"refused for {KEY}"), KEY)
    assert type(refused) is ProviderConnectionError and KEY not in str(refused)
    assert isinstance(map_sdk_error(ConnectionError("peer closed connection"), KEY),
                      ConnectionLostError)
    assert isinstance(map_sdk_error(ValueError("bad json"), KEY), MalformedStreamError)
    other = map_sdk_error(RuntimeError(f"boom with {KEY}"), KEY)
    assert type(other) is ProviderError
    assert str(other) == "RuntimeError: boom with [redacted]"


def test_map_sdk_error_of_an_error_event_in_a_stream() -> None:
    class APIError(Exception):
        def __init__(self, body: object) -> None:
            super().__init__("stream error")
            self.body = body

    mapped = map_sdk_error(APIError({"error": {"type": "authentication_error",
                                               "message": f"bad key {KEY}"}}), KEY)
    assert type(mapped) is AuthError and str(mapped) == "bad key [redacted]"
    assert type(map_sdk_error(APIError({"type": "mystery"}), KEY)) is ServerError


@pytest.mark.parametrize(("code", "message", "expected"), [
    ("context_length_exceeded", "", True),
    ("", "This model's maximum context length is 8192 tokens", True),
    ("", "prompt is too long: 210000 tokens > 200000 maximum", True),
    ("", "messages: roles must alternate", False),
])
def test_is_context_error(code: str, message: str, expected: bool) -> None:
    assert is_context_error(code, message) is expected


def test_retry_after_parsing() -> None:
    assert retry_after({"retry-after": "3"}) == 3.0
    assert retry_after({"retry-after-ms": "250"}) == 0.25
    assert retry_after({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}) == 0.0
    assert retry_after({"retry-after": "soon"}) is None
    assert retry_after({"retry-after": "nan"}) is None
    assert retry_after({}) is None


def test_scrub_removes_keys_and_newlines() -> None:
    line = scrub("bad key\nsk-proj-abcdefghijkl and mysecret", "mysecret")
    assert line == "bad key [redacted] and [redacted]"
    assert len(scrub("x" * 1000, None).split()) == 1
    assert len(scrub("x " * 1000, None)) == 300


def test_scrub_removes_url_credentials_and_keys() -> None:
    text_ = "failed: http://user:p4ssw0rd@127.0.0.1:8080/v1 with key sk-abcdefghijklmnop1234"
    out = scrub(text_, "sk-abcdefghijklmnop1234")
    assert "p4ssw0rd" not in out and "user:" not in out and "sk-abc" not in out
    assert "http://[redacted]@127.0.0.1:8080/v1" in out


@pytest.mark.parametrize("placeholder", ["x", "ollama", "none", "sk-1234"])
def test_scrub_keeps_text_when_the_key_is_a_short_placeholder(placeholder: str) -> None:
    text_ = "ollama: This model's maximum context length is 8192 tokens; none fits (sk-1234)"
    assert scrub(text_, placeholder) == text_


def test_scrub_still_removes_real_keys_and_key_like_tokens() -> None:
    assert scrub("key abcd1234 refused", "abcd1234") == "key [redacted] refused"
    out = scrub("used sk-abcdefghijklmnop, expected more", "x")
    assert out == "used [redacted], expected more"
