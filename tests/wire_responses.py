"""A local HTTP server speaking OpenAI's Responses API, for the real openai SDK: POST
/v1/responses (streamed events, as openai/types/responses/*_event.py describe them; with
``context_management``, server-side compaction: see ``compaction_due``), POST
/v1/responses/compact (types/responses/compacted_response.py) and the API's error shapes.

Scriptable (queue ``Answer`` / ``Compaction`` values), recording every request, and strict
where the real service is documented to refuse: a reasoning or compaction item whose
encrypted content this server never issued ("could not be verified", openai/codex#8145;
``issued.clear()`` plays a changed key), a reasoning item sent without it while ``store``
is false ("Items are not persisted when `store` is set to false", vercel/ai#7543), a
function_call_output without its call, a reasoning item sent back without the item that
followed it, by its id ("Item 'rs_...' of type 'reasoning' was provided without its required
following item", openai/openai-agents-python#1660). A reasoning summary only when
``reasoning.summary`` asks for it. Fixture: ``responses_server``.
"""

from __future__ import annotations

import itertools
import json
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal
from urllib.parse import urlsplit

import pytest

from tests import wire_servers
from tests.wire_servers import _tokens, split_text

Kind = Literal["answer", "http_error", "error_event", "failed"]
Call = tuple[str, str, dict[str, Any]]  # (call_id, name, arguments)


@dataclass(frozen=True)
class Answer:
    """One scripted reply of /v1/responses (build it with the helpers below)."""

    kind: Kind = "answer"
    text: str = ""
    calls: tuple[Call, ...] = ()
    reasoning: bool = False  # a reasoning item first (encrypted when include asks for it)
    summary: str = ""  # the reasoning item's summary text, streamed in deltas
    input_tokens: int = 50
    output_tokens: int = 7
    cached: int = 0
    incomplete: str | None = None  # incomplete_details.reason ("max_output_tokens")
    status: int = 400
    code: str | None = None
    message: str = ""
    error_type: str = "invalid_request_error"


def said(text: str, **kw: Any) -> Answer:
    return Answer(text=text, **kw)


def calling(*calls: Call, **kw: Any) -> Answer:
    return Answer(calls=calls, **kw)


def http_error(status: int, message: str, *, code: str | None = None,
               error_type: str = "invalid_request_error") -> Answer:
    return Answer("http_error", status=status, message=message, code=code,
                  error_type=error_type)


def error_event(message: str, *, code: str | None = None, text: str = "partial") -> Answer:
    """Some text, then an ``error`` event (types/responses/response_error_event.py)."""
    return Answer("error_event", text=text, message=message, code=code)


def failed(message: str, *, code: str = "server_error") -> Answer:
    """Some text, then ``response.failed`` whose response carries the error."""
    return Answer("failed", text="partial", message=message, code=code)


# The wording of the real service's context-length refusal: code context_length_exceeded,
# param input (the-open-agent/openagent#2344 quotes it streamed; onyx-dot-app/onyx#6051 for
# gpt-5). It states no window.
CONTEXT_TOO_LONG = ("Your input exceeds the context window of this model. Please adjust your "
                    "input and try again.")


@dataclass(frozen=True)
class Compaction:
    """One scripted reply of /v1/responses/compact: a compacted window, or an HTTP error."""

    status: int = 200
    message: str = ""
    code: str | None = None
    input_tokens: int = 400
    output_tokens: int = 90
    cached: int = 0


@dataclass
class _Ids:
    counter: Iterator[int] = field(default_factory=lambda: itertools.count(1))

    def next(self, prefix: str) -> str:
        return f"{prefix}_{next(self.counter):04d}"


class ResponsesServer:
    """The scripted server on 127.0.0.1. When the queue is empty it asks ``responder``, else
    answers ``echo: <last user text>``. ``requests``: (path, body) of every request; ``issued``: the
    encrypted contents it handed out (only those are accepted back)."""

    def __init__(self) -> None:
        self.responder: Callable[[dict[str, Any]], Answer | None] | None = None
        self.queue: list[Answer] = []
        self.compactions: list[Compaction] = []
        self.requests: list[tuple[str, dict[str, Any]]] = []
        self.refused: list[dict[str, Any]] = []  # bodies answered with a refusal (400, 404)
        self.issued: set[str] = set()
        # reasoning item id -> the id of the output item that followed it (sent back after it)
        self.followers: dict[str, str] = {}
        # False: the field is dropped, as a compatible server may (openrouter.ai's compaction
        # page: "drop the field and return a normal response without a compaction item")
        self.context_management = True
        self.ids = _Ids()
        self._lock = threading.Lock()
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.owner = self
        self._thread = threading.Thread(target=self._server.serve_forever,
                                        kwargs={"poll_interval": 0.02}, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def bodies(self, path: str = "/v1/responses") -> list[dict[str, Any]]:
        """The bodies sent to ``path``, the memory's fact-extraction calls left out."""
        from rollchat.memory.extract import EXTRACT_SYSTEM

        return [b for p, b in self.requests
                if p == path and b.get("instructions") != EXTRACT_SYSTEM]

    def push(self, *answers: Answer) -> ResponsesServer:
        with self._lock:
            self.queue.extend(answers)
        return self

    def next_answer(self, body: dict[str, Any]) -> Answer:
        from rollchat.memory.extract import EXTRACT_SYSTEM

        if body.get("instructions") == EXTRACT_SYSTEM:  # the memory's side call: no facts
            return said("[]")
        with self._lock:
            if self.queue:
                return self.queue.pop(0)
        chosen = self.responder(body) if self.responder is not None else None
        return chosen or said(f"echo: {last_user_text(body)}")

    def refusal(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]] | None:
        """The real service's refusal of ``body``'s input, or None when it is well formed."""
        called: set[str] = set()
        items = body.get("input") or []
        for index, item in enumerate(items):
            kind = item.get("type")
            follower = self.followers.get(item.get("id", "")) if kind == "reasoning" else None
            after = items[index + 1] if index + 1 < len(items) else {}
            if follower is not None and after.get("id") != follower:
                return 400, _error(f"Item '{item.get('id')}' of type 'reasoning' was provided "
                                   "without its required following item.", None,
                                   "invalid_request_error", "input")
            if kind in ("reasoning", "compaction"):
                secret = item.get("encrypted_content")
                if not secret and kind == "reasoning" and not body.get("store", True):
                    return 404, _error(f"Item with id '{item.get('id')}' not found. Items are "
                                       "not persisted when `store` is set to false. Try again "
                                       "with `store` set to true, or remove this item from "
                                       "your input.", None, "invalid_request_error")
                if secret and secret not in self.issued:  # openai/codex#8145's wording
                    return 400, _error(f"The encrypted content {secret[:4]}...{secret[-4:]} "
                                       "could not be verified.", "invalid_encrypted_content",
                                       "invalid_request_error")
            elif kind == "function_call":
                called.add(item["call_id"])
            elif kind == "function_call_output" and item.get("call_id") not in called:
                return 400, _error("No tool call found for function call output with call_id "
                                   f"{item.get('call_id')}.", None, "invalid_request_error")
        return None

    def start(self) -> ResponsesServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()


def sampling_refusal(body: dict[str, Any]) -> tuple[int, dict[str, Any]] | None:
    """OpenAI's 400 for a sampling parameter or reasoning effort a reasoning model does not
    take, as Chat Completions words it (tests/wire_servers.py ``param_refusal``): a temperature
    or top_p other than 1 ("unsupported_value"), an effort outside the model's."""
    model = str(body.get("model") or "")
    effort = (body.get("reasoning") or {}).get("effort")
    refused = wire_servers.effort_refusal(model, effort) if effort is not None else None
    if refused is not None:
        return refused.status, _error(refused.message, refused.error_code, "invalid_request_error",
                                      "reasoning.effort")
    if not wire_servers._openai_reasoning(model):
        return None
    for name in ("temperature", "top_p"):
        if name in body and body[name] != 1:
            return 400, _error(f"Unsupported value: '{name}' does not support {body[name]} "
                               "with this model. Only the default (1) value is supported.",
                               "unsupported_value", "invalid_request_error", name)
    return None


def _error(message: str, code: str | None, kind: str, param: str | None = None,
           ) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "param": param, "code": code}}


def last_user_text(body: dict[str, Any]) -> str:
    """The typed text of the last user message of the input (its context block left out)."""
    return wire_servers.last_user_text(body, items="input", part="input_text")


def rendered_tokens(body: dict[str, Any]) -> int:
    """The request's prompt as counted here: instructions, tools, input items (cl100k)."""
    return _tokens(body.get("instructions") or "") + _tokens(body.get("tools") or []) + \
        _tokens(body.get("input") or [])


def compaction_due(body: dict[str, Any]) -> bool:
    """Whether the server compacts ``body`` before it answers. OpenAI's compaction guide
    (developers.openai.com/api/docs/guides/compaction): with ``context_management`` set to a
    ``compaction`` entry (response_create_params.ContextManagement), "when the rendered token
    count crosses the configured threshold" the server "triggers a compaction pass, emits a
    compaction output item in the same stream, and prunes context before continuing
    inference". The count here is ``rendered_tokens`` (the real tokenizer's may differ)."""
    return any(entry.get("type") == "compaction" and
               rendered_tokens(body) > (entry.get("compact_threshold") or 0)
               for entry in body.get("context_management") or [])


def bad_context_management(body: dict[str, Any]) -> str | None:
    """A ``context_management`` entry of another type ("Currently only 'compaction' is
    supported", the SDK's type says): the message refusing it (this wording is this server's)."""
    for entry in body.get("context_management") or []:
        if entry.get("type") != "compaction":
            return (f"Invalid value: '{entry.get('type')}'. Supported values are: "
                    "'compaction'.")
    return None


# ---------------------------------------------------------------- the events


def _usage(a: Answer | Compaction) -> dict[str, Any]:
    return {"input_tokens": a.input_tokens,
            "input_tokens_details": {"cached_tokens": a.cached,
                                     "cache_write_tokens": a.input_tokens - a.cached},
            "output_tokens": a.output_tokens,
            "output_tokens_details": {"reasoning_tokens": 3},
            "total_tokens": a.input_tokens + a.output_tokens}


def _response(rid: str, body: dict[str, Any], status: str, output: list[dict[str, Any]],
              ) -> dict[str, Any]:
    return {"id": rid, "object": "response", "created_at": 1, "status": status,
            "model": body.get("model"), "output": output, "parallel_tool_calls": True,
            "tool_choice": "auto", "tools": body.get("tools") or [], "error": None,
            "incomplete_details": None, "instructions": body.get("instructions"),
            "metadata": {}, "store": body.get("store", True), "usage": None}


class _Events:
    """The SSE frames of one response, numbered in order."""

    def __init__(self, server: ResponsesServer, body: dict[str, Any]) -> None:
        self.server, self.body = server, body
        self.frames: list[str] = []
        self.output: list[dict[str, Any]] = []
        self.rid = server.ids.next("resp")
        self.reasoned: str | None = None  # a reasoning item not yet followed

    def emit(self, kind: str, **data: Any) -> None:
        payload = {"type": kind, "sequence_number": len(self.frames), **data}
        self.frames.append(f"event: {kind}\ndata: {json.dumps(payload)}\n\n")

    def item(self, added: dict[str, Any], done: dict[str, Any],
             between: list[tuple[str, dict[str, Any]]] | None = None) -> None:
        index = len(self.output)
        if self.reasoned is not None and added.get("type") != "reasoning":
            self.server.followers[self.reasoned] = added["id"]
            self.reasoned = None
        self.emit("response.output_item.added", output_index=index, item=added)
        for kind, data in between or []:
            self.emit(kind, output_index=index, item_id=added["id"], **data)
        self.emit("response.output_item.done", output_index=index, item=done)
        self.output.append(done)

    def reasoning(self, summary: str) -> None:
        rid = self.server.ids.next("rs")
        item: dict[str, Any] = {"id": rid, "type": "reasoning", "summary": []}
        done = dict(item)
        if not (self.body.get("reasoning") or {}).get("summary"):
            summary = ""  # a summary only when the request asks for one (reasoning.summary)
        between = [("response.reasoning_summary_text.delta",
                    {"summary_index": 0, "delta": piece}) for piece in split_text(summary)]
        if summary:
            done["summary"] = [{"type": "summary_text", "text": summary}]
        if "reasoning.encrypted_content" in (self.body.get("include") or []):
            secret = f"enc-{rid}-" + "x" * 40
            self.server.issued.add(secret)
            done["encrypted_content"] = secret
        self.item(item, done, between)
        self.reasoned = rid  # the next output item follows it

    def compaction(self) -> None:
        """The compaction item (types/responses/response_compaction_item.py): added, a
        ``response.compaction.compacting`` event while it is sampled (it carries no content),
        done with its encrypted content."""
        cid = self.server.ids.next("cmp")
        secret = f"enc-{cid}-" + "z" * 40
        self.server.issued.add(secret)
        added = {"id": cid, "type": "compaction", "encrypted_content": ""}
        self.item(added, {**added, "encrypted_content": secret},
                  [("response.compaction.compacting", {})])

    def message(self, text: str, *, finished: bool = True) -> None:
        mid = self.server.ids.next("msg")
        part = {"type": "output_text", "text": "", "annotations": []}
        added = {"id": mid, "type": "message", "role": "assistant", "status": "in_progress",
                 "content": []}
        deltas = [("response.output_text.delta",
                   {"content_index": 0, "delta": piece, "logprobs": []})
                  for piece in split_text(text)]
        between = [("response.content_part.added", {"content_index": 0, "part": part}),
                   *deltas]
        if not finished:  # the stream stops inside the message
            index = len(self.output)
            self.emit("response.output_item.added", output_index=index, item=added)
            for kind, data in between:
                self.emit(kind, output_index=index, item_id=mid, **data)
            return
        whole = {**part, "text": text}
        between += [("response.output_text.done", {"content_index": 0, "text": text,
                                                   "logprobs": []}),
                    ("response.content_part.done", {"content_index": 0, "part": whole})]
        self.item(added, {**added, "status": "completed", "content": [whole]}, between)

    def call(self, call_id: str, name: str, arguments: str) -> None:
        fid = self.server.ids.next("fc")
        added = {"id": fid, "type": "function_call", "call_id": call_id, "name": name,
                 "arguments": "", "status": "in_progress"}
        between = [("response.function_call_arguments.delta", {"delta": piece})
                   for piece in split_text(arguments, 4)]
        between.append(("response.function_call_arguments.done",
                        {"arguments": arguments, "name": name}))
        self.item(added, {**added, "arguments": arguments, "status": "completed"}, between)

    def of(self, a: Answer) -> list[str]:
        self.emit("response.created", response=_response(self.rid, self.body, "in_progress", []))
        self.emit("response.in_progress",
                  response=_response(self.rid, self.body, "in_progress", []))
        # first: the answer comes from the compacted context
        if self.server.context_management and compaction_due(self.body):
            self.compaction()
        if a.reasoning:
            self.reasoning(a.summary)
        if a.kind == "error_event":
            self.message(a.text, finished=False)
            self.emit("error", code=a.code, message=a.message, param="input")
            return self.frames
        if a.kind == "failed":
            self.message(a.text, finished=False)
            failure = _response(self.rid, self.body, "failed", self.output)
            failure["error"] = {"code": a.code, "message": a.message}
            self.emit("response.failed", response=failure)
            return self.frames
        if a.text:
            self.message(a.text)
        for call_id, name, arguments in a.calls:
            self.call(call_id, name, json.dumps(arguments))
        end = _response(self.rid, self.body, "incomplete" if a.incomplete else "completed",
                        self.output)
        end["usage"] = _usage(a)
        if a.incomplete:
            end["incomplete_details"] = {"reason": a.incomplete}
        self.emit("response.incomplete" if a.incomplete else "response.completed",
                  response=end)
        return self.frames


def compacted(server: ResponsesServer, body: dict[str, Any], c: Compaction) -> dict[str, Any]:
    """The compacted window: the user messages of the input, then one compaction item
    (types/responses/compacted_response.py: "a list of all user messages, followed by a
    single compaction item")."""
    users = [{"type": "message", "role": "user", "id": server.ids.next("msg"),
              "status": "completed",
              "content": [{"type": "input_text", "text": _text_of(item)}]}
             for item in body.get("input") or [] if item.get("role") == "user"]
    cid = server.ids.next("cmp")
    secret = f"enc-{cid}-" + "y" * 40
    server.issued.add(secret)
    return {"id": server.ids.next("resp"), "object": "response.compaction", "created_at": 1,
            "output": [*users, {"id": cid, "type": "compaction", "encrypted_content": secret}],
            "usage": _usage(c)}


def _text_of(item: dict[str, Any]) -> str:
    content = item.get("content")
    if isinstance(content, str):
        return content
    return "".join(p.get("text", "") for p in content or [])


# ---------------------------------------------------------------- the server


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        """Silence the default stderr access log."""

    def do_POST(self) -> None:
        owner = self.server.owner
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        body = json.loads(raw or b"{}")
        path = urlsplit(self.path).path  # through a proxy (HTTP_PROXY): a whole URL
        owner.requests.append((path, body))
        refused = owner.refusal(body) or sampling_refusal(body)
        if refused is not None:
            owner.refused.append(body)
        unknown = bad_context_management(body)
        if (body.get("max_output_tokens") or 16) < 16:  # new-api#2866; the wording is ours
            self._json(400, _error("Invalid 'max_output_tokens': integer below minimum value. "
                                   "Expected a value >= 16.", "integer_below_min_value",
                                   "invalid_request_error", "max_output_tokens"))
        elif unknown is not None:
            self._json(400, _error(unknown, "invalid_value", "invalid_request_error",
                                   "context_management[0].type"))
        elif refused is not None:
            self._json(*refused)
        elif path == "/v1/responses/compact":
            self._compact(owner, body)
        elif path == "/v1/responses":
            self._respond(owner, body)
        else:
            self._json(404, _error(f"no route {path}", None, "not_found"))

    def _compact(self, owner: ResponsesServer, body: dict[str, Any]) -> None:
        with owner._lock:
            c = owner.compactions.pop(0) if owner.compactions else Compaction()
        if c.status != 200:
            self._json(c.status, _error(c.message, c.code, "invalid_request_error"))
            return
        self._json(200, compacted(owner, body, c))

    def _respond(self, owner: ResponsesServer, body: dict[str, Any]) -> None:
        a = owner.next_answer(body)
        if a.kind == "http_error":
            self._json(a.status, _error(a.message, a.code, a.error_type, "input"))
            return
        frames = _Events(owner, body).of(a)
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for frame in frames:
            data = frame.encode()
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def _json(self, status: int, payload: dict[str, Any]) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    owner: ResponsesServer


@pytest.fixture
def responses_server() -> Iterator[ResponsesServer]:
    server = ResponsesServer().start()
    try:
        yield server
    finally:
        server.stop()
