"""A local server as llama.cpp's llama-server behaves, for the wire tests: it answers with the
real server's own bytes (tests/fixtures/real/llama_cpp/, recorded by record.py there), holds a
request the way one busy slot does, and logs when each request arrived and when its client
hung up (``events``), so a test can check the order of what happened on the wire."""

from __future__ import annotations

import contextlib
import json
import select
import socket
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

FIXTURES = Path(__file__).parent / "fixtures" / "real"
LLAMA = FIXTURES / "llama_cpp"


def recorded(name: str) -> bytes:
    """A whole recorded HTTP response (status line, headers, body) as the server sent it."""
    return (LLAMA / name).read_bytes()


@dataclass
class Held:
    """A reply that first holds the request (as a busy slot does: no byte sent) until the
    client hangs up or ``release`` is set, then sends ``then`` (raw bytes) if still there."""

    then: bytes
    release: threading.Event = field(default_factory=threading.Event)


Reply = bytes | Held
Chooser = Callable[[dict[str, Any]], Reply]  # the request's JSON body -> the reply


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet."""

    def do_GET(self) -> None:
        self._answer({})

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = {}
        self._answer(body)

    def _answer(self, body: dict[str, Any]) -> None:
        owner = self.server.owner
        self.close_connection = True
        if owner.handle(self, body):
            return
        number = owner.arrived(self.command, self.path, body)
        reply = owner.reply(self.command, self.path, body)
        if isinstance(reply, Held):
            if not self._hold(reply.release):
                owner.log("closed", number)
                return
            reply = reply.then
        self.close_connection = True  # the recorded replies end with their connection
        owner.log("answered", number)  # before the bytes: nothing can follow them unlogged
        with contextlib.suppress(OSError):
            self.wfile.write(reply)
            self.wfile.flush()

    def _hold(self, release: threading.Event) -> bool:
        """Hold until ``release`` (True) or the client hangs up (False)."""
        while not release.is_set():
            readable, _, _ = select.select([self.connection], [], [], 0.05)
            if readable:
                try:
                    if not self.connection.recv(1, socket.MSG_PEEK):
                        return False
                except OSError:
                    return False
        return True


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    owner: LocalServer

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Clients hang up on purpose in these tests."""


class LocalServer:
    """``routes``: ``"GET /v1/models"`` -> raw reply; ``chat``: picks the reply of each
    ``POST /v1/chat/completions`` from its body. ``events``: (what, request number) in order:
    "arrived", "answered", "closed" (the client hung up while it was held; seen within a
    poll of the socket, so a request sent right after the hang-up may be logged first)."""

    def __init__(self, routes: dict[str, Reply] | None = None,
                 chat: Chooser | None = None, port: int = 0) -> None:
        self.routes = routes or {}
        self.chat = chat
        self.events: list[tuple[str, int]] = []
        self.bodies: list[tuple[str, dict[str, Any]]] = []  # (route, body) per request
        self.slot_looks = 0
        self._lock = threading.Lock()
        self._logged = threading.Condition(self._lock)
        self._httpd = _Server(("127.0.0.1", port), _Handler)  # (0: any free port)
        self._httpd.owner = self
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def arrived(self, method: str, path: str, body: dict[str, Any]) -> int:
        with self._lock:
            self.bodies.append((f"{method} {path}", body))
            number = len(self.bodies)
        self.log("arrived", number)
        return number

    def log(self, what: str, number: int) -> None:
        with self._logged:
            self.events.append((what, number))
            self._logged.notify_all()

    def seen(self, event: tuple[str, int], within: float = 10.0) -> bool:
        """Whether ``event`` is logged within ``within`` seconds (a hang-up is seen by the
        server a poll after the client's close returned)."""
        with self._logged:
            return self._logged.wait_for(lambda: event in self.events, timeout=within)

    def handle(self, handler: _Handler, body: dict[str, Any]) -> bool:
        """Answer the request itself (True), or leave it to ``reply`` (False): a look at
        llama.cpp's ``GET /slots`` (rollchat's, after hanging up on a request) is not
        logged, only counted; without a route for it, 404 as a server without one says."""
        if f"{handler.command} {handler.path}" != "GET /slots" or "GET /slots" in self.routes:
            return False
        with self._lock:
            self.slot_looks += 1
        handler.wfile.write(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n"
                            b"Connection: close\r\n\r\n")
        return True

    def reply(self, method: str, path: str, body: dict[str, Any]) -> Reply:
        route = f"{method} {path.partition('?')[0]}"
        if route == "POST /v1/chat/completions" and self.chat is not None:
            return self.chat(body)
        return self.routes.get(route, b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n"
                                      b"Connection: close\r\n\r\n")

    def in_flight_most(self) -> int:
        """The most requests that were at the server at once (arrived, not yet ended)."""
        now = most = 0
        for what, _number in list(self.events):
            now += 1 if what == "arrived" else -1
            most = max(most, now)
        return most

    def __enter__(self) -> LocalServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()


@contextlib.contextmanager
def local_server(routes: dict[str, Reply] | None = None,
                 chat: Chooser | None = None) -> Iterator[LocalServer]:
    with LocalServer(routes, chat) as server:
        yield server


def sse_answer(text: str, finish: str = "stop", prompt: int = 20, written: int = 5) -> bytes:
    """A streamed Chat Completions answer in llama.cpp's framing (the shape of the recorded
    stream_stop bytes): for the scripted turns of the queueing tests."""
    chunks = [{"choices": [{"index": 0, "delta": {"role": "assistant", "content": None},
                            "finish_reason": None}]},
              {"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": None}]},
              {"choices": [{"index": 0, "delta": {}, "finish_reason": finish}]},
              {"choices": [], "usage": {"prompt_tokens": prompt, "completion_tokens": written,
                                        "total_tokens": prompt + written}}]
    body = b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks)
    body += b"data: [DONE]\n\n"
    return (b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n"
            b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)


# ---------------------------------------------------------------- llama-server, simulated
#
# Where each behaviour of LlamaServer comes from (issue 40; llama.cpp's tools/server):
# - slots sharing one unified KV cache: `llama-server -m MODEL -c 2048` runs 4 slots (-np
#   auto: 4) over one cache of -c cells (-kvu); each slot may take the whole window, so a
#   prompt is refused (400 exceed_context_size_error, recorded: exceed_context.http) only
#   when it alone is over -c.
# - requests at once that overflow the cache: the one being decoded fails with the recorded
#   in-stream 500 "Context size has been exceeded." (stream_overlap_error.http: -np 4 -kvu,
#   two ~650-token prompts with 1,500 tokens to write, 0.3 s apart; both streams ended so).
# - a request whose client hung up goes on until its prompt is processed: the server sees
#   the hang-up between the results it sends (server-context.cpp polls the connection every
#   HTTP_POLLING_SECONDS while waiting for a result), not inside the prompt's batches (about
#   20 s measured in issue 40 with SmolLM2-135M on 2 cores), then the slot goes idle.
# - a request finding every slot busy waits for one (the server defers the task).
# - GET /slots: tools/server/README.md's shape: a list of {"id", "id_task", "n_ctx",
#   "speculative", "is_processing", "params", "prompt", "next_token"} per slot (enabled by
#   default, `--no-slots` turns it off: then 501 {"error": {"code": 501, "type":
#   "not_supported_error", ...}}, as README's "API errors" gives it).
# - GET /v1/models and /props: the recorded bytes (their n_ctx 2048 is the recording's -c).
# Times are scaled by ``prompt_rate`` (prompt tokens per second) and ``write_rate``; a token
# is counted as 4 characters of the request's messages and tools (the model's tokenizer is
# not here).


@dataclass
class SimSlot:
    id: int
    task: int = -1
    cells: int = 0  # the cache cells it holds
    processing: bool = False
    client_gone: bool = False
    failed: threading.Event = field(default_factory=threading.Event)


def _tokens(body: dict[str, Any]) -> int:
    text = json.dumps(body.get("messages", [])) + json.dumps(body.get("tools", []))
    return len(text) // 4


def _error_event(message: bytes) -> bytes:
    line = b"data: " + message + b"\n\n"
    return b"%x\r\n%s\r\n0\r\n\r\n" % (len(line), line)


class LlamaServer(LocalServer):
    """llama-server with ``slots`` slots over one ``n_ctx``-cell cache (see above).
    ``answer``: the text of each chat request's reply, from its body. ``events`` as
    LocalServer's, plus "overflow" (the request failed with the busy cache's error);
    GET /slots is not logged (``slot_looks`` counts them)."""

    def __init__(self, answer: Callable[[dict[str, Any]], str], *, n_ctx: int = 2048,
                 slots: int = 4, prompt_rate: float = 4000.0, write_rate: float = 400.0,
                 slots_endpoint: bool = True, port: int = 0) -> None:
        super().__init__({"GET /v1/models": recorded("models.http"),
                          "GET /props": recorded("props.http")}, port=port)
        self.answer = answer
        self.n_ctx = n_ctx
        self.prompt_rate = prompt_rate
        self.write_rate = write_rate
        self.slots_endpoint = slots_endpoint
        self.slots = [SimSlot(i) for i in range(slots)]
        self.overflows = 0
        self._cache = threading.Condition()
        self._tasks = 0

    def handle(self, handler: _Handler, body: dict[str, Any]) -> bool:
        route = f"{handler.command} {handler.path.partition('?')[0]}"
        if route == "GET /slots":
            with self._lock:
                self.slot_looks += 1
            handler.wfile.write(self.slots_json() if self.slots_endpoint else _json_reply(
                501, {"error": {"code": 501, "message": "This server does not support slots "
                                "endpoint.", "type": "not_supported_error"}}))
            return True
        if route != "POST /v1/chat/completions":
            return False
        self.serve(handler, self.arrived(handler.command, handler.path, body), body)
        return True

    def idle(self) -> bool:
        with self._cache:
            return not any(s.processing for s in self.slots)

    def slots_json(self) -> bytes:
        with self._cache:
            body = [{"id": s.id, "id_task": s.task, "n_ctx": self.n_ctx, "speculative": False,
                     "is_processing": s.processing, "params": {"n_predict": -1},
                     "prompt": "", "next_token": {"has_next_token": s.processing,
                                                  "n_remain": -1, "n_decoded": 0}}
                    for s in self.slots]
        return _json_reply(200, body)

    def serve(self, handler: _Handler, number: int, body: dict[str, Any]) -> None:
        """One chat request, as a slot of llama-server processes it."""
        prompt = _tokens(body)
        if prompt > self.n_ctx:
            self.log("answered", number)
            raw = recorded("exceed_context.http")
            fields = json.loads(raw.partition(b"\r\n\r\n")[2])
            fields["error"].update(n_prompt_tokens=prompt, n_ctx=self.n_ctx,
                                   message=f"request ({prompt} tokens) exceeds the available "
                                           f"context size ({self.n_ctx} tokens), try "
                                           "increasing it")
            handler.wfile.write(_json_reply(400, fields))
            return
        text = self.answer(body)
        writes = min(int(body.get("max_tokens") or body.get("max_completion_tokens") or
                         self.n_ctx), max(len(text) // 4, 1))
        slot = self._take(prompt + writes)
        try:
            # the prompt: processed whole, whether or not the client is still there
            failed = slot.failed.wait(prompt / self.prompt_rate)
            if _gone(handler):
                self.log("closed", number)
            elif failed:
                self._fail(handler, number)
            else:
                self._write(handler, number, slot, text, (prompt, writes))
        finally:
            with self._cache:
                slot.processing, slot.cells, slot.task = False, 0, -1
                self._cache.notify_all()

    def _take(self, cells: int) -> SimSlot:
        with self._cache:
            while not any(not s.processing for s in self.slots):
                self._cache.wait()
            slot = next(s for s in self.slots if not s.processing)
            self._tasks += 1
            slot.task, slot.cells, slot.processing = self._tasks, cells, True
            slot.failed.clear()
            if sum(s.cells for s in self.slots if s.processing) > self.n_ctx:
                for other in self.slots:  # each request decoding then fails so
                    if other.processing:
                        other.failed.set()
            return slot

    def _fail(self, handler: _Handler, number: int) -> None:
        self.overflows += 1
        self.log("overflow", number)
        raw = recorded("stream_overlap_error.http")
        head = raw.partition(b"\r\n\r\n")[0] + b"\r\n\r\n"
        error = raw[raw.index(b'data: {"error"') + 6:].split(b"\n", 1)[0]
        with contextlib.suppress(OSError):
            handler.wfile.write(head + _error_event(error))

    def _write(self, handler: _Handler, number: int, slot: SimSlot, text: str,
               usage: tuple[int, int]) -> None:
        """The answer, written at ``write_rate``; a hang-up is seen between tokens."""
        if slot.failed.wait(len(text) / 4 / self.write_rate):
            self._fail(handler, number)
            return
        if _gone(handler):
            self.log("closed", number)
            return
        self.log("answered", number)
        with contextlib.suppress(OSError):
            handler.wfile.write(sse_answer(text, "stop", *usage))


def _gone(handler: _Handler) -> bool:
    readable, _, _ = select.select([handler.connection], [], [], 0)
    if not readable:
        return False
    try:
        return not handler.connection.recv(1, socket.MSG_PEEK)
    except OSError:
        return True


def _json_reply(status: int, body: object) -> bytes:
    data = json.dumps(body).encode()
    reason = {200: b"OK", 400: b"Bad Request", 501: b"Not Implemented"}[status]
    return (b"HTTP/1.1 %d %s\r\nServer: llama.cpp\r\nContent-Type: application/json; "
            b"charset=utf-8\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s"
            % (status, reason, len(data), data))


@contextlib.contextmanager
def llama_server(answer: Callable[[dict[str, Any]], str], **kw: Any) -> Iterator[LlamaServer]:
    server = LlamaServer(answer, **kw)
    with server:
        yield server
