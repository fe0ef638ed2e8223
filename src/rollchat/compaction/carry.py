"""What a summary must not lose: open tasks carried until a later turn resolves them, and
summaries merged or fitted to a word budget without dropping a decision or a pending item
(topics go first, then artifacts, and the block records how many went)."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import replace

from rollchat.compaction import timeline
from rollchat.domain import Summary, Turn
from rollchat.text.named import DONE, NOT_DONE, content_words, has_named
from rollchat.text.near import NearIndex
from rollchat.text.phrases import (
    haystack,
    item_key,
    near_duplicates,
    prose_sentences,
    same_word,
    word_forms,
)

LAST_REQUEST = "last request:"
_NONE = frozenset(("none", "none.", "n/a", "-", ""))
_LABELS = re.compile(r"^(?:last request|unanswered|answer cut off \(\w+\))\s*:\s*", re.I)


def _shares(keys: Sequence[str], words: Iterable[str]) -> int:
    found = list(words)
    return sum(1 for key in keys if any(same_word(key, word) for word in found))


def _enough(shared: int, keys: int) -> bool:
    """At least half of an item's key words, two at least when it has two."""
    return shared >= min(2, keys) and shared * 2 >= keys


def _says_done(sentence: str) -> bool:
    """A done-phrase, no negation, not a question: a sentence that can resolve an item."""
    return not (sentence.rstrip().endswith("?") or not DONE.search(sentence)
                or NOT_DONE.search(sentence))


# A word of every phrase of DONE (its letters in a row): text that holds none of them cannot
# say something is done. haystack() only drops characters or turns them into spaces, so a
# phrase DONE finds there has this word in the text itself (tests/compaction/test_carry_scan.py).
_DONE_WORDS = ("done", "finished", "complete", "shipped", "merged", "resolved", "fixed",
               "deployed", "migrated", "landed", "closed", "sorted", "taken", "wrapped",
               "needed", "cancel", "upgraded", "released", "works", "live")


def may_say_done(text: str) -> bool:
    """False when no sentence of ``text`` can say something is done (no word of a done-phrase
    in it): decided without ``haystack`` and DONE, which a session's every turn would cost.
    ASCII text only (beyond it, IGNORECASE folds more than ``lower``): else True."""
    if not text.isascii():
        return True
    low = text.lower()
    return any(word in low for word in _DONE_WORDS)


def _task_words(item: str) -> list[str]:
    return content_words(_LABELS.sub("", item))


def resolves(sentence: str, item: str) -> bool:
    """Whether ``sentence`` says ``item`` is done: a done-phrase, no negation, not a
    question, and at least half of the item's key words (two at least, when it has two)."""
    if not _says_done(sentence):
        return False
    keys = _task_words(item)
    return bool(keys) and _enough(_shares(keys, content_words(sentence)), len(keys))


class Resolutions:
    """The sentences of ``turns`` that say something is done, filed by word forms
    (``word_forms``), so asking whether an item is resolved after turn i reads only the
    sentences sharing a word with it: the same answer as ``resolves`` over every sentence of
    every later turn, without reading them all for each item."""

    def __init__(self, turns: Sequence[Turn]) -> None:
        self._turn: list[int] = []  # the turn index of each done-sentence
        self._filed: dict[str, list[int]] = {}  # word form -> done-sentences
        for index, turn in enumerate(turns):
            self.add(index, turn)

    def add(self, index: int, turn: Turn, texts: Sequence[str] = ()) -> None:
        """File the done-sentences of ``turn``, the turn at ``index`` (``texts``: the
        ``haystack`` of its user text and reply, when the caller has them)."""
        for at, text in enumerate((turn.user, turn.assistant)):
            if not may_say_done(text):
                continue  # (the cheap look first: a long session's every turn comes here)
            whole = texts[at] if texts else haystack(text)
            if not DONE.search(whole):
                continue  # no sentence of it can say something is done
            for sentence in prose_sentences(text):
                if _says_done(sentence):
                    self._file(index, content_words(sentence))

    def _file(self, index: int, words: list[str]) -> None:
        number = len(self._turn)
        self._turn.append(index)
        for form in {f for word in words for f in word_forms(word)}:
            self._filed.setdefault(form, []).append(number)

    def resolved(self, item: str, after: int = -1) -> bool:
        """Whether a sentence of a turn after index ``after`` resolves ``item``."""
        keys = _task_words(item)
        if not keys:
            return False
        shared: Counter[int] = Counter()
        for key in keys:
            shared.update({n for form in word_forms(key) for n in self._filed.get(form, ())
                           if self._turn[n] > after})
        return any(_enough(count, len(keys)) for count in shared.values())


def resolved(item: str, turns: Sequence[Turn]) -> bool:
    """Whether a turn of ``turns`` says ``item`` is done (see ``resolves``)."""
    return Resolutions(turns).resolved(item)


def carried(parent: Sequence[str], own: Sequence[str], turns: Sequence[Turn]) -> list[str]:
    """``own`` items, then the parent's not resolved in ``turns`` and not already in ``own``
    (near-duplicates count as the same item), except its "Last request" item."""
    keys = [item_key(item) for item in own]
    kept = [(item, item_key(item)) for item in parent
            if not item.lower().startswith(LAST_REQUEST) and item.strip().lower() not in _NONE]
    # the parent's "Last request" item: answered by the session that followed
    index = NearIndex(near_duplicates, [*keys, *(key for _item, key in kept)])
    for key in keys:
        index.add(key)
    done = Resolutions(turns) if kept else None
    out = list(own)
    for item, key in kept:
        if key and index.find(key) is None and not (done and done.resolved(item)):
            index.add(key)
            out.append(item)
    return out


def union(groups: Iterable[Sequence[str]]) -> list[str]:
    """Items of ``groups`` in order, exact and near-duplicates merged (the longer kept)."""
    items = [(item, item_key(item)) for group in groups for item in group if item.strip()]
    index = NearIndex(near_duplicates, (key for _item, key in items))
    out: list[str] = []
    for item, key in items:
        match = index.find(key)
        if match is None:
            index.add(key)
            out.append(item)
        elif len(item) > len(out[match]):
            out[match] = item
            index.replace(match, key)
    return out


CHARS_PER_WORD = 12  # a summary's character budget: max_words words of this length on average
# Decisions and pending items are never dropped to fit the budget, but a summary is bounded
# all the same: past HARD_FACTOR times the budget the oldest go, and one line says so.
HARD_FACTOR = 8
LEFT_OUT_DECISIONS = "Earlier decisions are left out (too many to keep); the transcript has them."
LEFT_OUT_PENDING = "Earlier open tasks are left out (too many to keep); the transcript has them."


def words_of(summary: Summary) -> int:
    """Words of a summary's background and bullets (a dash counts as one)."""
    items = (*summary.topics, *summary.decisions, *summary.pending, *summary.artifacts,
             *summary.timeline)
    return len(summary.background.split()) + sum(len(i.split()) + 1 for i in items)


def chars_of(summary: Summary) -> int:
    """Characters of a summary's background and bullets (each with its dash and newline)."""
    items = (*summary.topics, *summary.decisions, *summary.pending, *summary.artifacts,
             *summary.timeline)
    return len(summary.background) + sum(len(i) + 3 for i in items)


class _Budget:
    """What a summary has over its word and character budgets, spent as items go."""

    def __init__(self, summary: Summary, max_words: int) -> None:
        self.words = words_of(summary) - max_words
        self.chars = chars_of(summary) - max_words * CHARS_PER_WORD

    @property
    def over(self) -> bool:
        return self.words > 0 or self.chars > 0

    def spend(self, item: str) -> None:
        self.words -= len(item.split()) + 1
        self.chars -= len(item) + 3


def _topics_to_drop(topics: Sequence[str], budget: _Budget) -> set[int]:
    """The topics to drop while over budget: those naming nothing, then named ones (the last
    first: the lists hold the most recent first); never the first (it goes last)."""
    drop: set[int] = set()
    for plain_only in (True, False):
        for index in range(len(topics) - 1, 0, -1):
            if not budget.over:
                return drop
            if index not in drop and not (plain_only and has_named(topics[index])):
                drop.add(index)
                budget.spend(topics[index])
    return drop


def fit_words(summary: Summary, max_words: int, *, focused: bool = False) -> Summary:
    """``summary`` within ``max_words`` words and ``max_words * CHARS_PER_WORD`` characters if
    it can be without losing a decision or a pending item: near-duplicates merged, then the
    last topics dropped (the lists hold the most recent first; topics naming nothing go
    first), then the last artifacts, and the first topic (the focus, or the latest) last; the
    counts are recorded in the summary. The Timeline is first fitted to its own share of the
    budget (``timeline.fit``: the oldest days go first, counted with the topics) and is then
    kept, like the decisions, unless the summary is still over budget without any topic (its
    days then go, the oldest first); for a ``focused`` summary (its first topic names the
    focus) its days go before the first topic does."""
    when, gone = timeline.fit(timeline.merge([summary.timeline]), max_words)
    summary = replace(summary, topics=tuple(union([summary.topics])),
                      decisions=tuple(union([summary.decisions])),
                      pending=tuple(union([summary.pending])),
                      artifacts=tuple(union([summary.artifacts])),
                      timeline=tuple(when), dropped_topics=summary.dropped_topics + gone)
    budget = _Budget(summary, max_words)
    drop = _topics_to_drop(summary.topics, budget)
    artifacts = list(summary.artifacts)
    while budget.over and artifacts:
        budget.spend(artifacts.pop())
    while focused and budget.over and when:  # the oldest days, before the focus
        budget.spend(when.pop(0))
    if budget.over and summary.topics:
        drop.add(0)
        budget.spend(summary.topics[0])
    while budget.over and when:  # days of blobs (a "word" of 200 characters): they go too
        budget.spend(when.pop(0))
    topics = [t for i, t in enumerate(summary.topics) if i not in drop]
    fitted = replace(summary, topics=tuple(topics), artifacts=tuple(artifacts),
                     timeline=tuple(when),
                     dropped_topics=(summary.dropped_topics + len(drop)
                                     + len(summary.timeline) - len(when)),
                     dropped_artifacts=summary.dropped_artifacts + len(summary.artifacts)
                     - len(artifacts))
    return _bounded(fitted, max_words)


def _bounded(summary: Summary, max_words: int) -> Summary:
    """``summary`` within HARD_FACTOR times its budget: the oldest decisions go first (the
    front of the list; a session too long to keep them all goes on from its latest), then the
    oldest pending items (its end), a line in each list saying that some were left out."""
    if not _Budget(summary, HARD_FACTOR * max_words).over:
        return summary
    decisions = [d for d in summary.decisions if d != LEFT_OUT_DECISIONS][::-1]
    pending = [p for p in summary.pending if p != LEFT_OUT_PENDING]
    cut = [LEFT_OUT_DECISIONS in summary.decisions, LEFT_OUT_PENDING in summary.pending]
    budget = _Budget(replace(summary, decisions=(*decisions, LEFT_OUT_DECISIONS),
                             pending=(*pending, LEFT_OUT_PENDING)), HARD_FACTOR * max_words)
    for number, items in enumerate((decisions, pending)):
        while budget.over and len(items) > 1:
            budget.spend(items.pop())
            cut[number] = True
    return replace(summary, decisions=(*[LEFT_OUT_DECISIONS] * cut[0], *decisions[::-1]),
                   pending=(*pending, *[LEFT_OUT_PENDING] * cut[1]))


def merge_summaries(parts: Sequence[Summary], max_words: int, turns: Sequence[Turn] = (),
                    ) -> Summary:
    """Fold partial summaries (oldest first) into one without dropping an item silently: the
    first part's background; every part's decisions, pending items (but those a later part
    dropped because ``turns`` resolve them) and artifacts; topics most recent first; then
    ``fit_words`` (topics go first, counted)."""
    last = parts[-1]
    pending = carried([p for part in parts[:-1] for p in part.pending], last.pending, turns)
    merged = Summary(
        background=parts[0].background,
        topics=tuple(union(reversed([p.topics for p in parts]))),
        decisions=tuple(union([p.decisions for p in parts])),
        pending=tuple(union([pending])),
        fallback=any(p.fallback for p in parts),
        artifacts=tuple(union(reversed([p.artifacts for p in parts]))),
        timeline=tuple(timeline.merge(p.timeline for p in parts)),
        dropped_topics=sum(p.dropped_topics for p in parts),
        dropped_artifacts=sum(p.dropped_artifacts for p in parts),
        # the latest part's title names the whole session best (it saw the most of it)
        title=next((p.title for p in reversed(parts) if p.title), None),
    )
    return fit_words(merged, max_words)
