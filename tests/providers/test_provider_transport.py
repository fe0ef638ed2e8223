"""Transport faults, the same for both SDK providers against their wire-format servers:
rate limits with retry-after, garbage and truncated streams, dropped connections, stalls."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from rollchat.domain import Message
from rollchat.providers.anthropic import AnthropicProvider
from rollchat.providers.base import (
    ChatRequest,
    ConnectionLostError,
    MalformedStreamError,
    ProviderTimeoutError,
    RateLimitError,
    StreamEvent,
    TextDelta,
)
from rollchat.providers.openai import OpenAIProvider
from tests.wire_servers import (
    AnthropicDialect,
    OpenAIDialect,
    WireServer,
    drop,
    error,
    garbage,
    stall,
    truncated,
)

KEY = "sk-test-secret-key-0123456789"
PROVIDERS = {"openai": (OpenAIDialect, OpenAIProvider),
             "anthropic": (AnthropicDialect, AnthropicProvider)}


@pytest.fixture(params=list(PROVIDERS))
def server(request: pytest.FixtureRequest) -> Iterator[tuple[WireServer, str]]:
    dialect, _ = PROVIDERS[request.param]
    with WireServer(dialect()) as running:
        yield running, request.param


def stream(server: tuple[WireServer, str], timeout: float = 5.0) -> Iterator[StreamEvent]:
    running, name = server
    cls = PROVIDERS[name][1]
    p = cls("m", api_key=KEY, base_url=running.url, timeout=timeout)
    return p.stream(ChatRequest(model="m", system="terse", messages=(Message("user", "hi"),)))


def test_rate_limit_carries_retry_after(server: tuple[WireServer, str]) -> None:
    server[0].push(error(429, "slow down", headers={"retry-after": "2.5"}))
    with pytest.raises(RateLimitError) as info:
        list(stream(server))
    assert info.value.retry_after == 2.5


def test_garbage_stream_is_malformed(server: tuple[WireServer, str]) -> None:
    server[0].push(garbage())
    with pytest.raises(MalformedStreamError):
        list(stream(server))


def test_truncated_stream_is_malformed_after_its_text(server: tuple[WireServer, str]) -> None:
    server[0].push(truncated("partial answer"))
    seen: list[StreamEvent] = []
    with pytest.raises(MalformedStreamError, match="ended before"):
        seen.extend(stream(server))
    assert "".join(e.text for e in seen if isinstance(e, TextDelta)) == "partial answer"


def test_dropped_connection_is_a_lost_connection(server: tuple[WireServer, str]) -> None:
    server[0].push(drop("partial answer", after_chunks=5))
    seen: list[StreamEvent] = []
    with pytest.raises(ConnectionLostError):
        seen.extend(stream(server))
    assert seen and isinstance(seen[0], TextDelta)


@pytest.mark.parametrize("after_chunks", [0, 3], ids=["before-headers", "mid-stream"])
def test_stall_past_the_timeout(server: tuple[WireServer, str], after_chunks: int) -> None:
    server[0].push(stall(30, after_chunks=after_chunks))
    with pytest.raises(ProviderTimeoutError):
        list(stream(server, timeout=0.5))
