"""The Responses API provider through the real openai SDK against tests/wire_responses.py:
the request, streamed text and calls, reasoning items kept byte for byte, cached usage, the
output limit, the error shapes, and ``responses.compact``."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest

from rollchat.domain import Image, Message, ProviderBlock, ToolCall
from rollchat.providers.base import (
    AuthError,
    BadRequestError,
    ChatRequest,
    ContextTooLongError,
    Done,
    ProviderError,
    RateLimitError,
    ServerError,
    StreamEvent,
    TextDelta,
    ThinkingDelta,
    ToolCallEvent,
    ToolSpec,
    UsageEvent,
)
from rollchat.providers.names import OPENAI_RESPONSES
from rollchat.providers.openai_responses import ResponsesProvider, input_items
from tests.wire_responses import (
    CONTEXT_TOO_LONG,
    Compaction,
    ResponsesServer,
    calling,
    error_event,
    failed,
    http_error,
    responses_server,
    said,
)

__all__ = ["responses_server"]  # the fixture, imported for pytest

WEATHER = ToolSpec("weather", "The weather in a city.",
                   {"type": "object", "properties": {"city": {"type": "string"}}})


def provider(server: ResponsesServer, **kw: Any) -> ResponsesProvider:
    return ResponsesProvider("gpt-5-mini", api_key="sk-test-key-123456", base_url=server.url,
                             timeout=10, **kw)


def request(*messages: Message, **kw: Any) -> ChatRequest:
    return ChatRequest(model="gpt-5-mini", system="Be brief.",
                       messages=messages or (Message("user", "hi"),), **kw)


def events(server: ResponsesServer, req: ChatRequest | None = None,
           **kw: Any) -> list[StreamEvent]:
    return list(provider(server, **kw).stream(req or request()))


def test_text_streams_with_usage_and_the_request_keeps_nothing_server_side(
        responses_server: ResponsesServer) -> None:
    responses_server.push(said("Hello there, friend.", cached=32, input_tokens=50))
    out = events(responses_server, request(max_output_tokens=900, tools=(WEATHER,)))
    assert "".join(e.text for e in out if isinstance(e, TextDelta)) == "Hello there, friend."
    [usage] = [e.usage for e in out if isinstance(e, UsageEvent)]
    assert (usage.input_tokens, usage.output_tokens, usage.cache_read_tokens) == (50, 7, 32)
    assert usage.cache_write_tokens == 0  # the rest is billed as input (no write premium)
    assert out[-1] == Done("end")
    [body] = responses_server.bodies()
    assert body["store"] is False and body["stream"] is True
    assert body["include"] == ["reasoning.encrypted_content"]  # the only way to carry it back
    assert body["instructions"] == "Be brief." and body["max_output_tokens"] == 900
    assert body["input"] == [{"role": "user", "content": "hi"}]
    assert body["tools"] == [{"type": "function", "name": "weather",
                              "description": "The weather in a city.",
                              "parameters": dict(WEATHER.parameters), "strict": False}]


def test_a_model_without_reasoning_is_not_asked_for_it(responses_server: ResponsesServer,
                                                       ) -> None:
    list(provider(responses_server).stream(ChatRequest("gpt-4.1", "", (Message("user", "x"),))))
    [body] = responses_server.bodies()
    assert "include" not in body and "instructions" not in body


def test_store_when_configured_keeps_the_responses_at_openai(
        responses_server: ResponsesServer) -> None:
    events(responses_server, store=True)
    [body] = responses_server.bodies()
    assert body["store"] is True and "include" not in body  # stored: referenced, not carried


def test_parallel_calls_come_whole_in_output_order(responses_server: ResponsesServer) -> None:
    responses_server.push(calling(("call_a", "weather", {"city": "Rome"}),
                                  ("call_b", "weather", {"city": "Oslo, Norway"})))
    out = events(responses_server)
    calls = [e.call for e in out if isinstance(e, ToolCallEvent)]
    assert calls == [ToolCall("call_a", "weather", {"city": "Rome"}),
                     ToolCall("call_b", "weather", {"city": "Oslo, Norway"})]
    assert out[-1] == Done("tool_use")


def test_reasoning_item_is_kept_as_it_came(responses_server: ResponsesServer) -> None:
    responses_server.push(said("Four.", reasoning=True))
    out = events(responses_server)
    [block, ids] = [e for e in out if isinstance(e, ProviderBlock)]
    assert (block.provider, block.type) == (OPENAI_RESPONSES, "reasoning")
    assert json.loads(ids.data) == {"message": "msg_0003"}  # the answer's item, by its id
    # every field the server set, each value as it came (the keys in the SDK's order)
    assert json.loads(block.data) == {"id": "rs_0002", "type": "reasoning", "summary": [],
                                      "encrypted_content": "enc-rs_0002-" + "x" * 40}
    assert out.index(block) < next(i for i, e in enumerate(out)
                                               if isinstance(e, TextDelta))


def test_a_reasoning_summary_streams_as_thinking(responses_server: ResponsesServer) -> None:
    """A reasoning model is asked for the summary of its reasoning (``reasoning.summary``:
    the service sends none otherwise), shown as thinking; ``thinking off`` asks for none."""
    responses_server.push(said("Four.", reasoning=True, summary="Adding two and two."))
    out = events(responses_server)
    assert responses_server.bodies()[0]["reasoning"] == {"summary": "auto"}
    assert "".join(e.text for e in out if isinstance(e, ThinkingDelta)) == "Adding two and two."
    assert "".join(e.text for e in out if isinstance(e, TextDelta)) == "Four."
    [block] = [e for e in out if isinstance(e, ProviderBlock)  # and is sent back as it came
               and e.type == "reasoning"]
    assert json.loads(block.data)["summary"] == [{"type": "summary_text",
                                                  "text": "Adding two and two."}]


def test_reasoning_and_calls_are_sent_back_in_order(responses_server: ResponsesServer) -> None:
    """The function_call goes back with its item id after the reasoning that keeps its own:
    without it the service refuses the reasoning item ("provided without its required
    following item")."""
    responses_server.push(calling(("call_a", "weather", {"city": "Rome"}), reasoning=True))
    first = events(responses_server, request(tools=(WEATHER,)))
    [block, ids] = [e for e in first if isinstance(e, ProviderBlock)]
    history = (Message("user", "hi"),
               Message("assistant", "", tool_calls=(ToolCall("call_a", "weather",
                                                             {"city": "Rome"}),),
                       extra=(block, ids)),
               Message("tool", "sunny", tool_call_id="call_a", name="weather"))
    events(responses_server, request(*history, tools=(WEATHER,)))
    sent = responses_server.bodies()[1]["input"]
    assert [i.get("type", i.get("role")) for i in sent] == [
        "user", "reasoning", "function_call", "function_call_output"]
    assert json.dumps(sent[1], separators=(",", ":")) == block.data  # byte for byte
    assert sent[2] == {"type": "function_call", "id": "fc_0003", "call_id": "call_a",
                       "name": "weather", "arguments": '{"city": "Rome"}'}
    history = (history[0], replace(history[1], extra=(block,)), history[2])  # today's bug
    with pytest.raises(BadRequestError, match="without its required following item"):
        events(responses_server, request(*history, tools=(WEATHER,)))
    assert sent[3] == {"type": "function_call_output", "call_id": "call_a", "output": "sunny"}


def test_blocks_that_cannot_be_sent_back_are_left_out() -> None:
    unsigned = ProviderBlock(OPENAI_RESPONSES, "reasoning", '{"id":"rs_1","type":"reasoning",'
                                                            '"summary":[]}')
    thinking = ProviderBlock("anthropic", "thinking", '{"type":"thinking"}')
    reply = Message("assistant", "ok", extra=(unsigned, thinking))
    assert input_items([reply], images=True) == [{"role": "assistant", "content": "ok"}]
    assert input_items([reply], images=True, store=True)[0]["id"] == "rs_1"


def test_images_of_a_tool_result_go_in_its_output() -> None:
    image = Image("image/png", 3, "d" * 64, data=b"png")
    result = Message("tool", "a chart", tool_call_id="c1", name="plot", images=(image,))
    [item] = input_items([result], images=True)
    assert item["output"] == [{"type": "input_text", "text": "a chart"},
                              {"type": "input_image", "detail": "auto",
                               "image_url": "data:image/png;base64,cG5n"}]
    [plain] = input_items([result], images=False)  # a model without images: the stand-in
    assert plain["output"].startswith("a chart\n[image: image/png, 3 bytes, not shown")


def test_the_output_limit_is_reported_as_cut_off(responses_server: ResponsesServer) -> None:
    responses_server.push(said("Once upon a", incomplete="max_output_tokens"))
    out = events(responses_server)
    assert out[-1] == Done("max_tokens")
    assert any(isinstance(e, UsageEvent) for e in out)


@pytest.mark.parametrize(("answer", "error", "limit"), [
    (http_error(400, CONTEXT_TOO_LONG, code="context_length_exceeded"), ContextTooLongError,
     None),
    (http_error(400, "This model's maximum context length is 400000 tokens. However, your "
                     "messages resulted in 401000 tokens.", code="context_length_exceeded"),
     ContextTooLongError, 400000),
    (error_event(CONTEXT_TOO_LONG, code="context_length_exceeded"), ContextTooLongError, None),
    (failed("The server had an error while processing your request."), ServerError, None),
    (http_error(429, "Rate limit reached", code="rate_limit_exceeded",
                error_type="requests"), RateLimitError, None),
    (http_error(401, "Incorrect API key provided: sk-test-key-123456",
                code="invalid_api_key"), AuthError, None),
])
def test_error_shapes(responses_server: ResponsesServer, answer: Any,
                      error: type[ProviderError], limit: int | None) -> None:
    responses_server.push(answer)
    got: list[StreamEvent] = []
    with pytest.raises(error) as caught:
        for event in provider(responses_server).stream(request()):
            got.append(event)
    assert "sk-test-key-123456" not in str(caught.value)
    if isinstance(caught.value, ContextTooLongError):
        assert caught.value.limit == limit


def test_an_error_event_after_text_keeps_the_text(responses_server: ResponsesServer) -> None:
    responses_server.push(error_event("boom", code="server_error", text="kept words"))
    got: list[StreamEvent] = []
    with pytest.raises(ServerError):
        for event in provider(responses_server).stream(request()):
            got.append(event)
    assert "".join(e.text for e in got if isinstance(e, TextDelta)) == "kept words"


def test_compact_keeps_the_window_as_one_block_beside_a_readable_summary(
        responses_server: ResponsesServer) -> None:
    responses_server.compactions.append(Compaction(input_tokens=400, cached=300))
    responses_server.push(said("**Topics Discussed:**\n- the trip", input_tokens=420,
                               cached=380))
    history = (Message("user", "plan the trip"), Message("assistant", "Rome, then Oslo."),
               Message("user", "and the budget?"), Message("assistant", "900 euros."))
    done = provider(responses_server).compact(request(*history), "Summarize in 50 words.")
    assert done.content == "**Topics Discussed:**\n- the trip"
    assert (done.block.provider, done.block.type) == (OPENAI_RESPONSES, "compacted")
    window = json.loads(done.block.data)
    assert [(i["type"], i.get("role")) for i in window] == [
        ("message", "user"), ("message", "user"), ("compaction", None)]
    assert window[-1]["encrypted_content"] in responses_server.issued
    assert (done.usage.input_tokens, done.usage.cache_read_tokens) == (820, 680)
    [compacting] = responses_server.bodies("/v1/responses/compact")
    assert compacting["model"] == "gpt-5-mini" and compacting["instructions"] == "Be brief."
    assert compacting["input"] == input_items(history, images=True)
    # the readable summary: the same prefix, the instruction last (a cache read)
    [writing] = responses_server.bodies()
    assert writing["input"] == [*compacting["input"],
                                {"role": "user", "content": "Summarize in 50 words."}]
    # the window goes first in the next request, each item as it came; the server accepts it
    restoring = Message("user", "Here is the summary.", extra=(done.block,))
    out = events(responses_server, request(restoring))
    assert out[-1] == Done("end")
    sent = responses_server.bodies()[-1]["input"]
    assert json.dumps(sent[:3], separators=(",", ":"), ensure_ascii=False) == done.block.data
    assert sent[3] == {"role": "user", "content": "Here is the summary."}


def test_a_failed_compaction_raises_a_provider_error(responses_server: ResponsesServer,
                                                     ) -> None:
    responses_server.compactions.append(Compaction(status=400, message="compaction is not "
                                                   "supported for this model"))
    with pytest.raises(ProviderError, match="not supported"):
        provider(responses_server).compact(request(), "Summarize.")
    assert responses_server.bodies() == []  # no summary written for a window that failed


@pytest.mark.parametrize("answer", [
    said("Hello there.", reasoning=True, summary="Greeting back."),
    calling(("call_a", "weather", {"city": "Rome"}), ("call_b", "weather", {"city": "Oslo"})),
    said("Once upon", incomplete="max_output_tokens"),
    error_event(CONTEXT_TOO_LONG, code="context_length_exceeded"),
    failed("The server had an error while processing your request."),
])
def test_the_wire_servers_events_are_the_sdks_types(answer: Any,
                                                    responses_server: ResponsesServer) -> None:
    """Each frame tests/wire_responses.py sends validates as the SDK's ResponseStreamEvent
    (the SDK itself parses leniently: this is what keeps the fake server honest)."""
    from openai.types.responses import ResponseStreamEvent
    from pydantic import TypeAdapter

    from tests.wire_responses import _Events

    body = {"model": "gpt-5-mini", "include": ["reasoning.encrypted_content"], "store": False}
    adapter: TypeAdapter[Any] = TypeAdapter(ResponseStreamEvent)
    for frame in _Events(responses_server, body).of(answer):
        kind, _, data = frame.partition("\ndata: ")
        event = adapter.validate_python(json.loads(data))
        assert kind == f"event: {event.type}"


def test_thinking_settings_become_the_reasoning_parameter() -> None:
    from rollchat.providers.openai_responses import request_params

    def reasoning(thinking: Any, model: str = "gpt-5-mini") -> Any:
        return request_params(request(thinking=thinking) if model == "gpt-5-mini" else
                              ChatRequest(model, "", (Message("user", "hi"),),
                                          thinking=thinking), images=True).get("reasoning")

    assert reasoning(None) == {"summary": "auto"}
    assert reasoning(20000) == {"summary": "auto", "effort": "high"}
    assert reasoning(2048) == {"summary": "auto", "effort": "low"}
    assert reasoning("off") == {"effort": "minimal"}  # its least; no summary: nothing shown
    assert reasoning("on", "gpt-4.1") is None  # not a reasoning model
    # gpt-5.4-mini (the default) does not reason by default (effort none): "on" asks medium,
    # as Chat Completions does, and "off" its none (before: "on" sent no effort, no reasoning)
    assert reasoning("on", "gpt-5.4-mini") == {"summary": "auto", "effort": "medium"}
    assert reasoning("off", "gpt-5.4-mini") == {"effort": "none"}
    assert reasoning(None, "gpt-5.4-mini") == {"summary": "auto"}  # the model's default
    assert reasoning("on", "gpt-5-pro") == {"summary": "auto"}  # high only: never sent
