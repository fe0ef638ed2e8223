"""A local Anthropic Messages server with what compaction needs, as the anthropic SDK's types
(2.14.0) and Anthropic's documentation describe it: prompt caching (breakpoints, the 20-block
lookback, the minimum cacheable prefix), on-demand compaction (``compaction: summarize``,
beta compact-2026-09-04: one signed ``compaction`` block streamed with stop reason
``compaction``, its usage as a compaction iteration), the block checked when sent back
(first, signature, content, beta header), the compaction error types, and context editing
(``clear_tool_uses_20250919``). With ``thinks``, the model thinks by default (adaptive, as
claude-sonnet-5-5 does): each answer starts with signed thinking, and every request is held to
the thinking rules of tests/wire_thinking.py at once with the compaction's (kept thinking
after a compaction block checked as "Compaction and preserved thinking" says), besides the
model's parameter refusals and the tool pairing of tests/wire_servers.py.

Not run against the real service (no network here); where the documentation is silent this
server chooses, and says so: the signature arrives with the block's start and the content in
one ``compaction_delta`` (the SDK's accumulator replaces the content with each delta and reads
the signature only from the start), a compaction request's top-level usage is zero and its
whole cost is in the compaction iteration, and a model without compaction gets a 400
invalid_request_error.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from tests.wire_servers import (
    AnthropicDialect,
    _block_tokens,
    _tokens,
    is_extraction,
    last_user_text,
    param_refusal,
    tool_pairing_error,
)
from tests.wire_thinking import Summarized, stand_ins, thinking_frames, thinking_refusal, thinks

COMPACT_BETA = "compact-2026-09-04"
CONTEXT_EDITING_BETA = "context-management-2025-06-27"
LOOKBACK = 20  # blocks a breakpoint looks back for an earlier cache entry
MIN_CACHE = 1024  # tokens: a shorter prefix is not cached (Sonnet's and Opus's minimum)
# the models the compaction docs list (supportedModels of "Compaction and preserved thinking")
SUPPORTED = ("claude-fable-5-1", "claude-mythos-5-1", "claude-fable-5", "claude-mythos-5",
             "claude-mythos-preview", "claude-opus-5-5", "claude-opus-5", "claude-opus-4-8",
             "claude-opus-4-7", "claude-opus-4-6", "claude-sonnet-5-5", "claude-sonnet-5",
             "claude-sonnet-4-6", "claude-haiku-5-5", "test-model")
_KEY = b"wire-server-signing-key"

# (status, error type, error code) of the documented compaction errors
ERRORS = {
    "compaction_unavailable": (529, "overloaded_error"),
    "compaction_signature_invalid": (400, "invalid_request_error"),
    "compaction_content_mismatch": (400, "invalid_request_error"),
    "compaction_block_misplaced": (400, "invalid_request_error"),
    "compaction_block_ambiguous": (400, "invalid_request_error"),
    "compaction_nothing_to_summarize": (400, "invalid_request_error"),
    "compaction_incomplete_turn": (400, "invalid_request_error"),
}


def sign(content: str) -> str:
    return hmac.new(_KEY, content.encode(), hashlib.sha256).hexdigest()


@dataclass
class Billed:
    """One request's input as billed: uncached, read from the cache, written to it."""

    uncached: int
    read: int
    written: int


@dataclass
class Seen:
    """One request as received: path, headers (lower-case), body, and what it was billed."""

    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    billed: Billed | None = None
    cleared: int = 0  # input tokens context editing cleared from it


# body -> {"text": ...} and/or {"tools": [...]}, with "thought" (and "redacted": True) when
# the model thinks
Chat = Callable[[dict[str, Any]], dict[str, Any]]
Summary = Callable[[dict[str, Any]], str | None]  # body -> the compaction's content (None: null)


def echo(body: dict[str, Any]) -> dict[str, Any]:
    return {"text": f"echo: {last_user_text(body)}"}


@dataclass
class CompactionServer:
    """The server: ``chat`` answers turns, ``summary`` writes compactions, ``failures`` the
    errors the next compaction requests get (codes of ERRORS, in order). ``requests`` records
    every request but the memory's extraction calls; ``cache`` the cached prefixes."""

    chat: Chat = echo
    summary: Summary = lambda body: "the summary"
    failures: list[str] = field(default_factory=list)
    requests: list[Seen] = field(default_factory=list)
    cache: dict[str, int] = field(default_factory=dict)
    issued: dict[str, str] = field(default_factory=dict)  # signature -> content
    lock: threading.Lock = field(default_factory=threading.Lock)
    thinks: bool = False  # the model thinks by default (see the module docstring)
    summarized: dict[str, Summarized] = field(default_factory=dict)  # signature -> its request
    rejected: list[Seen] = field(default_factory=list)  # refused by the rules (a 400)

    # ------------------------------------------------------------------ requests
    def handle(self, path: str, headers: dict[str, str], body: dict[str, Any],
               ) -> tuple[int, dict[str, Any] | list[dict[str, Any]]]:
        """(status, error body) or (200, the stream's events)."""
        seen = Seen(path, headers, body)
        if is_extraction(body):
            return 200, self._message(seen, [("text", "[]")], "end_turn")
        with self.lock:
            self.requests.append(seen)
        betas = {b.strip() for b in headers.get("anthropic-beta", "").split(",") if b.strip()}
        problem = self._check_blocks(body, betas) or self._check_rules(body, headers)
        if problem is not None:
            with self.lock:
                self.rejected.append(seen)
            return problem
        if "compaction" in body:
            return self._compaction(seen, betas)
        if "context_management" in body:
            if CONTEXT_EDITING_BETA not in betas:
                return _error(400, "invalid_request_error", "context_management: requires "
                                                            f"the {CONTEXT_EDITING_BETA} beta")
            seen.cleared = clear_tool_uses(body)
        reply = self.chat(body)
        blocks: list[tuple[str, Any]] = []
        if thinks(body, self.thinks):
            thought = reply.get("thought") or f"The user said {last_user_text(body)!r}."
            blocks += [("frames", f) for f in thinking_frames(thought, bool(reply.get(
                "redacted")), body)]
        if reply.get("text"):
            blocks.append(("text", reply["text"]))
        blocks += [("tool_use", t) for t in reply.get("tools") or ()]
        return 200, self._message(seen, blocks, "tool_use" if reply.get("tools") else "end_turn")

    def _check_rules(self, body: dict[str, Any], headers: dict[str, str],
                     ) -> tuple[int, dict[str, Any]] | None:
        """The model's refusals of a parameter (not of a compaction request, which ends with
        the model's answer by design), tool calls without their results (or the reverse),
        and the thinking rules, with what a compaction block stands for."""
        dialect = AnthropicDialect(thinks=self.thinks)
        refused = tool_pairing_error(dialect, body) or (
            None if "compaction" in body else param_refusal(dialect, body))
        if refused is not None:
            return _error(refused.status, "invalid_request_error", refused.message)
        with self.lock:
            summarized = dict(self.summarized)
        said = thinking_refusal(body, self.thinks, headers, stand_ins(body, summarized))
        return None if said is None else _error(400, "invalid_request_error", said)

    def _check_blocks(self, body: dict[str, Any], betas: set[str],
                      ) -> tuple[int, dict[str, Any]] | None:
        """A compaction block sent back: the beta, first place, one, its signature, its
        content (documented error codes)."""
        places = [(i, j, b) for i, m in enumerate(body.get("messages") or [])
                  for j, b in enumerate(m.get("content") if isinstance(m.get("content"), list)
                                        else []) if b.get("type") == "compaction"]
        if not places:
            return None
        if COMPACT_BETA not in betas:
            return _error(400, "invalid_request_error", "compaction blocks require the "
                                                        f"{COMPACT_BETA} beta")
        if any((i, j) != (0, 0) for i, j, _ in places):
            return _compaction_error("compaction_block_misplaced")
        if len([b for _, _, b in places if b.get("content")]) > 1:
            return _compaction_error("compaction_block_ambiguous")
        block = places[0][2]
        signature, content = block.get("signature") or "", block.get("content")
        if signature not in self.issued:
            return _compaction_error("compaction_signature_invalid")
        if self.issued[signature] != content:
            return _compaction_error("compaction_content_mismatch")
        return None

    def _compaction(self, seen: Seen, betas: set[str]) -> tuple[int, Any]:
        body = seen.body
        if COMPACT_BETA not in betas:
            return _error(400, "invalid_request_error", "compaction: requires the "
                                                        f"{COMPACT_BETA} beta")
        if "context_management" in body:
            return _error(400, "invalid_request_error",
                          "compaction cannot be combined with context_management")
        if body.get("model") not in SUPPORTED:
            return _error(400, "invalid_request_error",
                          f"model {body.get('model')!r} does not support compaction")
        with self.lock:
            failure = self.failures.pop(0) if self.failures else None
        if failure is not None:
            return _compaction_error(failure)
        if not any(m.get("role") in ("user", "assistant") for m in body.get("messages") or []):
            return _compaction_error("compaction_nothing_to_summarize")
        last = (body.get("messages") or [{}])[-1]
        if last.get("role") == "assistant" and isinstance(last.get("content"), list) and any(
                b.get("type") == "tool_use" for b in last["content"]):  # ("Compaction that
            return _compaction_error("compaction_incomplete_turn")  # keeps recent turns")
        content = self.summary(body)
        signature = sign(content or "")
        if content is not None:
            with self.lock:
                self.issued[signature] = content
                self.summarized[signature] = Summarized.of(body)
        seen.billed = self.bill(body)
        output = 0 if content is None else _tokens(content)
        usage = {"input_tokens": 0, "output_tokens": 0, "cache_read_input_tokens": 0,
                 "cache_creation_input_tokens": 0}
        iteration = {"type": "compaction", "input_tokens": seen.billed.uncached,
                     "cache_read_input_tokens": seen.billed.read,
                     "cache_creation_input_tokens": seen.billed.written,
                     "output_tokens": output}
        start = {"type": "compaction", "content": None, "signature": signature}
        events: list[dict[str, Any]] = [
            {"type": "message_start", "message": _envelope(usage)},
            {"type": "content_block_start", "index": 0, "content_block": start},
            {"type": "content_block_delta", "index": 0,
             "delta": {"type": "compaction_delta", "content": content}},
            {"type": "content_block_stop", "index": 0},
            {"type": "message_delta", "delta": {"stop_reason": "compaction",
                                                "stop_sequence": None},
             "usage": {"output_tokens": 0, "iterations": [iteration]}},
            {"type": "message_stop"}]
        return 200, events

    def _message(self, seen: Seen, blocks: list[tuple[str, Any]],
                 stop: str) -> list[dict[str, Any]]:
        seen.billed = self.bill(seen.body)
        usage = {"input_tokens": seen.billed.uncached, "output_tokens": 1,
                 "cache_read_input_tokens": seen.billed.read,
                 "cache_creation_input_tokens": seen.billed.written}
        events: list[dict[str, Any]] = [{"type": "message_start", "message": _envelope(usage)}]
        start: dict[str, Any]
        for index, (kind, value) in enumerate(blocks):
            if kind == "frames":  # (start, deltas) as tests/wire_thinking.py streams them
                start, deltas = value
            elif kind == "text":
                start = {"type": "text", "text": ""}
                deltas = [{"type": "text_delta", "text": value}]
            else:
                start = {"type": "tool_use", "id": value["id"], "name": value["name"],
                         "input": {}}
                deltas = [{"type": "input_json_delta", "partial_json": json.dumps(
                    value["input"])}]
            events += [{"type": "content_block_start", "index": index, "content_block": start},
                       *({"type": "content_block_delta", "index": index, "delta": d}
                         for d in deltas),
                       {"type": "content_block_stop", "index": index}]
        written = sum(_tokens(v if k == "text" else v[1] if k == "frames" else v["input"])
                      for k, v in blocks)
        delta: dict[str, Any] = {"type": "message_delta",
                                 "delta": {"stop_reason": stop, "stop_sequence": None},
                                 "usage": {"output_tokens": max(written, 1)}}
        if seen.cleared:
            delta["context_management"] = {"applied_edits": [
                {"type": "clear_tool_uses_20250919", "cleared_input_tokens": seen.cleared,
                 "cleared_tool_uses": 1}]}
        return [*events, delta, {"type": "message_stop"}]

    # ------------------------------------------------------------------ prompt caching
    def bill(self, body: dict[str, Any]) -> Billed:
        """The prompt billed as prompt caching is documented: tools, system, then messages
        in blocks; at each breakpoint the longest earlier cached prefix within LOOKBACK
        blocks is read; the prefix up to the last breakpoint is written (when at least
        MIN_CACHE tokens); the rest is uncached."""
        blocks = linear_blocks(body)
        sizes = [_block_tokens(b) for b in blocks]
        keys = _prefix_keys(body.get("model", ""), blocks)
        marks = [i for i, b in enumerate(blocks) if isinstance(b, dict) and b.get(
            "cache_control")]
        read_end = 0
        with self.lock:
            for mark in marks:
                for j in range(mark, max(mark - LOOKBACK, -1), -1):
                    if keys[j] in self.cache:
                        read_end = max(read_end, j + 1)
                        break
            written = 0
            if marks and sum(sizes[:marks[-1] + 1]) >= MIN_CACHE:
                for mark in marks:
                    self.cache.setdefault(keys[mark], sum(sizes[:mark + 1]))
                written = max(sum(sizes[:marks[-1] + 1]) - sum(sizes[:read_end]), 0)
        read = sum(sizes[:read_end])
        return Billed(sum(sizes) - read - written, read, written)


def linear_blocks(body: dict[str, Any]) -> list[Any]:
    """The prompt in cache order: each tool, each system block, each message's blocks."""
    system = body.get("system") or []
    blocks: list[Any] = [*(body.get("tools") or []),
                         *(system if isinstance(system, list) else [system])]
    for message in body.get("messages") or []:
        content = message.get("content")
        blocks += content if isinstance(content, list) else [content]
    return blocks


def _prefix_keys(model: str, blocks: list[Any]) -> list[str]:
    """A key per prefix (blocks[:i+1]), cache_control left out, per model."""
    digest = hashlib.sha256(model.encode())
    keys = []
    for block in blocks:
        plain = {k: v for k, v in block.items() if k != "cache_control"} \
            if isinstance(block, dict) else block
        digest.update(json.dumps(plain, sort_keys=True).encode())
        keys.append(digest.copy().hexdigest())
    return keys


def clear_tool_uses(body: dict[str, Any]) -> int:
    """Context editing as documented for clear_tool_uses_20250919: past the trigger, the
    oldest tool results are replaced by a placeholder, keeping the last ``keep`` tool uses,
    when at least ``clear_at_least`` tokens go. The body is changed; the tokens cleared."""
    edits = [e for e in body["context_management"].get("edits", [])
             if e.get("type") == "clear_tool_uses_20250919"]
    if not edits:
        return 0
    edit = edits[0]
    total = sum(_block_tokens(b) for b in linear_blocks(body))
    if total < edit.get("trigger", {}).get("value", 100_000):
        return 0
    results = [b for m in body["messages"] if isinstance(m.get("content"), list)
               for b in m["content"] if b.get("type") == "tool_result"]
    keep = edit.get("keep", {}).get("value", 3)
    old = results[:max(len(results) - keep, 0)]
    cleared = sum(_block_tokens(b) for b in old)
    if not old or cleared < edit.get("clear_at_least", {}).get("value", 0):
        return 0
    for b in old:
        b["content"] = "[cleared to save context]"
    return cleared - len(old) * _tokens("[cleared to save context]")


def _envelope(usage: dict[str, Any]) -> dict[str, Any]:
    return {"id": "msg_wire", "type": "message", "role": "assistant", "model": "test-model",
            "content": [], "stop_reason": None, "stop_sequence": None, "usage": usage}


def _error(status: int, kind: str, message: str,
           code: str | None = None) -> tuple[int, dict[str, Any]]:
    error: dict[str, Any] = {"type": kind, "message": message}
    if code is not None:
        error["details"] = {"error_code": code}
    return status, {"type": "error", "error": error}


def _compaction_error(code: str) -> tuple[int, dict[str, Any]]:
    status, kind = ERRORS[code]
    return _error(status, kind, f"{code.replace('_', ' ')}", code)


# ---------------------------------------------------------------------- HTTP


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _HTTP

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet."""

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        body = json.loads(raw or b"{}")
        headers = {k.lower(): v for k, v in self.headers.items()}
        status, payload = self.server.owner.handle(self.path, headers, body)
        if status != 200 or not isinstance(payload, list):
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for event in payload:
            data = f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode()
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()


class _HTTP(ThreadingHTTPServer):
    daemon_threads = True
    owner: CompactionServer


class Running:
    """``CompactionServer`` listening on 127.0.0.1 (``url`` is the SDK's base URL)."""

    def __init__(self, owner: CompactionServer) -> None:
        self.owner = owner
        self._http = _HTTP(("127.0.0.1", 0), _Handler)
        self._http.owner = owner
        self._thread = threading.Thread(target=self._http.serve_forever,
                                        kwargs={"poll_interval": 0.02}, daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._http.server_address[1]}"

    def stop(self) -> None:
        self._http.shutdown()
        self._http.server_close()


@pytest.fixture
def compaction_server() -> Iterator[tuple[CompactionServer, str]]:
    owner = CompactionServer()
    running = Running(owner)
    try:
        yield owner, running.url
    finally:
        running.stop()
