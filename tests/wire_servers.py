"""Local HTTP servers speaking the OpenAI Chat Completions and Anthropic Messages wire formats.

Scriptable (queue ``Reply`` values), recording every request; pytest fixtures
``openai_server`` and ``anthropic_server`` (import them into a test module to use them).
"""

from __future__ import annotations

import contextlib
import functools
import json
import re
import socket
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal
from urllib.parse import unquote, urlsplit

import pytest

from rollchat.memory.layers import split_block
from tests.wire_thinking import thinking_frames, thinking_refusal, thinks

ReplyKind = Literal[
    "text", "tool", "error", "garbage", "truncated", "drop", "stall", "stream_error"
]


@dataclass(frozen=True)
class Reply:
    """One scripted reply. Build them with the helper functions below."""

    kind: ReplyKind
    text: str = ""
    tool_name: str = ""
    tool_args: dict[str, Any] = field(default_factory=dict)
    tool_id: str = "call_1"
    raw_args: str | None = None  # tool arguments sent verbatim instead of json(tool_args)
    more_tools: tuple[tuple[str, str, dict[str, Any]], ...] = ()  # parallel calls: (id, name, args)
    usage: bool = True
    input_tokens: int = 11
    output_tokens: int = 7
    cache_read: int = 0
    cache_write: int = 0
    stop: str | None = None  # override the finish/stop reason
    status: int = 200
    error_type: str = ""
    error_code: str | None = None
    message: str = ""
    headers: dict[str, str] = field(default_factory=dict)
    stall_seconds: float = 30.0
    after_chunks: int = 0  # stall / drop after this many stream chunks
    error_param: str | None = None  # an OpenAI error's "param"
    reasoning: str = ""  # OpenAI-compatible servers' ``reasoning_content`` deltas, before the text
    # Anthropic: the thinking of a model that thinks (tests/wire_thinking.py), before the text
    # (a default one when empty), and a redacted_thinking block after it
    thought: str = ""
    redacted: bool = False


def text(text: str, **kw: Any) -> Reply:
    return Reply("text", text=text, **kw)


def tool(name: str, args: dict[str, Any], *, tool_id: str = "call_1", **kw: Any) -> Reply:
    return Reply("tool", tool_name=name, tool_args=args, tool_id=tool_id, **kw)


def tools(*calls: tuple[str, str, dict[str, Any]], **kw: Any) -> Reply:
    """One reply with several tool calls (parallel tool calls), each ``(id, name, args)``."""
    first, *rest = calls
    return Reply("tool", tool_id=first[0], tool_name=first[1], tool_args=first[2],
                 more_tools=tuple(rest), **kw)


def _calls(r: Reply) -> list[tuple[str, str, str]]:
    """Every tool call of a reply: (id, name, JSON arguments)."""
    return [(r.tool_id, r.tool_name, _args(r)),
            *((i, n, json.dumps(a)) for i, n, a in r.more_tools)]


def error(status: int, message: str, *, error_type: str = "", code: str | None = None,
          headers: dict[str, str] | None = None, param: str | None = None) -> Reply:
    return Reply("error", status=status, message=message, error_type=error_type,
                 error_code=code, headers=headers or {}, error_param=param)


def garbage() -> Reply:
    """A 200 event stream whose data lines are not JSON."""
    return Reply("garbage")


def truncated(text: str = "partial answer") -> Reply:
    """A stream that ends cleanly after some text but without its final events."""
    return Reply("truncated", text=text)


def drop(text: str = "partial answer", after_chunks: int = 2) -> Reply:
    """A stream whose connection is cut (no chunked terminator) after ``after_chunks`` chunks."""
    return Reply("drop", text=text, after_chunks=after_chunks)


def stall(seconds: float = 30.0, after_chunks: int = 0, text: str = "slow answer") -> Reply:
    """Wait ``seconds`` (released at server shutdown) before headers or after some chunks."""
    return Reply("stall", text=text, stall_seconds=seconds, after_chunks=after_chunks)


def held(first: str, rest: str, seconds: float = 600) -> Reply:
    """An answer whose first paragraph, ``first``, is sent, then ``rest`` held back ``seconds``
    (released at server shutdown: in effect until the chat hangs up). A Ctrl-C or a signal sent
    once ``first`` shows then lands while the answer streams, however late it comes. A whole
    paragraph is drawn as soon as it arrives; an unfinished one only at the next redraw, which
    a chunk within 1/15 s of the last one (as after a tool's result) gets only from a later
    chunk."""
    head = first + "\n\n"
    answer = head + rest.ljust(2 * len(head))  # padded: the first of the three parts the
    assert split_text(answer)[0] == head, first  # text streams in is exactly the paragraph
    return stall(seconds, after_chunks=2, text=answer)  # (the role chunk, then the paragraph)


@dataclass(frozen=True)
class Charge:
    """What the server billed one answer: the model asked, its input and output tokens."""

    model: str
    input_tokens: int
    output_tokens: int


@dataclass(frozen=True)
class Recorded:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    prompt_tokens: int | None = None  # the cl100k count, in counting mode


def split_text(text: str, parts: int = 3) -> list[str]:
    """Split ``text`` into up to ``parts`` non-empty pieces (so a reply streams in chunks)."""
    if not text:
        return []
    size = max(1, -(-len(text) // parts))
    return [text[i:i + size] for i in range(0, len(text), size)]


# ---------------------------------------------------------------- the two dialects


def _args(r: Reply) -> str:
    return r.raw_args if r.raw_args is not None else json.dumps(r.tool_args)


class OpenAIDialect:
    path = "/v1/chat/completions"

    def error_body(self, r: Reply) -> dict[str, Any]:
        kind = r.error_type or {401: "invalid_request_error", 429: "rate_limit_exceeded",
                                400: "invalid_request_error"}.get(r.status, "server_error")
        return {"error": {"message": r.message, "type": kind, "param": r.error_param,
                          "code": r.error_code}}

    def _chunk(self, delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1,
                "model": "test-model",
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    def _usage(self, r: Reply) -> dict[str, Any]:
        return {"prompt_tokens": r.input_tokens, "completion_tokens": r.output_tokens,
                "total_tokens": r.input_tokens + r.output_tokens,
                "prompt_tokens_details": {"cached_tokens": r.cache_read}}

    def events(self, r: Reply, body: dict[str, Any]) -> list[str]:
        """SSE frames for a text or tool reply (the final ones included)."""
        frames = [self._chunk({"role": "assistant", "content": ""})]
        frames += [self._chunk({"reasoning_content": piece}) for piece in split_text(r.reasoning)]
        frames += [self._chunk({"content": piece}) for piece in split_text(r.text)]
        finish = r.stop or "stop"
        if r.kind == "tool":
            finish = r.stop or "tool_calls"
            for index, (call_id, name, args) in enumerate(_calls(r)):
                head = {"index": index, "id": call_id, "type": "function",
                        "function": {"name": name, "arguments": ""}}
                frames.append(self._chunk({"tool_calls": [head]}))
                for piece in split_text(args, 4):
                    frames.append(self._chunk(
                        {"tool_calls": [{"index": index, "function": {"arguments": piece}}]}))
        frames.append(self._chunk({}, finish))
        wants_usage = bool((body.get("stream_options") or {}).get("include_usage"))
        if r.usage and wants_usage:
            frames.append({"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1,
                           "model": "test-model", "choices": [], "usage": self._usage(r)})
        out = [f"data: {json.dumps(f)}\n\n" for f in frames]
        if r.kind == "truncated":
            return out[: 1 + len(split_text(r.text))]
        return [*out, "data: [DONE]\n\n"]

    def whole(self, r: Reply) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": r.text or None}
        finish = r.stop or "stop"
        if r.kind == "tool":
            finish = r.stop or "tool_calls"
            message["tool_calls"] = [{"id": i, "type": "function", "function": {
                "name": n, "arguments": a}} for i, n, a in _calls(r)]
        out: dict[str, Any] = {"id": "chatcmpl-1", "object": "chat.completion", "created": 1,
                               "model": "test-model", "choices": [
                                   {"index": 0, "message": message, "finish_reason": finish}]}
        if r.usage:
            out["usage"] = self._usage(r)
        return out

    def stream_error(self, r: Reply) -> str:
        return f"data: {json.dumps(self.error_body(r))}\n\n"


class AnthropicDialect:
    """The Messages API; ``thinks``: the model thinks by default (as current Claude models do:
    adaptive thinking), so it answers with signed thinking first and the server holds
    requests to the thinking rules (tests/wire_thinking.py)."""

    path = "/v1/messages"

    def __init__(self, *, thinks: bool = False) -> None:
        self.thinks = thinks

    def error_body(self, r: Reply) -> dict[str, Any]:
        kind = r.error_type or {400: "invalid_request_error", 401: "authentication_error",
                                403: "permission_error", 429: "rate_limit_error",
                                529: "overloaded_error"}.get(r.status, "api_error")
        return {"type": "error", "error": {"type": kind, "message": r.message}}

    def _usage_start(self, r: Reply) -> dict[str, Any]:
        return {"input_tokens": r.input_tokens, "output_tokens": 1,
                "cache_read_input_tokens": r.cache_read,
                "cache_creation_input_tokens": r.cache_write}

    def _message(self, r: Reply, content: list[dict[str, Any]], stop: str | None) -> dict[str, Any]:
        msg: dict[str, Any] = {"id": "msg_1", "type": "message", "role": "assistant",
                               "model": "test-model", "content": content,
                               "stop_reason": stop, "stop_sequence": None}
        if r.usage:
            msg["usage"] = self._usage_start(r)
        return msg

    def _blocks(self, r: Reply, body: dict[str, Any],
                ) -> list[tuple[dict[str, Any], list[dict[str, Any]]]]:
        blocks: list[tuple[dict[str, Any], list[dict[str, Any]]]] = []
        if thinks(body, self.thinks) and r.kind in ("text", "tool", "truncated"):
            blocks += thinking_frames(r.thought or f"The user said {last_user_text(body)!r}; "
                                      "I will answer.", r.redacted, body)
        if r.text:
            deltas = [{"type": "text_delta", "text": p} for p in split_text(r.text)]
            blocks.append(({"type": "text", "text": ""}, deltas))
        if r.kind == "tool":
            for call_id, name, args in _calls(r):
                start = {"type": "tool_use", "id": call_id, "name": name, "input": {}}
                blocks.append((start, [{"type": "input_json_delta", "partial_json": p}
                                       for p in split_text(args, 4)]))
        return blocks

    def events(self, r: Reply, body: dict[str, Any]) -> list[str]:
        frames: list[dict[str, Any]] = [
            {"type": "message_start", "message": self._message(r, [], None)}]
        for index, (start, deltas) in enumerate(self._blocks(r, body)):
            frames.append({"type": "content_block_start", "index": index, "content_block": start})
            if index == 0:
                frames.append({"type": "ping"})
            frames += [{"type": "content_block_delta", "index": index, "delta": d}
                       for d in deltas]
            frames.append({"type": "content_block_stop", "index": index})
        stop = r.stop or ("tool_use" if r.kind == "tool" else "end_turn")
        delta: dict[str, Any] = {"type": "message_delta",
                                 "delta": {"stop_reason": stop, "stop_sequence": None}}
        if r.usage:
            delta["usage"] = {"output_tokens": r.output_tokens}
        frames += [delta, {"type": "message_stop"}]
        out = [f"event: {f['type']}\ndata: {json.dumps(f)}\n\n" for f in frames]
        if r.kind == "truncated":
            return out[:-3]  # no content_block_stop, message_delta, message_stop
        return out

    def whole(self, r: Reply) -> dict[str, Any]:
        content: list[dict[str, Any]] = []
        if r.text:
            content.append({"type": "text", "text": r.text})
        if r.kind == "tool":
            content += [{"type": "tool_use", "id": i, "name": n, "input": json.loads(a)}
                        for i, n, a in _calls(r)]
        stop = r.stop or ("tool_use" if r.kind == "tool" else "end_turn")
        msg = self._message(r, content, stop)
        if r.usage:
            msg["usage"]["output_tokens"] = r.output_tokens
        return msg

    def stream_error(self, r: Reply) -> str:
        return f"event: error\ndata: {json.dumps(self.error_body(r))}\n\n"


Dialect = OpenAIDialect | AnthropicDialect


def stream_error(message: str = "Overloaded", *, error_type: str = "overloaded_error") -> Reply:
    """A 200 stream that sends some text, then an error event (Anthropic ``event: error``)."""
    return Reply("stream_error", text="partial answer", message=message, error_type=error_type)


# ---------------------------------------------------------------- the server


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        """Silence the default stderr access log."""

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        if len(raw) < length:  # the client hung up mid-request (a side request cut for the
            self.close_connection = True  # chat's, providers/lanes.py): a real server never
            return  # sees a request, so none is recorded or answered
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = {"_raw": raw.decode("utf-8", "replace")}
        owner = self.server.owner
        refused = param_refusal(owner.dialect, body) or image_refusal(owner.dialect, body)
        if refused is not None:  # the model's documented refusal of a parameter it does not take
            owner.refused_params.append(body)
            self._reply(refused, body)
            return
        if is_extraction(body):  # a fact-extraction call: apart from the scripted chat
            owner.extractions.append(body)
            self._reply(stall(owner.extraction_stall, text=owner.extraction_reply)
                        if owner.extraction_stall else text(owner.extraction_reply), body)
            return
        counted = prompt_tokens(body) if owner.counting else None
        owner.requests.append(Recorded(self.path, {k.lower(): v for k, v in self.headers.items()},
                                       body, counted))
        # a query is the client's; through a proxy (HTTP_PROXY) the path is a whole URL
        if urlsplit(self.path).path != owner.dialect.path:
            self._json(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})
            return
        if owner.strict_tools:
            orphan = tool_pairing_error(owner.dialect, body)
            if orphan is not None:
                owner.rejected.append(owner.requests[-1])
                self._reply(orphan, body)
                return
        if isinstance(owner.dialect, AnthropicDialect):
            refused = thinking_refusal(body, owner.dialect.thinks, dict(self.headers.items()))
            if refused is not None:
                owner.rejected.append(owner.requests[-1])
                self._reply(error(400, refused), body)
                return
        if counted is not None and owner.window is not None and counted > owner.window:
            owner.rejected.append(owner.requests[-1])
            refusal = owner.refusal or (lambda n, w: too_long(owner.dialect, n, w))
            self._reply(refusal(counted, owner.window), body)
            return
        reply = owner.next_reply(body)
        if counted is not None and reply.kind in ("text", "tool"):
            reply = replace(reply, input_tokens=counted)
        self._reply(reply, body)

    def do_GET(self) -> None:
        """The models endpoints: Anthropic's ``GET /v1/models/{id}`` (the SDK's ModelInfo, with
        ``max_input_tokens``/``max_tokens`` for a model in ``model_windows``, else its 404
        not_found_error) and the OpenAI-compatible ``GET /v1/models`` (a list; an entry of
        ``model_windows`` with ``context_length``, as OpenRouter states it)."""
        owner = self.server.owner
        path = urlsplit(self.path).path
        owner.gets.append(path)
        if isinstance(owner.dialect, AnthropicDialect) and path.startswith("/v1/models/"):
            model = unquote(path.removeprefix("/v1/models/"))
            if model not in owner.model_windows:
                self._json(404, {"type": "error", "error": {
                    "type": "not_found_error", "message": f"model: {model}"}})
                return
            self._json(200, {"type": "model", "id": model, "display_name": model,
                             "created_at": "2026-01-01T00:00:00Z", "lifecycle": "active",
                             "max_input_tokens": owner.model_windows[model],
                             "max_tokens": 64_000})
        elif isinstance(owner.dialect, OpenAIDialect) and path == "/v1/models":
            self._json(200, {"object": "list", "data": [
                {"id": m, "object": "model", "created": 1, "owned_by": "wire",
                 "context_length": n} for m, n in owner.model_windows.items()]})
        else:
            self._json(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})

    def _json(self, status: int, payload: dict[str, Any], headers: dict[str, str] | None = None,
              ) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(data)

    def _reply(self, r: Reply, body: dict[str, Any]) -> None:
        dialect = self.server.owner.dialect
        told = not isinstance(dialect, OpenAIDialect) or not body.get("stream") or bool(
            (body.get("stream_options") or {}).get("include_usage"))
        if r.kind in ("text", "tool") and r.usage and told:  # what this call is billed
            self.server.owner.charged.append(Charge(str(body.get("model")), r.input_tokens,
                                                    r.output_tokens))
        if r.kind == "error":
            self._json(r.status, dialect.error_body(r), r.headers)
            return
        if r.kind == "stall" and r.after_chunks == 0 and self._wait(r):
            return
        if not body.get("stream"):
            self._json(200, dialect.whole(r))
            return
        self._stream(r, self._frames(r, body))

    def _frames(self, r: Reply, body: dict[str, Any]) -> list[str]:
        dialect = self.server.owner.dialect
        if r.kind == "garbage":
            return ["data: {not json at all\n\n", "data: <<<garbage>>>\n\n",
                    "event: content_block_delta\ndata: {{{\n\n"]
        if r.kind == "stream_error":
            return [*dialect.events(text(r.text), body)[:3], dialect.stream_error(r)]
        return dialect.events(r, body)

    def _wait(self, r: Reply) -> bool:
        """Stall; True when the server is shutting down (then the connection is closed)."""
        released = self.server.owner.released.wait(r.stall_seconds)
        if released:
            self.close_connection = True
        return released

    def _stream(self, r: Reply, frames: list[str]) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for count, frame in enumerate(frames):
            if count == r.after_chunks and r.kind == "drop":
                self._cut()
                return
            if count == r.after_chunks and r.kind == "stall" and count and self._wait(r):
                return
            data = frame.encode()
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.wfile.flush()
        self.wfile.write(b"0\r\n\r\n")

    def _cut(self) -> None:
        self.wfile.flush()
        self.close_connection = True
        with contextlib.suppress(OSError):
            self.connection.shutdown(socket.SHUT_RDWR)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    owner: WireServer

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Clients hang up on purpose in these tests (timeouts, bad streams): stay quiet."""
        if not isinstance(sys.exc_info()[1], OSError):
            super().handle_error(request, client_address)


class WireServer:
    """A scripted wire-format server on 127.0.0.1.

    ``queue`` holds the next replies in order; when it is empty the server answers with
    ``echo: <last user text>`` (or asks ``responder``). ``requests`` records every request,
    except the memory's fact-extraction calls (memory/extract.py): those are answered with
    ``extraction_reply`` (no facts; after ``extraction_stall`` seconds when set) and recorded
    in ``extractions``, so a test that scripts the chat and its summaries need not script them.

    Counting mode (``counting=True`` or a ``window``): each request's prompt is counted with
    cl100k (``prompt_tokens``), reported as its input tokens, and a prompt above ``window``
    gets the provider's real context-length error (HTTP 400) instead of an answer (or the one
    ``refusal`` builds). ``strict_tools``: a tool result without its call just before it, or a
    call without its results just after, gets the provider's real 400.
    """

    def __init__(self, dialect: Dialect, *, counting: bool = False, window: int | None = None,
                 responder: Callable[[dict[str, Any]], Reply] | None = None,
                 refusal: Callable[[int, int], Reply] | None = None,
                 strict_tools: bool = False) -> None:
        self.dialect = dialect
        self.counting = counting or window is not None
        self.window = window
        self.responder = responder
        self.refusal = refusal  # (prompt tokens, window) -> the refusal, instead of too_long
        self.strict_tools = strict_tools  # refuse orphan tool messages as real providers do
        self.rejected: list[Recorded] = []  # requests refused (too long, orphan tools)
        self.queue: list[Reply] = []
        self.requests: list[Recorded] = []
        self.extractions: list[dict[str, Any]] = []
        self.charged: list[Charge] = []  # every answer that told its usage (extractions too)
        self.refused_params: list[dict[str, Any]] = []  # refused by param_refusal, any kind
        self.model_windows: dict[str, int] = {}  # what the models endpoint states (do_GET)
        self.gets: list[str] = []  # the paths asked with GET
        self.extraction_reply = "[]"
        self.extraction_stall = 0.0  # seconds before the extraction reply (a slow model)
        self.released = threading.Event()
        self._lock = threading.Lock()
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.owner = self
        self._thread = threading.Thread(target=self._server.serve_forever,
                                        kwargs={"poll_interval": 0.02}, daemon=True)

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        """The base URL a client is given (OpenAI: ``.../v1``; Anthropic: the root)."""
        root = f"http://127.0.0.1:{self.port}"
        return f"{root}/v1" if isinstance(self.dialect, OpenAIDialect) else root

    @property
    def bodies(self) -> list[dict[str, Any]]:
        return [r.body for r in self.requests]

    def push(self, *replies: Reply) -> WireServer:
        with self._lock:
            self.queue.extend(replies)
        return self

    def next_reply(self, body: dict[str, Any]) -> Reply:
        with self._lock:
            if self.queue:
                return self.queue.pop(0)
        if self.responder is not None:
            return self.responder(body)
        return text(f"echo: {last_user_text(body)}")

    def start(self) -> WireServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.released.set()
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> WireServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def last_user_text(body: dict[str, Any], items: str = "messages", part: str = "text") -> str:
    """The text of the last user message of a request body (either dialect; the Responses
    API's with ``items="input", part="input_text"``), without the context block rollchat
    puts before it (date and time, remembered facts): what was typed."""
    for message in reversed(body.get(items) or []):
        if message.get("role") != "user":
            continue
        content = message.get("content")
        if isinstance(content, str):
            return split_block(content)[1]
        texts = [b.get("text", "") for b in content or [] if b.get("type") == part]
        if texts:
            return split_block(texts[-1])[1]
    return ""


# ---------------------------------------------------------------- counting mode

_PER_MESSAGE, _PER_TOOL_CALL, _PER_TOOL_SPEC, _PRIMING = 4, 4, 8, 3


@functools.lru_cache(maxsize=1)
def _encoding() -> Any:
    from rollchat.models.encodings import vendored

    return vendored("cl100k_base")  # rollchat's vendored table: no download


def _tokens(value: object) -> int:
    if value is None or value == "":
        return 0
    text_value = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return len(_encoding().encode(text_value, disallowed_special=()))


def _block_tokens(block: Any) -> int:
    """One Anthropic content block (or an OpenAI string content)."""
    if isinstance(block, str):
        return _tokens(block)
    kind = block.get("type")
    if kind == "text":
        return _tokens(block.get("text"))
    if kind == "tool_use":
        return (_PER_TOOL_CALL + _tokens(block.get("id")) + _tokens(block.get("name"))
                + _tokens(block.get("input")))
    if kind == "tool_result":
        content = block.get("content")
        inner = content if isinstance(content, str) else sum(
            _block_tokens(b) for b in content or [])
        return _tokens(block.get("tool_use_id")) + (_tokens(inner) if isinstance(inner, str)
                                                    else inner)
    return _tokens(block)


def _message_tokens(message: dict[str, Any]) -> int:
    total = _PER_MESSAGE
    content = message.get("content")
    if isinstance(content, list):
        total += sum(_block_tokens(b) for b in content)
    else:
        total += _block_tokens(content or "")
    for call in message.get("tool_calls") or []:
        function = call.get("function") or {}
        total += (_PER_TOOL_CALL + _tokens(call.get("id")) + _tokens(function.get("name"))
                  + _tokens(function.get("arguments")))
    return total + _tokens(message.get("tool_call_id"))


def is_extraction(body: dict[str, Any]) -> bool:
    """Whether a request body (either dialect) is the memory's fact-extraction call."""
    from rollchat.memory.extract import EXTRACT_SYSTEM

    system = body.get("system")
    if isinstance(system, list):
        system = "".join(b.get("text", "") for b in system if isinstance(b, dict))
    if system is None:
        first = (body.get("messages") or [{}])[0]
        system = first.get("content") if isinstance(first, dict) and \
            first.get("role") == "system" else None
    return system == EXTRACT_SYSTEM


def prompt_tokens(body: dict[str, Any]) -> int:
    """The prompt of a request body as sent (either dialect) counted with cl100k: system,
    every message with its tool calls and results, and the tool definitions."""
    total = _PRIMING
    system = body.get("system")
    if system:
        blocks = system if isinstance(system, list) else [system]
        total += _PER_MESSAGE + sum(_block_tokens(b) for b in blocks)
    total += sum(_message_tokens(m) for m in body.get("messages") or [])
    for spec in body.get("tools") or []:
        function = spec.get("function") or spec
        schema = function.get("parameters") or function.get("input_schema")
        total += (_PER_TOOL_SPEC + _tokens(function.get("name"))
                  + _tokens(function.get("description")) + _tokens(schema))
    return total


def too_long(dialect: Dialect, tokens: int, window: int) -> Reply:
    """The provider's own context-length error for a prompt of ``tokens``."""
    if isinstance(dialect, OpenAIDialect):
        return error(400, f"This model's maximum context length is {window} tokens. However, "
                          f"your messages resulted in {tokens} tokens. Please reduce the "
                          "length of the messages.", code="context_length_exceeded")
    return error(400, f"prompt is too long: {tokens} tokens > {window} maximum",
                 error_type="invalid_request_error")


def tool_pairing_error(dialect: Dialect, body: dict[str, Any]) -> Reply | None:
    """The provider's 400 for a request whose tool calls and results are not paired, or None.

    Wordings: OpenAI (and DeepSeek) "Messages with role 'tool' must be a response to a
    preceding message with 'tool_calls'" (e.g. FoundationAgents/OpenManus#744); Anthropic
    "unexpected `tool_use_id` found in `tool_result` blocks" (anthropics/claude-code#13460) and
    "`tool_use` ids were found without `tool_result` blocks immediately after"
    (anthropics/claude-code#7929)."""
    messages = body.get("messages") or []
    if isinstance(dialect, OpenAIDialect):
        expected: list[str] = []
        for m in messages:
            if m.get("role") == "tool":
                if m.get("tool_call_id") not in expected:
                    return error(400, "Messages with role 'tool' must be a response to a "
                                      "preceding message with 'tool_calls'")
                expected.remove(m["tool_call_id"])
            elif expected:
                return error(400, "An assistant message with 'tool_calls' must be followed by "
                                  "tool messages responding to each 'tool_call_id'. The "
                                  f"following tool_call_ids did not have response messages: "
                                  f"{', '.join(expected)}")
            if m.get("role") == "assistant" and m.get("tool_calls"):
                expected = [c["id"] for c in m["tool_calls"]]
        return None
    asked: set[str] = set()
    for i, m in enumerate(messages):
        blocks = m.get("content") if isinstance(m.get("content"), list) else []
        results = [b["tool_use_id"] for b in blocks if b.get("type") == "tool_result"]
        stray = [r for r in results if r not in asked]
        if stray:
            return error(400, f"messages.{i}.content.0: unexpected `tool_use_id` found in "
                              f"`tool_result` blocks: {stray[0]}. Each `tool_result` block must "
                              "have a corresponding `tool_use` block in the previous message.")
        missing = asked - set(results)
        if missing:
            return error(400, f"messages.{i - 1}: `tool_use` ids were found without "
                              f"`tool_result` blocks immediately after: {sorted(missing)[0]}. "
                              "Each `tool_use` block must have a corresponding `tool_result` "
                              "block in the next message.")
        asked = {b["id"] for b in blocks if b.get("type") == "tool_use"}
    return None


def _version(model: str, family: str) -> tuple[int, ...] | None:
    """(4, 7) for ``claude-opus-4-7``/``claude-opus-4-7-20260416`` and family "claude-opus"."""
    rest = model.removeprefix(f"{family}-")
    if rest == model:
        return None
    numbers = []
    for part in rest.split("-"):
        if not part.isdigit() or len(part) > 2:
            break
        numbers.append(int(part))
    return tuple(numbers) or None


def _openai_reasoning(model: str) -> bool:
    if model.startswith(("o1", "o3", "o4", "gpt-6")):
        return True
    return model.startswith("gpt-5") and "-chat" not in model


def effort_refusal(model: str, effort: object) -> Reply | None:
    """OpenAI's 400 for a ``reasoning_effort`` the model does not take: any on a model that does
    not reason (gpt-4o, gpt-4.1, gpt-5-chat), "none" before gpt-5.1, "minimal" on the o-series
    (the openai SDK's ReasoningEffort: "All models before gpt-5.1 ... do not support none")."""
    if effort is None:
        return None
    if model.startswith(("gpt-4", "gpt-3.5", "chatgpt")) or "-chat" in model:
        return error(400, "Unsupported parameter: 'reasoning_effort' is not supported with this "
                          "model.", code="unsupported_parameter", param="reasoning_effort",
                     error_type="invalid_request_error")
    allowed = {"low", "medium", "high"}
    if model.startswith(("gpt-5.6", "gpt-6-sol")):  # none to max (their developers.openai.com
        allowed |= {"none", "xhigh", "max"}  # pages); gpt-6.2-sol refuses none
    elif model.startswith("gpt-6.2-sol"):
        allowed |= {"xhigh", "max"}
    elif re.match(r"gpt-5\.\d", model):
        allowed |= {"none", "xhigh"}
    elif model.startswith("gpt-5"):
        allowed.add("minimal")
    if _openai_reasoning(model) and effort not in allowed:
        return error(400, f"Unsupported value: 'reasoning_effort' does not support '{effort}' "
                          "with this model.", code="unsupported_value",
                     param="reasoning_effort", error_type="invalid_request_error")
    return None


def param_refusal(dialect: Dialect, body: dict[str, Any]) -> Reply | None:
    """The provider's documented 400 for a parameter the request's model does not take.

    OpenAI reasoning models (o-series, gpt-5 family): a temperature or top_p other than 1 is
    "unsupported_value" and ``max_tokens`` "unsupported_parameter" (OpenHands/OpenHands#4131).
    Anthropic: Claude Opus 4.7 and later refuse temperature, top_p and top_k ("`temperature` is
    deprecated for this model.", Comfy-Org/ComfyUI#13923); the 4.1-4.6 generation refuses
    temperature and top_p together (browseros-ai/BrowserOS#208)."""
    model = str(body.get("model") or "")
    if isinstance(dialect, OpenAIDialect):
        if (model.startswith("gpt-6-sol") and body.get("tools")
                and body.get("reasoning_effort") != "none"):
            # developers.openai.com/zh-Hans/api/docs/models/gpt-6-sol: Chat Completions calls
            # functions only with reasoning_effort none (its default is medium); the wording
            # is this server's
            return error(400, "Function tools with reasoning_effort are not supported for "
                              f"{model} in /v1/chat/completions. Set reasoning_effort to "
                              "'none' or use /v1/responses.",
                         error_type="invalid_request_error")
        effort = effort_refusal(model, body.get("reasoning_effort"))
        if effort is not None or not _openai_reasoning(model):
            return effort
        for name in ("temperature", "top_p"):
            if name in body and body[name] != 1:
                return error(400, f"Unsupported value: '{name}' does not support "
                                  f"{body[name]} with this model. Only the default (1) value "
                                  "is supported.", code="unsupported_value", param=name,
                             error_type="invalid_request_error")
        if "max_tokens" in body:
            return error(400, "Unsupported parameter: 'max_tokens' is not supported with this "
                              "model. Use 'max_completion_tokens' instead.",
                         code="unsupported_parameter", param="max_tokens",
                         error_type="invalid_request_error")
        return None
    version = next((v for f in ("claude-opus", "claude-sonnet", "claude-haiku")
                    if (v := _version(model, f)) is not None), None)
    if version is None:
        return None
    forced = sonnet_5_5_refusal(model, body)
    if forced is not None:
        return forced
    if version >= (4, 7):
        for name in ("temperature", "top_p", "top_k"):
            if name in body:
                return error(400, f"`{name}` is deprecated for this model.")
    elif version >= (4, 1) and "temperature" in body and "top_p" in body:
        return error(400, "`temperature` and `top_p` cannot both be specified for this model. "
                          "Please use only one.")
    return None


def sonnet_5_5_refusal(model: str, body: dict[str, Any]) -> Reply | None:
    """Claude Sonnet 5.5's 400s besides sampling and thinking ("Claude Sonnet 5.5 migration
    guide": a request with "forced tool choice" or "assistant prefill" returns a 400; "What's
    new in Claude Sonnet 5.5": "Forced tool use returns an error"). The wording is this
    server's."""
    if not model.startswith("claude-sonnet-5-5"):
        return None
    choice = body.get("tool_choice")
    if isinstance(choice, dict) and choice.get("type") in ("any", "tool"):
        return error(400, f"tool_choice.type: \"{choice['type']}\" (forced tool use) is not "
                          "supported for this model.")
    messages = body.get("messages") or []
    if messages and messages[-1].get("role") == "assistant":
        return error(400, "This model does not support assistant message prefill. The "
                          "conversation must end with a user message.")
    return None


def _image_sources(body: dict[str, Any]) -> list[str]:
    """The base64 data of every Anthropic image block of a request (tool results' too)."""
    found: list[str] = []

    def walk(blocks: Any) -> None:
        for b in blocks if isinstance(blocks, list) else ():
            if isinstance(b, dict) and b.get("type") == "image":
                found.append(str((b.get("source") or {}).get("data") or ""))
            elif isinstance(b, dict):
                walk(b.get("content"))
    for m in body.get("messages") or []:
        walk(m.get("content"))
    return found


def image_refusal(dialect: Dialect, body: dict[str, Any]) -> Reply | None:
    """Anthropic's 400 for an image over its limits: the base64 text over 5 MB, a side over
    8000 px, or over 2000 px when the request holds more than 20 images; more than 100
    images (docs.anthropic.com, Vision; the wording as reported in anomalyco/opencode#12068)."""
    if not isinstance(dialect, AnthropicDialect):
        return None
    import base64
    import io

    from PIL import Image as Pillow

    sources = _image_sources(body)
    if len(sources) > 100:
        return error(400, f"Too many images and documents: {len(sources)} > 100.")
    side = 2000 if len(sources) > 20 else 8000
    for i, data in enumerate(sources):
        if len(data) > 5 * 1024 * 1024:
            return error(400, f"messages.{i}.image.source.base64: image exceeds 5 MB maximum: "
                              f"{len(data)} bytes > 5242880 bytes")
        with Pillow.open(io.BytesIO(base64.b64decode(data))) as picture:
            if max(picture.size) > side:
                many = " for many-image requests" if side == 2000 else ""
                return error(400, "At least one of the image dimensions exceed max allowed "
                                  f"size{many}: {side} pixels")
    return None


def closed_port() -> int:
    """A 127.0.0.1 port nothing listens on (bound then released)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def openai_server() -> Iterator[WireServer]:
    with WireServer(OpenAIDialect()) as server:
        yield server


@pytest.fixture
def anthropic_server() -> Iterator[WireServer]:
    with WireServer(AnthropicDialect()) as server:
        yield server
