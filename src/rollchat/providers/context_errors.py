"""Recognizing a "context too long" refusal and reading the window it states, in the wordings
of the APIs and local servers rollchat talks to (examples in
tests/providers/test_context_errors.py).

Servers differ: OpenAI and vLLM state "maximum context length is N tokens", Anthropic
"N tokens > M maximum" or "exceed context limit: a + b > M", llama.cpp (and Ollama through it)
"exceeds the available context size (M tokens)" plus ``n_ctx`` in the body, LM Studio
"context length of only M tokens" or "n_ctx: M". Some say nothing of the size.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

_HINTS = ("prompt is too long", "context length", "context_length", "maximum context",
          "context window", "too many tokens", "exceed context limit",
          "exceeds the available context", "context size", "maximum model length",
          "exceeds limit of", "n_keep", "exceed_context_size")

_NUMBER = r"(\d[\d,]*)"
# Each pattern captures the window the server states.
_LIMITS = tuple(re.compile(p, re.IGNORECASE) for p in (
    rf"maximum context length is {_NUMBER}",  # OpenAI, vLLM, DeepSeek
    rf"maximum context length \({_NUMBER} tokens\)",  # Ollama's MLX runner
    rf"exceed context limit: {_NUMBER} \+ {_NUMBER} > (?P<limit>{_NUMBER[1:-1]})",  # Anthropic
    rf"tokens > {_NUMBER} maximum",  # Anthropic "prompt is too long"
    rf"available context size \({_NUMBER} tokens\)",  # llama.cpp, Ollama
    rf"maximum model length of {_NUMBER}",  # vLLM "decoder prompt ... is longer than"
    rf"exceeds limit of {_NUMBER}",  # older vLLM
    rf"context length of only {_NUMBER}",  # LM Studio
    rf"n_ctx\W{{1,3}}{_NUMBER}",  # LM Studio / llama.cpp "n_keep ... >= n_ctx: N", "n_ctx (N)"
    rf"max context window of {_NUMBER}",  # oMLX and similar
))


def is_context_error(code: str, message: str, kind: str = "") -> bool:
    """Whether an error (its code, message and type) says the request was too long."""
    lowered = f"{message} {kind}".lower()
    return code == "context_length_exceeded" or any(h in lowered for h in _HINTS)


# llama.cpp's slots share one KV cache: when requests overlap and it fills, the request being
# decoded fails with this 500 (as an error event of a 200 stream), though alone it fits.
_BUSY = "context size has been exceeded"


def is_busy_server(code: str, message: str, body: object = None) -> bool:
    """Whether a "context" error is a busy server's (llama.cpp's shared cache filled by
    requests at once: code 500, no window stated), not a statement that the request is too
    long: it is retried, never learned as a window."""
    if _BUSY not in message.lower() or _body_limit(body) is not None:
        return False
    return code in ("", "500", "server_error") or code.startswith("5")


def busy_detail(text: str) -> str:
    return (f"{text} (the server is busy: requests at once filled its shared context; "
            "this one alone fits, so it is tried again)")


def stated_limit(message: str, body: object = None) -> int | None:
    """The context window in tokens that an error states, or None when it gives none.

    ``body``: the error's JSON body, whose ``n_ctx`` (llama.cpp) is used when the message
    carries no number."""
    for pattern in _LIMITS:
        match = pattern.search(message)
        if match:
            group = match.groupdict().get("limit") or match.group(1)
            value = int(group.replace(",", ""))
            if value > 0:
                return value
    return _body_limit(body)


def _body_limit(body: object) -> int | None:
    if isinstance(body, Mapping) and isinstance(body.get("error"), Mapping):
        body = body["error"]
    if isinstance(body, Mapping):
        value = body.get("n_ctx")
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return None
