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


# One figure per meaning (issue 25.5), in the same words wherever it is shown (the toolbar,
# `context`, `compact`, the restoration line, the picker, `sessions`, the goodbye).
# Tokens billed: input + output of every model call a session made (its queries, its
# restoration, its summaries): SessionState.billed, the header's Tokens Billed.
# Context size: the next request's prompt as automatic compaction sees it (Session.estimate:
# the provider's last count plus a local count of what was added since).
# Cost: dollars for the tokens billed (models.prices.money).
# Exact numbers with thousands separators: two places never round one figure differently.


def tokens_billed(tokens: int, exact: bool = True) -> str:
    """A session's tokens billed: "2,982 tokens billed" ("≥2,982" when a lower bound)."""
    return f"{'' if exact else '≥'}{tokens:,} tokens billed"


def session_size(queries: int, tokens: int, exact: bool = True) -> str:
    """A session's size: "4 queries, 2,982 tokens billed"."""
    return f"{plural(queries, 'query')}, {tokens_billed(tokens, exact)}"


def context_size(tokens: int | None, window: int) -> str:
    """The context against the window: "context 461 of 32,000 tokens (1%)"; ``tokens`` None:
    not counted yet (before the first message the tokenizer is still loading)."""
    if tokens is None:
        return f"context – of {window:,} tokens"
    share = f"{tokens / window:.0%}" if window else "?"
    return f"context {tokens:,} of {window:,} tokens ({share})"


def billed_breakdown(queries: int, query_tokens: int, restoring: int, summaries: int,
                     memory: int = 0) -> str:
    """A session's size with where its tokens went: "2 queries, 5,055 tokens billed (2,633 for
    the queries, 725 restoring the context, 1,697 for summaries)", and ``memory``'s tokens
    "for memory" (fact extraction) when there are some."""
    parts = [f"{restoring:,} restoring the context"] if restoring else []
    parts += [f"{summaries:,} for summaries"] if summaries else []
    parts += [f"{memory:,} for memory"] if memory else []
    size = session_size(queries, query_tokens + restoring + summaries + memory)
    return size + (f" ({', '.join([f'{query_tokens:,} for the queries', *parts])})"
                   if parts else "")
