"""One request at a time per local server (issue 28.3), through the real openai SDK against a
local server that holds a request as a busy llama.cpp slot does: a side request (a summary,
a memory extraction) gives way to the chat's request, its connection closed, and is sent
again after the chat's answer; a summary that times out is cancelled on the wire before its
retry; the official API has no limit."""

from __future__ import annotations

import threading
from datetime import datetime, timezone
from typing import Any

import pytest

from rollchat.compaction.call import summarize
from rollchat.domain import Message, Text, Turn
from rollchat.providers.base import ChatRequest, Done, StreamEvent, TextDelta
from rollchat.providers.lanes import default_limit
from rollchat.providers.openai import OpenAIProvider
from tests.wire_local import Held, LocalServer, local_server, sse_answer


def provider(server: LocalServer, **kw: Any) -> OpenAIProvider:
    return OpenAIProvider("smollm2", api_key=None, base_url=server.url, timeout=30, **kw)


def request(purpose: Any, text: str = "hello") -> ChatRequest:
    return ChatRequest(model="smollm2", system="", purpose=purpose,
                       messages=(Message("user", text),))


def answer(events: list[StreamEvent]) -> str:
    assert isinstance(events[-1], Done)
    return "".join(e.text for e in events if isinstance(e, TextDelta))


def is_side(body: dict[str, Any]) -> bool:
    return body.get("messages", [{}])[-1].get("content") == "summarize"


def test_the_chat_request_cuts_a_side_request_and_the_side_one_runs_after_it() -> None:
    held = Held(sse_answer("a summary"))
    side_sent: list[int] = []

    def chat(body: dict[str, Any]) -> Any:
        if is_side(body):
            side_sent.append(1)
            # the first one is held as a busy slot holds it; the one sent again answers
            return held if len(side_sent) == 1 else sse_answer("the summary")
        return sse_answer("the chat's answer")

    with local_server(chat=chat) as server:
        p = provider(server)
        side: list[StreamEvent] = []
        worker = threading.Thread(
            target=lambda: side.extend(p.stream(request("summary", "summarize"))))
        worker.start()
        while ("arrived", 1) not in server.events:  # the side request holds the one slot
            threading.Event().wait(0.01)
        chat_events = list(p.stream(request("chat")))
        worker.join(30)
        held.release.set()
    assert answer(chat_events) == "the chat's answer"
    assert answer(side) == "the summary"  # sent again: nothing of the cut one is kept
    # on the wire: the side request's connection closed (the server stops generating it),
    # the side request again only after the chat's answer
    events = server.events
    assert ("closed", 1) in events and ("answered", 1) not in events
    assert events.index(("answered", 2)) < events.index(("arrived", 3))
    assert [is_side(b) for _route, b in server.bodies] == [True, False, True]
    assert p.lane.cuts == 1


def test_a_side_request_waits_while_the_chat_request_is_in_flight() -> None:
    held = Held(sse_answer("the chat's answer"))

    def chat(body: dict[str, Any]) -> Any:
        return sse_answer("a summary") if is_side(body) else held

    with local_server(chat=chat) as server:
        p = provider(server)
        chat_events: list[StreamEvent] = []
        worker = threading.Thread(target=lambda: chat_events.extend(p.stream(request("chat"))))
        worker.start()
        while ("arrived", 1) not in server.events:
            threading.Event().wait(0.01)
        side: list[StreamEvent] = []
        waiter = threading.Thread(
            target=lambda: side.extend(p.stream(request("memory", "summarize"))))
        waiter.start()
        waiter.join(0.5)
        assert waiter.is_alive() and len(server.bodies) == 1  # queued behind the chat's
        held.release.set()
        worker.join(30)
        waiter.join(30)
    assert answer(chat_events) == "the chat's answer" and answer(side) == "a summary"
    assert server.in_flight_most() == 1
    assert p.lane.cuts == 0  # the chat's request is never cut


def test_a_timed_out_summary_is_cancelled_on_the_wire_before_its_retry() -> None:
    """The summary's timeout closes its connection (the server stops generating the
    abandoned one) before the one retry goes out; then the local summary is used."""
    def chat(body: dict[str, Any]) -> Any:
        return Held(sse_answer("too late"))  # never released: each attempt times out

    turns = [Turn("query", 1, datetime.now(timezone.utc), "We chose Postgres for the queue.",
                  (Text("Noted: Postgres it is."),))]
    with local_server(chat=chat) as server:
        outcome = summarize(provider(server), turns, parent_summary=None, focus=None,
                            model="smollm2", max_words=60, timeout_seconds=0.5,
                            max_output_tokens=300)
        assert server.seen(("closed", 2))  # (seen by the server a poll after the close)
    assert outcome.fallback_used
    assert outcome.reason == "request timed out: no answer within 0.5s; the request was cancelled"
    # each attempt's connection closed by the client at its timeout, none left generating
    assert sorted(server.events) == [("arrived", 1), ("arrived", 2), ("closed", 1),
                                     ("closed", 2)]


def test_concurrency_can_be_raised_and_the_official_api_has_no_limit() -> None:
    assert default_limit("http://127.0.0.1:8080/v1") == 1
    assert default_limit("http://192.168.1.20:11434/v1") == 1
    assert default_limit("https://my-vllm.example.com/v1") == 1  # OpenAI-compatible
    assert default_limit(None) is None
    assert default_limit("https://api.openai.com/v1") is None
    held = Held(sse_answer("the first"))

    def chat(body: dict[str, Any]) -> Any:
        return held if body["messages"][-1]["content"] == "one" else sse_answer("the second")

    with local_server(chat=chat) as server:
        p = provider(server, concurrency=2)
        first: list[StreamEvent] = []
        worker = threading.Thread(target=lambda: first.extend(p.stream(request("chat", "one"))))
        worker.start()
        while ("arrived", 1) not in server.events:
            threading.Event().wait(0.01)
        second = list(p.stream(request("summary", "two")))  # alongside: two slots
        held.release.set()
        worker.join(30)
    assert answer(second) == "the second" and answer(first) == "the first"
    assert server.in_flight_most() == 2


@pytest.mark.parametrize("purpose", ["chat", "restore"])
def test_the_chat_and_the_restoration_stream_as_they_come(purpose: Any) -> None:
    with local_server(chat=lambda body: sse_answer("streamed")) as server:
        events = list(provider(server).stream(request(purpose)))
    assert answer(events) == "streamed"


def test_a_summary_goes_before_a_memory_extraction() -> None:
    """The exit's summary is what the user waits for: an extraction gives way to it."""
    held = Held(sse_answer("facts"))
    sent: list[str] = []

    def chat(body: dict[str, Any]) -> Any:
        what = body["messages"][-1]["content"]
        sent.append(what)
        return held if what == "extract" and sent.count("extract") == 1 else sse_answer(what)

    with local_server(chat=chat) as server:
        p = provider(server)
        extraction: list[StreamEvent] = []
        worker = threading.Thread(
            target=lambda: extraction.extend(p.stream(request("memory", "extract"))))
        worker.start()
        while ("arrived", 1) not in server.events:
            threading.Event().wait(0.01)
        summary = list(p.stream(request("summary", "summary")))
        worker.join(30)
        held.release.set()
    assert answer(summary) == "summary" and answer(extraction) == "extract"
    assert sent == ["extract", "summary", "extract"]
    assert ("closed", 1) in server.events


def test_a_failed_chat_request_holds_side_requests_until_the_user_sends_a_line() -> None:
    """A chat request that failed (retryable) holds side requests back for its retry; once
    the user sends a line the retries are over (the prompt is back) and what the line asks,
    say a `compact` right after the failure, goes at once (it waited 30 s)."""
    import time

    from rollchat.providers.base import ProviderError, ProviderTimeoutError
    from rollchat.providers.lanes import Lane, Typing

    typing = Typing()
    lane = Lane(1, typing)
    with pytest.raises(ProviderError), lane.slot("chat"):
        raise ProviderError("the server is busy", retryable=True)
    with pytest.raises(ProviderTimeoutError), lane.slot("summary", time.monotonic() + 0.3):
        pass  # held: the chat's retry goes first
    typing.note("")  # a line sent (piped or at the prompt)
    with lane.slot("summary", time.monotonic() + 5) as ticket:
        assert ticket is not None
    with pytest.raises(ProviderError), lane.slot("chat"):  # a new failure holds again
        raise ProviderError("the server is busy", retryable=True)
    with pytest.raises(ProviderTimeoutError), lane.slot("memory", time.monotonic() + 0.3):
        pass
