"""What the Anthropic and OpenAI providers share: the lazily created SDK client, the streaming
template (open, parse, close, map errors with the key scrubbed) and the SDK error mapping.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import math
import re
import time
from abc import ABC, abstractmethod
from collections.abc import Generator, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol
from urllib.parse import urlsplit

from rollchat.domain import ToolCall, Usage
from rollchat.providers.base import (
    AuthError,
    BadRequestError,
    ChatRequest,
    ConflictError,
    ConnectionLostError,
    ContextTooLongError,
    Done,
    MalformedStreamError,
    ModelNotFoundError,
    OverloadedError,
    ProviderConnectionError,
    ProviderError,
    ProviderTimeoutError,
    RateLimitError,
    ServerDownError,
    ServerError,
    StreamEvent,
    ToolCallEvent,
    UsageEvent,
)
from rollchat.providers.context_errors import (
    busy_detail,
    is_busy_server,
    is_context_error,
    stated_limit,
)
from rollchat.providers.lanes import (
    FOREGROUND,
    Ticket,
    default_limit,
    lane_for,
    making,
    watchdog,
)
from rollchat.text.wording import redact_urls

# Arguments that are not a JSON object are passed on under this key (the tool loop answers
# the model with an error instead of the whole turn failing).
RAW_ARGUMENTS_KEY = "_raw_arguments"


class SDKStream(Protocol):
    """What ``create(stream=True)`` returns in both SDKs (``Stream``): items, then close."""

    def __iter__(self) -> Iterator[Any]: ...

    def close(self) -> None: ...


class StreamParser(ABC):
    """One streamed answer in a provider's wire format, read item by item.

    ``feed`` yields what an item completes; ``finish`` checks the answer ended and yields the
    rest (tool calls held to the end, usage, Done with the stop reason in our words).
    """

    stop_reasons: ClassVar[Mapping[str, str]] = {}  # the wire's stop reasons -> ours

    @abstractmethod
    def feed(self, item: Any) -> Iterator[StreamEvent]:
        """The events ``item`` completes: text deltas, tool calls the format closes mid-way."""

    @abstractmethod
    def stop_reason(self) -> str | None:
        """The wire's stop reason once the answer finished, None if it did not (yet)."""

    @abstractmethod
    def usage(self) -> Usage | None:
        """Usage of the call, None when the server sent none."""

    def held_calls(self) -> Iterator[StreamEvent]:
        """Tool calls the format only completes at the end of the stream (none by default),
        and provider blocks only complete then."""
        return iter(())

    def finish(self) -> Iterator[StreamEvent]:
        """After the last item: MalformedStreamError if the answer was cut, else the rest."""
        stop = self.stop_reason()
        if stop is None:
            raise MalformedStreamError("the stream ended before the model finished its answer")
        yield from self.held_calls()
        usage = self.usage()
        if usage is not None:
            yield UsageEvent(usage)
        yield Done(self.stop_reasons.get(stop, stop))


@dataclass
class PartialCall:
    """A tool call whose JSON arguments arrive in fragments. ``initial``: arguments given
    whole up front (Anthropic's ``input``), used when no fragment came."""

    id: str = ""
    name: str = ""
    initial: dict[str, Any] = field(default_factory=dict)
    fragments: list[str] = field(default_factory=list)

    def build(self) -> ToolCall:
        raw = "".join(self.fragments)
        return ToolCall(self.id, self.name, parse_arguments(raw) if raw else self.initial)


class HeldCallsParser(StreamParser):
    """A stream whose tool calls arrive in fragments by index and are yielded at its end, in
    index order (OpenAI's Chat Completions and Responses): ``feed`` fills ``calls``, sets
    ``finished`` (the wire's stop reason) and ``last_usage``."""

    def __init__(self) -> None:
        self.calls: dict[int, PartialCall] = {}
        self.finished: str | None = None
        self.last_usage: Usage | None = None

    def stop_reason(self) -> str | None:
        return self.finished

    def usage(self) -> Usage | None:
        return self.last_usage

    def held_calls(self) -> Iterator[StreamEvent]:
        for index in sorted(self.calls):
            yield ToolCallEvent(self.calls[index].build())


def effort_for(budget: int) -> str:
    """The effort nearest a thinking budget in tokens, for the APIs that take an effort
    rather than a budget (Anthropic's adaptive thinking, OpenAI's reasoning)."""
    return "low" if budget < 4096 else "medium" if budget < 16384 else "high"


def parse_arguments(raw: str) -> dict[str, Any]:
    """Decode tool-call arguments; anything but a JSON object lands under RAW_ARGUMENTS_KEY."""
    if not raw.strip():
        return {}
    try:
        value = json.loads(raw)
    except ValueError:
        return {RAW_ARGUMENTS_KEY: raw}
    return value if isinstance(value, dict) else {RAW_ARGUMENTS_KEY: raw}


class SDKProvider(ABC):
    """An SDK-backed provider: its settings, the SDK client (imported and created at the first
    call: importing an SDK costs most of a second) and ``stream``, the template both use.

    A subclass gives ``name``, ``sdk`` and the hooks: ``_make_client`` (the SDK's client),
    ``_open`` (start the streamed call) and ``_parser`` (a parser of its wire format).
    """

    name = ""  # the provider's registry name
    sdk: ClassVar[str] = ""  # the SDK's module (and pip package) name
    def __init__(self, model: str, *, api_key: str | None, base_url: str | None,
                 timeout: float, images: bool | None = None,
                 concurrency: int | None = None) -> None:
        self.model = model
        self.images = images  # send images (None: the provider's default, see its _open)
        self._api_key = api_key
        self._base_url, self._query = split_query(base_url)
        self._timeout = timeout
        self._client: Any = None
        # requests at once to this server (None: 1 for a local or compatible one, see lanes)
        self.lane = lane_for(self._base_url, concurrency or default_limit(self._base_url))

    enforces_timeout: ClassVar[bool] = True  # a request's ``timeout`` closes its connection

    def stream(self, request: ChatRequest) -> Iterator[StreamEvent]:
        """Stream ``request``. Whatever fails on the way (a missing SDK, the request, the
        connection, the stream's content) is raised as a ProviderError with the key scrubbed;
        the SDK stream is closed at once, also when the caller stops early. A side request
        (summary, memory) waits behind the chat's and is answered whole (see lanes.py)."""
        if request.purpose not in FOREGROUND and self.lane.limit is not None:
            yield from self._side(request)
            return
        started = False
        try:
            with self.lane.slot(request.purpose) as ticket, \
                    contextlib.closing(self._attempt(request, ticket)) as events:
                for event in events:
                    if isinstance(event, Done):
                        break  # the slot is free before the caller hears the end
                    started = True
                    yield event
        except ServerError as error:
            # a busy server (requests at once filled llama.cpp's shared cache): tried again
            # once the server shows nothing processing, not after a blind backoff
            if not started and self.lane.limit is not None and \
                    is_busy_server("500", str(error)) and self.lane.settle():
                error.retry_after = 0.0
            raise
        yield event  # Done: parser.finish ends each answer with it (or raises)

    def _side(self, request: ChatRequest) -> Iterator[StreamEvent]:
        """A side request: cut when a better one comes, sent again after it; given whole.
        Its ``timeout`` counts from its first sending (``timeout_from_call``: from now) and
        covers each sending again and each wait between them: at that time it stops,
        connection included."""
        deadline: float | None = None
        if request.timeout is not None and request.timeout_from_call:
            deadline = time.monotonic() + request.timeout
        while True:
            with self.lane.slot(request.purpose, deadline) as ticket:
                if deadline is None and request.timeout is not None:
                    deadline = time.monotonic() + request.timeout
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:  # its time went on the wait: not sent
                    raise ProviderTimeoutError(f"no answer within {request.timeout:g}s: the "
                                               "request waited for the server")
                try:
                    events = list(self._attempt(request, ticket, left))
                except ProviderError:
                    if ticket.cut.is_set() and not ticket.expired.is_set():
                        continue  # it gave way to the chat's request: again, after it
                    raise
            yield from events
            return

    def _attempt(self, request: ChatRequest, ticket: Ticket, left: float | None = None,
                 ) -> Generator[StreamEvent, None, None]:
        """One try of ``request`` holding ``ticket`` (its connection recorded, so another
        thread can cut it: a chat request that needs the slot, or the request's timeout;
        ``left``: the seconds left of that timeout, when not all of it)."""
        disarm = watchdog(None, ticket)  # armed once the SDK is loaded (it counts from sending)
        try:
            client = self._sdk_client()
            disarm = watchdog(request.timeout if left is None else left, ticket)
            with making(ticket):
                items = self._open(client, request)
            try:
                parser = self._parser()
                for item in items:
                    if ticket.stopped():
                        raise ConnectionLostError("the request was stopped")
                    yield from parser.feed(item)
                yield from parser.finish()
            finally:  # release the connection at once, also when the caller stops early
                items.close()
        except Exception as exc:
            if ticket.expired.is_set():
                raise ProviderTimeoutError(f"no answer within {request.timeout:g}s; the "
                                           "request was cancelled") from None
            if isinstance(exc, ProviderError):
                raise
            raise self._down(map_sdk_error(exc, self._api_key)) from None
        finally:
            disarm()

    def _down(self, error: ProviderError) -> ProviderError:
        """A refused connection to a server on this machine: nothing listens there, so the
        error says what to check and is not retried (a remote host may be restarting)."""
        host = urlsplit(self._base_url or "").hostname or ""
        local = host in ("localhost", "::1", "0.0.0.0") or host.startswith("127.") or \
            host.endswith(".localhost")
        if type(error) is not ProviderConnectionError or not local or \
                "refused" not in str(error).lower():
            return error
        return ServerDownError(f"{error} (nothing listens at {self._base_url}: is the server "
                               "running?)")

    def _sdk_client(self) -> Any:
        if self._client is None:
            try:
                module = importlib.import_module(self.sdk)
            except ImportError as exc:
                raise sdk_missing(self.sdk) from exc
            self._client = self._make_client(module)
        return self._client

    @abstractmethod
    def _make_client(self, sdk: Any) -> Any:
        """The SDK's client, built from the imported SDK module (retries are ours: none)."""

    @abstractmethod
    def _open(self, client: Any, request: ChatRequest) -> SDKStream:
        """Start the streamed call for ``request``."""

    @abstractmethod
    def _parser(self) -> StreamParser:
        """A fresh parser for one streamed answer."""


def split_query(base_url: str | None) -> tuple[str | None, dict[str, str] | None]:
    """A base URL without its query string, and the query as the SDK's ``default_query``
    (``http://host/v1?api_key=s``: the SDKs append paths to the URL as a string, so a query
    left in it ends up inside the path)."""
    if not base_url or "?" not in base_url:
        return base_url, None
    from urllib.parse import parse_qsl, urlsplit, urlunsplit

    parts = urlsplit(base_url)
    query = dict(parse_qsl(parts.query, keep_blank_values=True))
    return urlunsplit(parts._replace(query="", fragment="")), query or None


def sdk_missing(package: str) -> ProviderError:
    return ProviderError(f"the {package} package is not installed: run `pip install {package}`")


# ---------------------------------------------------------------- secrets and retry-after

SECRET_MIN_LEN = 8  # shorter keys ("x", "ollama", "none") are placeholders, not secrets
_KEY_LIKE = re.compile(r"\b(sk-[A-Za-z0-9_\-*]{6,}|[A-Za-z0-9_\-]{32,})")


def scrub(text: str, secret: str | None, limit: int = 300) -> str:
    """One line, at most ``limit`` characters, with the key, key-like tokens and the
    credentials of URLs (``user:password@``, ``?api_key=``) removed. A key shorter than
    SECRET_MIN_LEN is a placeholder (local servers take any key): replacing it would garble
    the text."""
    if secret and len(secret) >= SECRET_MIN_LEN:
        text = text.replace(secret, "[redacted]")
    text = redact_urls(text)
    text = _KEY_LIKE.sub("[redacted]", " ".join(text.split()))
    return text if len(text) <= limit else text[: limit - 3] + "..."


def retry_after(headers: Mapping[str, str] | None) -> float | None:
    """Seconds to wait from ``retry-after-ms`` / ``retry-after`` (seconds or an HTTP date)."""
    if not headers:
        return None
    millis = _number(headers.get("retry-after-ms"))
    if millis is not None:
        return millis / 1000
    value = headers.get("retry-after")
    if value is None:
        return None
    seconds = _number(value)
    if seconds is not None:
        return seconds
    try:
        import email.utils  # only for an HTTP-date retry-after (rare): not at start-up

        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(when.timestamp() - time.time(), 0.0)


def _number(value: str | None) -> float | None:
    try:
        number = float(value) if value is not None else None
    except ValueError:
        return None
    return max(number, 0.0) if number is not None and math.isfinite(number) else None


# ---------------------------------------------------------------- SDK error mapping

_LOST_HINTS = ("peer closed", "incomplete chunked read", "connection reset",
               "Server disconnected")
_BY_ERROR_TYPE: dict[str, type[ProviderError]] = {
    "overloaded_error": OverloadedError, "rate_limit_error": RateLimitError,
    "api_error": ServerError, "authentication_error": AuthError,
    "permission_error": AuthError, "invalid_request_error": BadRequestError,
}


def _error_fields(body: object) -> tuple[str, str, str]:
    """(type, code, message) from an error body, nested under "error" or not."""
    if isinstance(body, Mapping) and isinstance(body.get("error"), Mapping):
        body = body["error"]
    if not isinstance(body, Mapping):
        return "", "", str(body or "")
    return (str(body.get("type") or ""), str(body.get("code") or ""),
            str(body.get("message") or ""))


def _class_names(exc: BaseException) -> set[str]:
    return {cls.__name__ for cls in type(exc).__mro__}


def map_sdk_error(exc: Exception, secret: str | None) -> ProviderError:
    """Turn any exception raised by an SDK call or its stream into a ProviderError."""
    if isinstance(exc, ProviderError):
        return exc
    status = getattr(exc, "status_code", None)
    if isinstance(status, int) and hasattr(exc, "response"):
        return _status_error(exc, status, secret)
    names = _class_names(exc)
    detail = scrub(str(exc), secret)
    if names & {"APITimeoutError", "TimeoutException", "TimeoutError"}:
        return ProviderTimeoutError("no answer within the request timeout")
    if names & {"RemoteProtocolError", "ReadError"}:  # it was connected, then cut
        return ConnectionLostError(_connection_detail(exc, secret))
    if names & {"APIConnectionError", "TransportError", "ConnectionError"}:
        detail = _connection_detail(exc, secret)
        lost = any(hint in detail for hint in _LOST_HINTS)
        return (ConnectionLostError if lost else ProviderConnectionError)(detail)
    if isinstance(exc, (ValueError, AttributeError, KeyError)):
        return MalformedStreamError(f"unexpected data in the response ({detail})")
    body = getattr(exc, "body", None)
    if body is not None:  # an error event inside a 200 stream
        kind, code, message = _error_fields(body)
        if is_busy_server(code, message, body):
            return ServerError(busy_detail(scrub(message, secret)))
        if is_context_error(code, message, kind):
            return ContextTooLongError(scrub(message or detail, secret),
                                       limit=stated_limit(message, body))
        return _BY_ERROR_TYPE.get(kind, ServerError)(scrub(message or detail, secret))
    return ProviderError(f"{type(exc).__name__}: {detail}")


def _connection_detail(exc: BaseException, secret: str | None) -> str:
    cause: BaseException | None = exc
    while cause is not None and cause.__cause__ is not None:
        cause = cause.__cause__
    text = str(cause) if cause is not None else ""
    return scrub(text or str(exc), secret) or "the connection failed"


def _status_error(exc: Exception, status: int, secret: str | None) -> ProviderError:
    """The error for an HTTP status; the server's ``x-should-retry: true|false`` decides
    whether it is retried, as the SDKs do (but a prompt too long is never sent again as is)."""
    error = _by_status(exc, status, secret)
    headers = getattr(getattr(exc, "response", None), "headers", None)
    should = str(headers.get("x-should-retry") or "").lower() if headers is not None else ""
    if should in ("true", "false") and not isinstance(error, ContextTooLongError):
        error.retryable = should == "true"
    return error


def _by_status(exc: Exception, status: int, secret: str | None) -> ProviderError:
    body = getattr(exc, "body", None)
    kind, code, message = _error_fields(body)
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    wait = retry_after(headers)
    detail = message or str(exc)
    text = scrub(f"HTTP {status}: {detail}" if status >= 400 else detail, secret)
    if status in (401, 403):
        return AuthError(text)
    if status == 429:
        return RateLimitError(text, retry_after=wait)
    if status >= 500 and is_busy_server(str(status), message, body):
        return ServerError(busy_detail(text), retry_after=wait)
    if status >= 400 and is_context_error(code, message, kind):  # 400, 413, 500 (llama.cpp)
        return ContextTooLongError(text, limit=stated_limit(message, body))
    if status == 529 or kind == "overloaded_error":
        return OverloadedError(text, retry_after=wait)
    if status == 408:
        return ProviderTimeoutError(text)
    if status == 409:
        return ConflictError(text, retry_after=wait)
    if status == 404 and (code == "model_not_found" or "model" in message.lower()):
        return ModelNotFoundError(text)
    if status >= 500:
        return ServerError(text, retry_after=wait)
    if 400 <= status < 500:
        return BadRequestError(text)
    return _BY_ERROR_TYPE.get(kind, ServerError)(text, retry_after=wait)
