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
                 chat: Chooser | None = None) -> None:
        self.routes = routes or {}
        self.chat = chat
        self.events: list[tuple[str, int]] = []
        self.bodies: list[tuple[str, dict[str, Any]]] = []  # (route, body) per request
        self._lock = threading.Lock()
        self._httpd = _Server(("127.0.0.1", 0), _Handler)
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
        with self._lock:
            self.events.append((what, number))

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


def sse_answer(text: str, finish: str = "stop") -> bytes:
    """A streamed Chat Completions answer in llama.cpp's framing (the shape of the recorded
    stream_stop bytes): for the scripted turns of the queueing tests."""
    chunks = [{"choices": [{"index": 0, "delta": {"role": "assistant", "content": None},
                            "finish_reason": None}]},
              {"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": None}]},
              {"choices": [{"index": 0, "delta": {}, "finish_reason": finish}]},
              {"choices": [], "usage": {"prompt_tokens": 20, "completion_tokens": 5,
                                        "total_tokens": 25}}]
    body = b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks)
    body += b"data: [DONE]\n\n"
    return (b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n"
            b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
