"""Small wording helpers shared by every layer (no terminal, no I/O)."""

from __future__ import annotations

_IRREGULAR = {"query": "queries", "summary": "summaries", "entry": "entries"}


def plural(count: int, word: str) -> str:
    """``1 query``, ``2 queries``, ``0 turns``."""
    if count == 1:
        return f"{count} {word}"
    return f"{count} {_IRREGULAR.get(word, word + 's')}"
