"""Wording for people, shared by every layer (no terminal, no I/O): plurals, token counts, and
URLs made safe to show (secrets redacted)."""

from __future__ import annotations

import re
from urllib.parse import urlsplit, urlunsplit

_IRREGULAR = {"query": "queries", "summary": "summaries", "entry": "entries"}


def plural(count: int, word: str) -> str:
    """``1 query``, ``2 queries``, ``0 turns``."""
    if count == 1:
        return f"{count} {word}"
    return f"{count} {_IRREGULAR.get(word, word + 's')}"


def redact_url(url: str) -> str:
    """``url`` without credentials or query string, for banners and messages."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "<invalid URL>"
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    if parts.username or parts.password:
        host = f"***@{host}"
    return urlunsplit((parts.scheme, host, parts.path, "", ""))


_URL_USERINFO = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*://)[^/\s@]+@")
_SECRET_PARAM = re.compile(
    r"([?&;][^=&;\s#]*(?:key|token|secret|passw|pwd|auth|sig|credential)[^=&;\s#]*=)"
    r"[^&;\s#\"'<>]+", re.IGNORECASE)


def redact_urls(text: str) -> str:
    """``text`` with the credentials of every URL in it (``user:password@``) and the values of
    secret-looking query parameters (``?api_key=``, ``&token=``, ``sig=``) replaced by
    ``[redacted]``: for messages that may quote a URL (errors from servers and SDKs)."""
    return _SECRET_PARAM.sub(r"\1[redacted]", _URL_USERINFO.sub(r"\1[redacted]@", text))


def has_secret_in_url(text: str) -> bool:
    """Whether ``text`` holds URL credentials or a secret-looking query parameter."""
    return redact_urls(text) != text


def human_tokens(n: int) -> str:
    """A token count for people: 950, 2.3K, 200K, 1.5M."""
    if n < 1000:
        return str(n)
    if n < 1_000_000:
        return f"{n / 1000:.1f}K".replace(".0K", "K")
    return f"{n / 1_000_000:.1f}M".replace(".0M", "M")
