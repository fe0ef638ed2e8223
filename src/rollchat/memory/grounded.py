"""Whether a fact is the user's: its content words are in the user message it cites (the
user's own words, not what they quote or paste), so that nothing a tool, a document or the
assistant said is ever kept as a fact about the user."""

# A model asked for facts about the user repeats what it read anywhere in the conversation
# (a tool result quoted by the assistant: "remember that the user's API base URL is ..."), so
# every fact, the model's and the rules' alike, is checked here before it is stored. The words a
# fact is framed in ("user's", "prefers", "is", "always") are the model's; every other word must
# be in the cited message, compared through SQLite FTS5's Porter stemmer (as memory search is:
# "prefers" finds "prefer"), and every literal (a URL, a path, an email address, a version, a
# command's flags) must be there as written.

from __future__ import annotations

import re
import sqlite3

from rollchat.memory.rules import quoted_removed
from rollchat.memory.search import STOPWORDS

# the words a third-person fact is framed in: the model's, not the user's
FRAME = frozenset({
    "user", "users", "user's", "prefers", "prefer", "preferred", "preference", "likes",
    "like", "liked", "dislikes", "dislike", "wants", "want", "would", "rather", "always",
    "never", "should", "must", "usually", "often", "uses", "use", "used", "using", "is", "are",
    "was", "were", "be", "been", "has", "have", "had", "his", "her", "he", "she", "him", "its",
    "their", "they", "them", "someone", "person", "named", "called", "decided", "decision",
    "chose", "chosen", "picked", "works", "working", "project", "team", "who", "whose",
    "than", "over", "instead", "only", "every", "each", "one", "don't", "doesn't", "does",
    "not", "no", "don’t", "doesn’t",
    # what a detail is ("call me Sam": user's name is Sam; "reach me at bob@x.org": email)
    "name", "email", "e-mail", "address", "phone", "number", "handle",
})
_EDGE = "\"'“”‘’`()[]{}<>,;:!?.*_"
_PLAIN = re.compile(r"[^\W\d_]+(?:['’-][^\W\d_]+)*")  # letters, with ' or - inside


def _tokens(text: str) -> tuple[list[str], list[str]]:
    """(plain words, literals) of a fact: words of letters, and tokens holding digits or
    signs (``bob@example.com``, ``3.12``, ``~/work``, ``-rf``), casefolded."""
    words: list[str] = []
    literals: list[str] = []
    for chunk in text.casefold().split():
        token = chunk.strip(_EDGE)
        for tail in ("'s", "’s"):
            token = token.removesuffix(tail)
        if not token:
            continue
        if _PLAIN.fullmatch(token):
            if token not in FRAME and token not in STOPWORDS and len(token) > 1:
                words.append(token)
        elif any(c.isalnum() for c in token):
            literals.append(token)
    return words, literals


def _all_stemmed_in(words: list[str], text: str) -> bool:
    """Whether every word is in ``text``, as the Porter stemmer sees words."""
    if not words:
        return True
    query = " AND ".join('"' + word.replace('"', '""') + '"' for word in words)
    db = sqlite3.connect(":memory:")
    try:
        db.execute("CREATE VIRTUAL TABLE t USING fts5(body, tokenize='porter unicode61')")
        db.execute("INSERT INTO t(rowid, body) VALUES (1, ?)", (text,))
        return db.execute("SELECT 1 FROM t WHERE t MATCH ?", (query,)).fetchone() is not None
    finally:
        db.close()


def in_own_words(fact: str, message: str) -> bool:
    """Whether ``fact`` is made of the words of ``message`` (a user's message), besides the
    words a fact is framed in: every literal as written, every other word stemmed. A fact
    with no word of its own says nothing of the message: False."""
    words, literals = _tokens(fact)
    if not words and not literals:
        return False
    own = quoted_removed(message).casefold()
    for literal in literals:
        if not re.search(rf"(?<![\w]){re.escape(literal)}(?![\w])", own):
            return False
    return _all_stemmed_in(words, own)
