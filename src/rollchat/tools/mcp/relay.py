"""Sampling and elicitation relayed from the servers' event loop to the chat's thread: the SDK's
callbacks (on the loop) queue a question; the chat's thread, waiting for the tool call that
caused it, asks the user (and the model) and hands the answer back."""

# A server may ask only while one of rollchat's tool calls runs (that is when the chat's thread
# is there to answer); a request at any other time is refused with an error saying so. No
# asker (no terminal, --yes or not): sampling and elicitation are not declared at all, so the
# servers offer what they offer a client without them.

from __future__ import annotations

import asyncio
import contextlib
import queue
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from typing import Any

from rollchat.errors import RollchatError
from rollchat.tools.mcp.asks import McpAsker, Sampler, form_fields, sample_request

REFUSED = -1  # the error code of a sampling or elicitation the user (or rollchat) refused


class Asks:
    """The questions the servers may ask, given to ``asker`` on the chat's thread."""

    def __init__(self, asker: McpAsker | None, sampler: Sampler | None) -> None:
        self._asker, self._sampler = asker, sampler
        self._queue: queue.SimpleQueue[tuple[Callable[[], Any], Future[Any]]] = \
            queue.SimpleQueue()
        self._calls = 0
        self._lock = threading.Lock()

    @property
    def live(self) -> bool:
        return self._asker is not None

    def callbacks(self, server: str) -> dict[str, Any]:
        """The Client's keyword arguments for ``server``: declares sampling (when a model
        can answer) and elicitation (when someone can be asked)."""
        if self._asker is None:
            return {}
        out: dict[str, Any] = {"elicitation_callback": self._elicitation(server)}
        if self._sampler is not None:
            out["sampling_callback"] = self._sampling(server)
        return out

    @contextlib.contextmanager
    def during_call(self) -> Iterator[None]:
        with self._lock:
            self._calls += 1
        try:
            yield
        finally:
            with self._lock:
                self._calls -= 1

    def answer(self) -> float:
        """On the chat's thread: answer the questions queued; the seconds it took."""
        started = time.monotonic()
        while True:
            try:
                job, future = self._queue.get_nowait()
            except queue.Empty:
                return time.monotonic() - started
            if future.set_running_or_notify_cancel():
                try:
                    future.set_result(job())
                except BaseException as exc:  # a Ctrl-C at the question: cancel, then go on
                    future.set_exception(exc)
                    if not isinstance(exc, (Exception, KeyboardInterrupt, EOFError)):
                        raise

    async def _relayed(self, job: Callable[[], Any]) -> Any:
        from mcp_types import ErrorData

        with self._lock:
            busy = self._calls > 0
        if not busy:
            return ErrorData(code=REFUSED, message="rollchat answers sampling and "
                             "elicitation only during one of its tool calls")
        future: Future[Any] = Future()
        self._queue.put((job, future))
        return await asyncio.wrap_future(future)

    def _sampling(self, server: str) -> Callable[..., Any]:
        asker, sampler = self._asker, self._sampler
        assert asker is not None and sampler is not None

        def job(params: Any) -> Any:
            from mcp_types import CreateMessageResult, ErrorData, TextContent

            request = sample_request(server, params)
            try:
                approved = asker.approve_sampling(request)
            except (KeyboardInterrupt, EOFError):
                approved = False
            if not approved:
                return ErrorData(code=REFUSED, message="the user declined the sampling request")
            try:
                text, model = sampler(request)
            except RollchatError as exc:
                return ErrorData(code=REFUSED, message=f"the model did not answer: {exc}")
            return CreateMessageResult(role="assistant", model=model, stop_reason="endTurn",
                                       content=TextContent(type="text", text=text))

        async def sampling(context: Any, params: Any) -> Any:
            return await self._relayed(lambda: job(params))

        return sampling

    def _elicitation(self, server: str) -> Callable[..., Any]:
        asker = self._asker
        assert asker is not None

        def job(params: Any) -> Any:
            from mcp_types import ElicitResult

            if getattr(params, "mode", "form") == "url":  # a URL to open: not in a terminal
                return ElicitResult(action="decline")
            fields = form_fields(getattr(params, "requested_schema", None) or {})
            try:
                action, content = asker.elicit(server, str(params.message), fields)
            except (KeyboardInterrupt, EOFError):
                action, content = "cancel", None
            return ElicitResult(action=action, content=content if action == "accept" else None)

        async def elicitation(context: Any, params: Any) -> Any:
            return await self._relayed(lambda: job(params))

        return elicitation
