"""llama.cpp's own bytes, replayed (issue 28.8): what a real llama-server sent (recorded once
by tests/fixtures/real/llama_cpp/record.py; server, model and command lines in PROVENANCE.md
there) read through the real openai SDK: the window it states, its real "too long" refusal,
its in-stream 500 of a busy shared cache (never a window; retried before any text) and an
answer cut at the output limit. (Its thinking answers: test_local_llama_thinking.py.)"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from rollchat.domain import Message
from rollchat.models.windows import WindowBook
from rollchat.providers.base import (
    ChatRequest,
    ContextTooLongError,
    Done,
    RetryNotice,
    RetryPolicy,
    ServerError,
    TextDelta,
    stream_with_retries,
)
from rollchat.providers.openai import OpenAIProvider
from rollchat.providers.window_probe import StatedWindow, probe_window
from rollchat.session.breakdown import breakdown, lines
from rollchat.session.windowing import ask_server
from tests.compaction.test_autocompact import build_app
from tests.wire_local import local_server, recorded, sse_answer

MODELS = {"GET /v1/models": recorded("models.http"), "GET /props": recorded("props.http")}


def body_of(name: str) -> Any:
    return json.loads(recorded(name).split(b"\r\n\r\n", 1)[1])


def request(text: str = "hello", max_tokens: int = 64) -> ChatRequest:
    return ChatRequest(model="smollm2", system="", messages=(Message("user", text),),
                       max_output_tokens=max_tokens)


def provider(url: str) -> OpenAIProvider:
    return OpenAIProvider("smollm2", api_key=None, base_url=url, timeout=30)


def test_llama_cpp_states_its_window_at_v1_models_and_props() -> None:
    n_ctx = body_of("props.http")["default_generation_settings"]["n_ctx"]
    [model] = body_of("models.http")["data"]
    assert model["meta"]["n_ctx"] == n_ctx == 2048  # the recording's -c 2048
    with local_server(MODELS) as server:
        assert probe_window(server.url, "smollm2") == StatedWindow(
            2048, "server", "/v1/models meta.n_ctx")
    without_meta = {"object": "list", "data": [dict(model, meta=None)]}
    routes = {**MODELS, "GET /v1/models": (
        b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Type: application/json\r\n\r\n"
        + json.dumps(without_meta).encode())}
    with local_server(routes) as server:  # a router's listing: /props says it
        assert probe_window(server.url, "smollm2") == StatedWindow(2048, "server",
                                                                   "/props n_ctx")


def test_the_session_knows_the_window_before_its_first_request(tmp_path: Path) -> None:
    with local_server(MODELS, chat=lambda body: sse_answer("Hello!")) as server:
        built = build_app(tmp_path, provider(server.url), window=128_000)
        session = built.session
        session.windows.book = WindowBook(tmp_path / "windows.json")
        session.windows.base_url = server.url
        ask_server(session.windows, session.current.provider)  # as Session() does
        assert session.windows.asking is not None
        session.windows.asking.join(10)  # (the chat never waits for it: the test does)
        assert built.send("hi").status == "ok"
    out = " ".join(built.output.split())
    assert "Context window: 2,048 tokens (stated by the server: /v1/models meta.n_ctx)." in out
    [heading, *_rest] = lines(breakdown(session), model="smollm2", method="tiktoken",
                              auto=True)  # what the `context` command shows
    assert "(window 2,048 tokens, stated by the server;" in heading
    assert session.budget.window == 2048
    entry = WindowBook(tmp_path / "windows.json").entry(server.url, session.windows.model)
    assert entry is not None and (entry.tokens, entry.source) == (2048, "server")


def test_the_real_exceed_context_size_error_states_the_window() -> None:
    error = body_of("exceed_context.http")["error"]
    assert error["type"] == "exceed_context_size_error" and error["n_ctx"] == 2048
    with local_server(chat=lambda body: recorded("exceed_context.http")) as server:
        try:
            list(provider(server.url).stream(request("long")))
        except ContextTooLongError as refused:
            assert refused.limit == 2048
        else:
            raise AssertionError("the refusal was not read as one")


def error_first(raw: bytes) -> bytes:
    """The recorded stream with its text events left out: the error event right after the
    role (as when the cache is full before the first token); the events' bytes as recorded,
    the first one in a chunk of its own."""
    head, _, body = raw.partition(b"\r\n\r\n")
    start = body.index(b"\r\n") + 2
    role = body[start:body.index(b"\n\n", start) + 2]  # the first event: the role, no text
    first = b"%x\r\n%s\r\n" % (len(role), role)  # in a chunk of its own
    error = body[body.rindex(b"\r\n", 0, body.index(b'data: {"error"') - 2) + 2:]
    return head + b"\r\n\r\n" + first + error


def test_the_in_stream_500_of_a_busy_cache_is_never_a_window(tmp_path: Path) -> None:
    raw = recorded("stream_overlap_error.http")
    assert raw.startswith(b"HTTP/1.1 200 OK") and b"Context size has been exceeded." in raw
    with local_server(chat=lambda body: raw) as server:
        streamed: list[Any] = []
        try:
            streamed.extend(provider(server.url).stream(request()))
        except ServerError as error:
            assert "busy" in str(error)
        else:
            raise AssertionError("the in-stream error was not raised")
    assert any(isinstance(e, TextDelta) for e in streamed)  # text came first, kept
    # in a chat: told as the busy server's error; the window is not touched nor remembered
    with local_server(chat=lambda body: raw) as server:
        built = build_app(tmp_path, provider(server.url), window=4096)
        built.session.windows.book = WindowBook(tmp_path / "windows.json")
        built.send("hi")
    assert "busy" in built.output and "context is too long" not in built.output
    assert built.session.budget.window == 4096 and not (tmp_path / "windows.json").exists()


def test_before_any_text_the_busy_error_is_retried() -> None:
    replies = [error_first(recorded("stream_overlap_error.http")),
               sse_answer("Fine on its own.")]
    with local_server(chat=lambda body: replies.pop(0)) as server:
        events = list(stream_with_retries(provider(server.url), request(),
                                          RetryPolicy(2, 0, 0), announce=True))
    [notice] = [e for e in events if isinstance(e, RetryNotice)]
    assert isinstance(notice.error, ServerError) and "busy" in str(notice.error)
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "Fine on its own."


def test_an_answer_cut_at_the_output_limit_says_so() -> None:
    with local_server(chat=lambda body: recorded("stream_length.http")) as server:
        events = list(provider(server.url).stream(request("story", max_tokens=12)))
    assert events[-1] == Done("max_tokens")
    assert "".join(e.text for e in events if isinstance(e, TextDelta)).strip()


def test_a_server_that_did_not_state_its_window_is_asked_again_before_the_next_request(
        tmp_path: Path) -> None:
    """Issue 40.2: started while the server was down (here: not yet saying), the chat kept
    the assumed window; the next request asks again, and the stated window applies."""
    with local_server({}, chat=lambda body: sse_answer("Hello!")) as server:
        built = build_app(tmp_path, provider(server.url), window=128_000)
        session = built.session
        session.windows.book = WindowBook(tmp_path / "windows.json")
        session.windows.base_url = server.url
        ask_server(session.windows, session.current.provider)
        assert session.windows.asking is not None
        session.windows.asking.join(10)
        server.routes.update(MODELS)  # the server up now
        assert built.send("hi").status == "ok"  # asked again, in the background
        session.windows.asking.join(10)
        assert built.send("again").status == "ok"
    assert session.budget.window == 2048
    assert "Context window: 2,048 tokens (stated by the server" in " ".join(
        built.output.split())
