"""Ranking facts and episodes against a query with SQLite FTS5's bm25(), in an in-memory
database built from the texts (a few thousand short texts index in milliseconds)."""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Sequence

# Words that would make every text match; a query of only these matches nothing.
STOPWORDS = frozenset({
    "a", "an", "and", "are", "as", "at", "be", "but", "by", "can", "could", "did", "do", "does",
    "for", "from", "had", "has", "have", "how", "i", "if", "in", "is", "it", "its", "me", "my",
    "of", "on", "or", "our", "so", "that", "the", "their", "them", "then", "there", "these",
    "they", "this", "to", "was", "we", "were", "what", "when", "where", "which", "who", "why",
    "will", "with", "would", "you", "your", "yes", "no", "not", "please", "thanks", "ok",
    "okay", "let", "lets", "us", "about", "just", "some", "any", "all", "also", "into", "out",
    "up", "down", "more", "most", "very",
})
MAX_TERMS = 64


def terms(query: str) -> list[str]:
    """The query's words worth matching on, lowercased, each once, in order."""
    seen: dict[str, None] = {}
    for word in re.findall(r"\w+", query.casefold()):
        if len(word) > 1 and word not in STOPWORDS:
            seen.setdefault(word, None)
    return list(seen)[:MAX_TERMS]


def rank(texts: Sequence[str], query: str, k: int) -> list[int]:
    """Indexes into ``texts`` of the ``k`` best matches for ``query``, best first (bm25 with
    Porter stemming, so "prefers" finds "prefer"); [] when nothing matches."""
    words = terms(query)
    if not words or not texts or k <= 0:
        return []
    match = " OR ".join('"' + word.replace('"', '""') + '"' for word in words)
    db = sqlite3.connect(":memory:")
    try:
        db.execute("CREATE VIRTUAL TABLE t USING fts5(body, tokenize='porter unicode61')")
        db.executemany("INSERT INTO t(rowid, body) VALUES (?, ?)",
                       ((i, text) for i, text in enumerate(texts)))
        rows = db.execute("SELECT rowid FROM t WHERE t MATCH ? ORDER BY bm25(t), rowid "
                          "LIMIT ?", (match, k)).fetchall()
    finally:
        db.close()
    return [int(row[0]) for row in rows]
