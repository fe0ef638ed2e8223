"""The local summary at scale: the indexed duplicate checks and resolutions give what the old
pairwise ones gave, on a long session of real prompts (bench/summary_data.py)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import pytest
from bench.summary_data import long_session

from rollchat.compaction.carry import (
    Resolutions,
    _says_done,
    carried,
    resolves,
    union,
)
from rollchat.domain import Turn
from rollchat.text.phrases import TODO, item_key, near_duplicates, prose_sentences, tidy, unique


def _old_unique(items: Iterable[str], seen: Iterable[str] = ()) -> list[str]:
    keys = [item_key(item) for item in seen]
    out: list[str] = []
    for item in items:
        key = item_key(item)
        if item and key and not any(near_duplicates(key, other) for other in keys):
            keys.append(key)
            out.append(item)
    return out


def _old_union(groups: Iterable[Sequence[str]]) -> list[str]:
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


def _said(turns: Sequence[Turn]) -> list[list[str]]:
    """Each turn's sentences that can resolve an item, as the old check split them, once here
    (it split every later turn again for each item, the costly part of the reference and not
    what is compared). ``resolves`` is false for a sentence ``_says_done`` rejects (its first
    test), so leaving those out changes no answer of the old check; it still runs on the rest."""
    return [[sentence for text in (turn.user, turn.assistant)
             for sentence in prose_sentences(text) if _says_done(sentence)] for turn in turns]


def _old_resolved(item: str, said: Sequence[Sequence[str]]) -> bool:
    """The old check: whether any sentence of any later turn (``said``: theirs) resolves it."""
    return any(resolves(sentence, item) for sentences in said for sentence in sentences)


# One worker runs the module (--dist loadgroup): its module fixtures (a 600-turn session
# and what it said) are built once, not on every worker.
pytestmark = pytest.mark.xdist_group("extractive-scale")


@pytest.fixture(scope="module")
def turns() -> list[Turn]:
    return long_session(600, seed=3)


@pytest.fixture(scope="module")
def said(turns: list[Turn]) -> list[list[str]]:
    return _said(turns)


@pytest.fixture(scope="module")
def sentences(turns: list[Turn]) -> list[str]:
    return [tidy(s) for t in turns for text in (t.user, t.assistant)
            for s in prose_sentences(text)]


def test_unique_and_union_agree_with_the_pairwise_check(sentences: list[str]) -> None:
    assert len(sentences) > 2500
    some = sentences[:1200]  # the pairwise check is quadratic: a third of the session is
    half = len(some) // 2    # enough to compare on, and stays quick on a loaded machine
    assert unique(some) == _old_unique(some)
    assert unique(some[half:], seen=some[:half]) == _old_unique(some[half:], seen=some[:half])
    groups = [some[half:], some[:half], [s.upper() for s in some[::7]]]
    assert union(groups) == _old_union(groups)


def test_resolutions_agree_with_reading_every_later_turn(turns: list[Turn],
                                                         said: list[list[str]]) -> None:
    done = Resolutions(turns)
    checked = resolved = 0
    for index, turn in enumerate(turns[:300]):
        for sentence in prose_sentences(turn.user):
            if TODO.search(sentence):
                expected = _old_resolved(sentence, said[index + 1:])
                assert done.resolved(sentence, after=index) == expected, sentence
                checked += 1
                resolved += expected
    assert checked >= 60 and 10 <= resolved < checked


def test_carried_items_agree(turns: list[Turn], said: list[list[str]],
                             sentences: list[str]) -> None:
    parent = [s for s in sentences if TODO.search(s)][:200]
    own = sentences[-300:]

    def old(parent: Sequence[str], own: Sequence[str], said: Sequence[Sequence[str]]
            ) -> list[str]:
        keys = [item_key(item) for item in own]
        out = list(own)
        for item in parent:
            key = item_key(item)
            if key and not any(near_duplicates(key, k) for k in keys) \
                    and not _old_resolved(item, said):
                keys.append(key)
                out.append(item)
        return out

    assert carried(parent, own, turns[300:]) == old(parent, own, said[300:])


def test_a_long_sessions_summary_reads_its_latest_turns_not_all(monkeypatch: pytest.MonkeyPatch,
                                                                ) -> None:
    """Sentences are split (the costly part) for about as many turns in 20,000 as in 4,000:
    older topics, artifacts and decisions would not fit the summary (the old summary split
    every turn's texts eight times, and compared every pair of items)."""
    from rollchat.compaction import carry, extractive

    def counting(count: list[int]):  # type: ignore[no-untyped-def]
        def split(text: str, *, reply: bool = False) -> list[str]:
            count[0] += 1
            return prose_sentences(text, reply=reply)
        return split

    splits = []
    for size in (4000, 20000):
        count = [0]
        monkeypatch.setattr(extractive, "prose_sentences", counting(count))
        monkeypatch.setattr(carry, "prose_sentences", counting(count))
        turns = long_session(size)
        summary = extractive.extractive_summary(turns, parent_summary=None, focus=None,
                                                max_words=500, fallback=True)
        assert summary.decisions and summary.pending
        splits.append(count[0])
    assert splits[1] < 1.2 * splits[0] and splits[1] < 4000, splits


def test_screening_a_whole_text_misses_no_sentence_that_matches() -> None:
    """``haystack`` is searched before a text is split: whatever a sentence of the text
    matches, the haystack matches (real prompts and replies, with markup around them)."""
    from bench.summary_data import corpus

    from rollchat.compaction.extractive import _DECIDING
    from rollchat.text.named import DONE, PREFERENCE
    from rollchat.text.phrases import USER_TODO, haystack

    prompts, replies = corpus()
    texts = [*prompts, *replies]
    texts += [f"_{t}_\n```\ncode\n```\n<!-- note -->  **{t}**" for t in texts[:200]]
    checked = 0
    for text in texts:
        for reply in (False, True):
            for pattern in (TODO, USER_TODO, _DECIDING, PREFERENCE, DONE):
                if any(pattern.search(s) for s in prose_sentences(text, reply=reply)):
                    checked += 1
                    assert pattern.search(haystack(text)), (pattern.pattern[:40], text)
    assert checked > 300
