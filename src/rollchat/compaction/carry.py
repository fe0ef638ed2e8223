"""What a summary must not lose: open tasks carried until a later turn resolves them, and
summaries merged or fitted to a word budget without dropping a decision or a pending item
(topics go first, then artifacts, and the block records how many went)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import replace

from rollchat.domain import Summary, Turn
from rollchat.text.named import DONE, NOT_DONE, content_words, has_named
from rollchat.text.phrases import (
    item_key,
    near_duplicates,
    prose_sentences,
    same_word,
)

LAST_REQUEST = "last request:"
_NONE = frozenset(("none", "none.", "n/a", "-", ""))
_LABELS = re.compile(r"^(?:last request|unanswered|answer cut off \(\w+\))\s*:\s*", re.I)


def _shares(keys: Sequence[str], words: Iterable[str]) -> int:
    found = list(words)
    return sum(1 for key in keys if any(same_word(key, word) for word in found))


def resolves(sentence: str, item: str) -> bool:
    """Whether ``sentence`` says ``item`` is done: a done-phrase, no negation, not a
    question, and at least half of the item's key words (two at least, when it has two)."""
    if sentence.rstrip().endswith("?") or not DONE.search(sentence) or NOT_DONE.search(sentence):
        return False
    keys = content_words(_LABELS.sub("", item))
    if not keys:
        return False
    shared = _shares(keys, content_words(sentence))
    return shared >= min(2, len(keys)) and shared * 2 >= len(keys)


def resolved(item: str, turns: Sequence[Turn]) -> bool:
    """Whether a turn of ``turns`` says ``item`` is done (see ``resolves``)."""
    return any(resolves(sentence, item) for turn in turns
               for text in (turn.user, turn.assistant)
               for sentence in prose_sentences(text))


def carried(parent: Sequence[str], own: Sequence[str], turns: Sequence[Turn]) -> list[str]:
    """``own`` items, then the parent's not resolved in ``turns`` and not already in ``own``
    (near-duplicates count as the same item), except its "Last request" item."""
    keys = [item_key(item) for item in own]
    out = list(own)
    for item in parent:
        if item.lower().startswith(LAST_REQUEST) or item.strip().lower() in _NONE:
            continue  # the parent's last message: answered by the session that followed
        key = item_key(item)
        if key and not any(near_duplicates(key, k) for k in keys) and not resolved(item, turns):
            keys.append(key)
            out.append(item)
    return out


def union(groups: Iterable[Sequence[str]]) -> list[str]:
    """Items of ``groups`` in order, exact and near-duplicates merged (the longer kept)."""
    out: list[str] = []
    keys: list[frozenset[str]] = []
    for group in groups:
        for item in group:
            key = item_key(item)
            if not item.strip():
                continue
            match = next((i for i, k in enumerate(keys) if key and near_duplicates(key, k)),
                         None)
            if match is None:
                keys.append(key)
                out.append(item)
            elif len(item) > len(out[match]):
                out[match], keys[match] = item, key
    return out


def words_of(summary: Summary) -> int:
    """Words of a summary's background and bullets (a dash counts as one)."""
    items = (*summary.topics, *summary.decisions, *summary.pending, *summary.artifacts)
    return len(summary.background.split()) + sum(len(i.split()) + 1 for i in items)


def fit_words(summary: Summary, max_words: int) -> Summary:
    """``summary`` within ``max_words`` if it can be without losing a decision or a pending
    item: near-duplicates merged, then the last topics dropped (the lists hold the most
    recent first; topics naming nothing go first), then the last artifacts, and the first
    topic (the focus, or the latest) last; the counts are recorded in the summary."""
    summary = replace(summary, topics=tuple(union([summary.topics])),
                      decisions=tuple(union([summary.decisions])),
                      pending=tuple(union([summary.pending])),
                      artifacts=tuple(union([summary.artifacts])))
    topics, artifacts = list(summary.topics), list(summary.artifacts)
    over = words_of(summary) - max_words
    dropped_topics = dropped_artifacts = 0
    plain = [i for i, topic in enumerate(topics) if i and not has_named(topic)]
    while over > 0 and (topics or artifacts):  # plain topics, named ones, artifacts, the first
        if plain or len(topics) > 1 or not artifacts:
            removed = topics.pop(plain.pop()) if plain else topics.pop()
            dropped_topics += 1
        else:
            removed = artifacts.pop()
            dropped_artifacts += 1
        over -= len(removed.split()) + 1
    return replace(summary, topics=tuple(topics), artifacts=tuple(artifacts),
                   dropped_topics=summary.dropped_topics + dropped_topics,
                   dropped_artifacts=summary.dropped_artifacts + dropped_artifacts)


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
        dropped_topics=sum(p.dropped_topics for p in parts),
        dropped_artifacts=sum(p.dropped_artifacts for p in parts),
        # the latest part's title names the whole session best (it saw the most of it)
        title=next((p.title for p in reversed(parts) if p.title), None),
    )
    return fit_words(merged, max_words)
