"""stream_with_retries with the real providers against the local servers (fake sleep)."""

from __future__ import annotations

import pytest

from rollchat.domain import Message
from rollchat.providers.anthropic import AnthropicProvider
from rollchat.providers.base import (
    AuthError,
    BadRequestError,
    ChatRequest,
    ConflictError,
    Done,
    OverloadedError,
    Provider,
    ProviderConnectionError,
    ProviderError,
    RateLimitError,
    RetryPolicy,
    ServerError,
    StreamEvent,
    TextDelta,
    stream_with_retries,
)
from rollchat.providers.openai import OpenAIProvider
from tests.wire_servers import (
    WireServer,
    anthropic_server,
    drop,
    error,
    openai_server,
    text,
)

__all__ = ["anthropic_server", "openai_server"]

REQUEST = ChatRequest(model="m", system="s", messages=(Message("user", "hi"),))
POLICY = RetryPolicy(max_retries=3, base_delay=1.0, max_delay=30.0,
                     random=lambda: 0.0)  # no jitter: the waits are known


def make(kind: str, server: WireServer) -> Provider:
    cls = OpenAIProvider if kind == "openai" else AnthropicProvider
    return cls("m", api_key="k" * 8, base_url=server.url, timeout=5)


@pytest.fixture(params=["openai", "anthropic"])
def setup(request: pytest.FixtureRequest) -> tuple[Provider, WireServer]:
    server: WireServer = request.getfixturevalue(f"{request.param}_server")
    return make(request.param, server), server


def run(provider: Provider, sleeps: list[float],
        retries: list[tuple[int, float, ProviderError]] | None = None) -> list[StreamEvent]:
    def on_retry(attempt: int, wait: float, err: ProviderError) -> None:
        if retries is not None:
            retries.append((attempt, wait, err))

    return list(stream_with_retries(provider, REQUEST, POLICY, sleep=sleeps.append,
                                    on_retry=on_retry))


def test_retry_after_header_is_honoured(setup: tuple[Provider, WireServer]) -> None:
    provider, server = setup
    server.push(error(429, "slow down", headers={"retry-after": "7"}),
                error(429, "again", headers={"retry-after-ms": "1500"}), text("finally"))
    sleeps: list[float] = []
    retries: list[tuple[int, float, ProviderError]] = []
    events = run(provider, sleeps, retries)
    assert sleeps == [7.0, 1.5]
    assert [(a, w, type(e)) for a, w, e in retries] == [
        (1, 7.0, RateLimitError), (2, 1.5, RateLimitError)]
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "finally"
    assert events[-1] == Done("end")
    assert len(server.requests) == 3  # the SDK itself never retries (max_retries=0)


def test_backoff_without_retry_after(setup: tuple[Provider, WireServer]) -> None:
    provider, server = setup
    server.push(error(500, "boom"), error(503, "down"), text("ok"))
    sleeps: list[float] = []
    run(provider, sleeps)
    assert sleeps == [1.0, 2.0]


def test_gives_up_after_max_retries(setup: tuple[Provider, WireServer]) -> None:
    provider, server = setup
    server.push(*[error(500, "boom")] * 4)
    sleeps: list[float] = []
    with pytest.raises(ServerError):
        run(provider, sleeps)
    assert sleeps == [1.0, 2.0, 4.0]
    assert len(server.requests) == 4


def test_auth_error_is_not_retried(setup: tuple[Provider, WireServer]) -> None:
    provider, server = setup
    server.push(error(401, "bad key"))
    sleeps: list[float] = []
    with pytest.raises(AuthError):
        run(provider, sleeps)
    assert sleeps == []
    assert len(server.requests) == 1


def test_no_retry_once_text_has_arrived(setup: tuple[Provider, WireServer]) -> None:
    provider, server = setup
    server.push(drop("partial answer here", after_chunks=5), text("should not be asked for"))
    sleeps: list[float] = []
    seen: list[StreamEvent] = []
    with pytest.raises(ProviderConnectionError):
        for event in stream_with_retries(provider, REQUEST, POLICY, sleep=sleeps.append):
            seen.append(event)
    assert any(isinstance(e, TextDelta) for e in seen)
    assert sleeps == []
    assert len(server.requests) == 1


def test_overloaded_529_is_retried(anthropic_server: WireServer) -> None:
    provider = make("anthropic", anthropic_server)
    anthropic_server.push(error(529, "Overloaded"), text("ok"))
    sleeps: list[float] = []
    retries: list[tuple[int, float, ProviderError]] = []
    events = run(provider, sleeps, retries)
    assert isinstance(retries[0][2], OverloadedError)
    assert sleeps == [1.0]
    assert events[-1] == Done("end")


def test_backoff_has_jitter(setup: tuple[Provider, WireServer]) -> None:
    """Many clients refused at once do not come back together: each wait is up to a quarter
    shorter than the backoff (the draw is injected here)."""
    provider, server = setup
    server.push(error(500, "boom"), error(503, "down"), text("ok"))
    sleeps: list[float] = []
    jittery = RetryPolicy(max_retries=3, base_delay=1.0, max_delay=30.0, random=lambda: 0.5)
    list(stream_with_retries(provider, REQUEST, jittery, sleep=sleeps.append))
    assert sleeps == [0.875, 1.75]
    assert 0.75 <= RetryPolicy().delay(1, ServerError("x")) <= 1.0


def test_409_is_retried(setup: tuple[Provider, WireServer]) -> None:
    provider, server = setup
    server.push(error(409, "conflict"), text("ok"))
    retries: list[tuple[int, float, ProviderError]] = []
    events = run(provider, [], retries)
    assert isinstance(retries[0][2], ConflictError)
    assert events[-1] == Done("end")


def test_x_should_retry_decides(setup: tuple[Provider, WireServer]) -> None:
    """The server's ``x-should-retry`` wins over the status, as in the SDKs: a 400 it marks
    true is retried, a 500 it marks false is not."""
    provider, server = setup
    server.push(error(400, "try again", headers={"x-should-retry": "true"}), text("ok"))
    sleeps: list[float] = []
    assert run(provider, sleeps)[-1] == Done("end")
    assert sleeps == [1.0] and len(server.requests) == 2
    server.push(error(500, "do not", headers={"x-should-retry": "false"}))
    with pytest.raises(ServerError):
        run(provider, sleeps)
    assert sleeps == [1.0] and len(server.requests) == 3
    server.push(error(400, "plain"))
    with pytest.raises(BadRequestError):
        run(provider, sleeps)
