"""Fuzzy matching for the session picker: every word of the query must match one field of an
entry (a substring, else its letters in order); entries rank by match, then recency."""

# Pure and fast: a compiled pattern screens each entry at C speed, and only the entries it lets
# through are scored.

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

_SEP = "\x00"  # between the fields of an entry's haystack: no match spans two fields
_STARTS = re.escape(" _-./:\t" + _SEP)  # what a word starts after


@dataclass(frozen=True)
class Candidate:
    """One thing to choose: ``fields`` are what the query matches (title, id, date, first
    line, ...), ``when`` orders equally good matches (most recent first)."""

    key: str
    fields: tuple[str, ...]
    when: datetime

    @property
    def haystack(self) -> str:
        return _SEP.join(f.replace(_SEP, " ").lower() for f in self.fields)


class Matcher:
    """The candidates, prepared once; ``rank(query)`` is called for every keystroke."""

    def __init__(self, candidates: Sequence[Candidate]) -> None:
        recent = sorted(range(len(candidates)),
                        key=lambda i: (candidates[i].when, candidates[i].key), reverse=True)
        self.candidates = [candidates[i] for i in recent]
        self._hay = [c.haystack for c in self.candidates]
        self._last: tuple[str, list[int]] = ("", list(range(len(self.candidates))))

    def rank(self, query: str) -> list[Candidate]:
        """The candidates every word of ``query`` matches, best first (ties: most recent)."""
        words = query.lower().split()
        if not words:
            return list(self.candidates)
        # typing on only narrows: what matches "redis p" matched "redis " and "redi"
        last, pool = self._last
        if not query.startswith(last):
            pool = range(len(self.candidates))  # type: ignore[assignment]
        screens = [_pattern(w) for w in words]
        hay = self._hay
        found = [i for i in pool if all(s.search(hay[i]) for s in screens)]
        self._last = (query, found)
        starts = [(w, re.compile(f"(?:^|[{_STARTS}]){re.escape(w)}")) for w in words]
        scored = sorted((-sum(_score(w, at_start, hay[i]) for w, at_start in starts), i)
                        for i in found)
        return [self.candidates[i] for _, i in scored]


def _pattern(word: str) -> re.Pattern[str]:
    """The word's characters in order, within one field: each gap is ``[^SEP c]*c``, which
    never backtracks (the earliest next ``c``), so a search stays linear."""
    first, *rest = (re.escape(ch) for ch in word)
    return re.compile(first + "".join(f"[^{_SEP}{ch}]*{ch}" for ch in rest))


def _score(word: str, at_start: re.Pattern[str], hay: str) -> int:
    """How well ``word`` matches its best field: at the start of a word beats inside one,
    which beats letters spread out (the tighter the better)."""
    if at_start.search(hay):
        return 1000
    if word in hay:
        return 600
    best = 0
    for field in hay.split(_SEP):
        span = _tightest(word, field)
        if span is not None:
            best = max(best, max(1, 300 - (span - len(word)) * 10))
    return best


def _tightest(word: str, field: str) -> int | None:
    """The length of the shortest stretch of ``field`` holding ``word``'s letters in order."""
    best: int | None = None
    first = field.find(word[0])
    while first != -1:
        at = first
        for ch in word[1:]:
            at = field.find(ch, at + 1)
            if at == -1:
                return best
        # the stretch ends at ``at``; walk back for its latest possible start
        back = at
        for ch in reversed(word[:-1]):
            back = field.rfind(ch, first, back)
        span = at - back + 1
        best = span if best is None else min(best, span)
        first = field.find(word[0], back + 1)
    return best
