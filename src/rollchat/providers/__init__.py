"""The provider registry (name -> factory, imported lazily by module path), auto selection,
and the SDK error mapping shared by the Anthropic and OpenAI providers.
"""

from __future__ import annotations

import importlib
import math
import re
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rollchat.errors import ConfigError
from rollchat.providers.base import (
    AuthError,
    BadRequestError,
    ConnectionLostError,
    ContextTooLongError,
    MalformedStreamError,
    OverloadedError,
    Provider,
    ProviderConnectionError,
    ProviderError,
    ProviderTimeoutError,
    RateLimitError,
    ServerError,
)
from rollchat.text import redact_url

if TYPE_CHECKING:
    from rollchat.config import AgentConfig, Config

DEFAULT_MODELS = {"anthropic": "claude-sonnet-4-5", "openai": "gpt-4o-mini", "offline": "offline"}

# The environment variable holding each remote provider's key, and the SDK it imports.
KEY_ENV = {"anthropic": "ANTHROPIC_API_KEY", "openai": "OPENAI_API_KEY"}
SDK_MODULES = {"anthropic": "anthropic", "openai": "openai"}


@dataclass(frozen=True)
class ProviderSettings:
    """What a factory needs to build a provider (resolved by ``build_provider``)."""

    model: str
    api_key: str | None
    base_url: str | None
    timeout: float
    word_delay: float


ProviderFactory = Callable[[ProviderSettings], Provider]


def _load(path: str) -> Any:
    """Import ``"package.module:Attribute"`` and return the attribute."""
    module, _, attribute = path.partition(":")
    return getattr(importlib.import_module(module), attribute)


def _remote(path: str) -> ProviderFactory:
    def build(s: ProviderSettings) -> Provider:
        cls = _load(path)
        provider: Provider = cls(s.model, api_key=s.api_key, base_url=s.base_url,
                                 timeout=s.timeout)
        return provider

    return build


def _offline(s: ProviderSettings) -> Provider:
    provider: Provider = _load("rollchat.providers.offline:OfflineProvider")(
        word_delay=s.word_delay)
    return provider


REGISTRY: dict[str, ProviderFactory] = {
    "anthropic": _remote("rollchat.providers.anthropic:AnthropicProvider"),
    "openai": _remote("rollchat.providers.openai:OpenAIProvider"),
    "offline": _offline,
}


# ---------------------------------------------------------------- selection


def _custom_key_var(agent: AgentConfig, env: Mapping[str, str]) -> str | None:
    var = agent.api_key_env
    return var if var and env.get(var) else None


def resolve_provider_name(agent: AgentConfig, env: Mapping[str, str]) -> tuple[str, str]:
    """The provider to use and a short reason for the banner.

    ``auto``: anthropic when ANTHROPIC_API_KEY is set (or the agent's ``api_key_env``
    variable, unless a base URL points at an OpenAI-compatible server), else openai when
    OPENAI_API_KEY or a base URL is set, else offline. ANTHROPIC_API_KEY wins over a base URL
    (the spec's order); the reason then says so, with the way out.
    """
    if agent.provider != "auto":
        if agent.provider not in REGISTRY:
            raise ConfigError(_unknown(agent.provider))
        return agent.provider, "configured"
    custom = _custom_key_var(agent, env)
    if env.get("ANTHROPIC_API_KEY"):
        if agent.base_url:
            return "anthropic", ("ANTHROPIC_API_KEY is set (the base URL goes to Anthropic; "
                                 "use --provider openai for an OpenAI-compatible server)")
        return "anthropic", "ANTHROPIC_API_KEY is set"
    if custom and not agent.base_url:
        return "anthropic", f"{custom} is set"
    if env.get("OPENAI_API_KEY"):
        return "openai", "OPENAI_API_KEY is set"
    if agent.base_url:
        return "openai", f"base URL {redact_url(agent.base_url)}"
    return "offline", "no API key configured"


def _unknown(name: str) -> str:
    return f"unknown provider {name!r}; choose one of: auto, {', '.join(REGISTRY)}"


def api_key_for(name: str, agent: AgentConfig, env: Mapping[str, str]) -> str | None:
    """The key for provider ``name``: the agent's ``api_key_env`` variable, else the default."""
    custom = _custom_key_var(agent, env)
    if custom:
        return env[custom]
    var = KEY_ENV.get(name)
    return (env.get(var) or None) if var else None


def build_provider(name: str, agent: AgentConfig, config: Config,
                   env: Mapping[str, str]) -> Provider:
    """Build provider ``name`` ("auto" is resolved first) for ``agent``."""
    if name == "auto":
        name = resolve_provider_name(agent, env)[0]
    factory = REGISTRY.get(name)
    if factory is None:
        raise ConfigError(_unknown(name))
    key = api_key_for(name, agent, env)
    if name in KEY_ENV and not key and not (name == "openai" and agent.base_url):
        hint = " (or a base_url for an OpenAI-compatible server)" if name == "openai" else ""
        raise ConfigError(f"provider {name} needs an API key: set {KEY_ENV[name]}{hint}, "
                          "or name another variable with api_key_env")
    settings = ProviderSettings(
        model=agent.model or DEFAULT_MODELS[name], api_key=key, base_url=agent.base_url,
        timeout=config.retry.request_timeout, word_delay=config.ui.offline_word_delay)
    return factory(settings)


_prefetched: set[str] = set()
_prefetch_lock = threading.Lock()


def prefetch_sdks(*names: str) -> None:
    """Import the SDKs of providers ``names`` (all remote ones when none is given) in a daemon
    thread, so the first model call does not pay for it. Safe to call more than once."""
    wanted = [n for n in (names or tuple(SDK_MODULES)) if n in SDK_MODULES]
    with _prefetch_lock:
        todo = [n for n in wanted if n not in _prefetched]
        _prefetched.update(todo)
    if todo:
        threading.Thread(target=_import_quietly, args=(todo,), name="rollchat-prefetch",
                         daemon=True).start()


def _import_quietly(names: list[str]) -> None:
    for name in names:
        try:
            importlib.import_module(SDK_MODULES[name])
        except Exception:  # a missing or broken SDK is reported at the first call instead
            continue


# ---------------------------------------------------------------- SDK error mapping

_URL_CREDENTIALS = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*://)[^/\s@]+@")
_LOST_HINTS = ("peer closed", "incomplete chunked read", "connection reset",
               "Server disconnected")
SECRET_MIN_LEN = 8  # shorter keys ("x", "ollama", "none") are placeholders, not secrets
_KEY_LIKE = re.compile(r"\b(sk-[A-Za-z0-9_\-*]{6,}|[A-Za-z0-9_\-]{32,})")
_CONTEXT_HINTS = ("prompt is too long", "context length", "context_length", "maximum context",
                  "context window", "too many tokens")
_BY_ERROR_TYPE: dict[str, type[ProviderError]] = {
    "overloaded_error": OverloadedError, "rate_limit_error": RateLimitError,
    "api_error": ServerError, "authentication_error": AuthError,
    "permission_error": AuthError, "invalid_request_error": BadRequestError,
}


class SDKProvider:
    """What the SDK-backed providers share: their settings, and the SDK client, imported and
    created at the first call (importing an SDK costs most of a second)."""

    sdk = ""  # the SDK's module (and pip package) name

    def __init__(self, model: str, *, api_key: str | None, base_url: str | None,
                 timeout: float, name: str | None = None) -> None:
        self.name = name or self.sdk
        self.model = model
        self._api_key = api_key
        self._base_url = base_url
        self._timeout = timeout
        self._client: Any = None

    def _sdk_client(self) -> Any:
        if self._client is None:
            try:
                module = importlib.import_module(self.sdk)
            except ImportError as exc:
                raise sdk_missing(self.sdk) from exc
            self._client = self._make_client(module)
        return self._client

    def _make_client(self, sdk: Any) -> Any:
        raise NotImplementedError


def sdk_missing(package: str) -> ProviderError:
    return ProviderError(f"the {package} package is not installed: run `pip install {package}`")


def scrub(text: str, secret: str | None, limit: int = 300) -> str:
    """One line, at most ``limit`` characters, with the key, key-like tokens and the
    credentials of URLs (``user:password@``) removed. A key shorter than SECRET_MIN_LEN is a
    placeholder (local servers take any key): replacing it would garble the text."""
    if secret and len(secret) >= SECRET_MIN_LEN:
        text = text.replace(secret, "[redacted]")
    text = _URL_CREDENTIALS.sub(r"\1[redacted]@", text)
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


def _error_fields(body: object) -> tuple[str, str, str]:
    """(type, code, message) from an error body, nested under "error" or not."""
    if isinstance(body, Mapping) and isinstance(body.get("error"), Mapping):
        body = body["error"]
    if not isinstance(body, Mapping):
        return "", "", str(body or "")
    return (str(body.get("type") or ""), str(body.get("code") or ""),
            str(body.get("message") or ""))


def is_context_error(code: str, message: str) -> bool:
    lowered = message.lower()
    return code == "context_length_exceeded" or any(h in lowered for h in _CONTEXT_HINTS)


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
        kind, _, message = _error_fields(body)
        return _BY_ERROR_TYPE.get(kind, ServerError)(scrub(message or detail, secret))
    return ProviderError(f"{type(exc).__name__}: {detail}")


def _connection_detail(exc: BaseException, secret: str | None) -> str:
    cause: BaseException | None = exc
    while cause is not None and cause.__cause__ is not None:
        cause = cause.__cause__
    text = str(cause) if cause is not None else ""
    return scrub(text or str(exc), secret) or "the connection failed"


def _status_error(exc: Exception, status: int, secret: str | None) -> ProviderError:
    kind, code, message = _error_fields(getattr(exc, "body", None))
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    wait = retry_after(headers)
    detail = message or str(exc)
    text = scrub(f"HTTP {status}: {detail}" if status >= 400 else detail, secret)
    if status in (401, 403):
        return AuthError(text)
    if status == 429:
        return RateLimitError(text, retry_after=wait)
    if status == 529 or kind == "overloaded_error":
        return OverloadedError(text, retry_after=wait)
    if status == 408:
        return ProviderTimeoutError(text)
    if status >= 500:
        return ServerError(text, retry_after=wait)
    if status in (400, 413) and is_context_error(code, message):
        return ContextTooLongError(text)
    if 400 <= status < 500:
        return BadRequestError(text)
    return _BY_ERROR_TYPE.get(kind, ServerError)(text, retry_after=wait)
