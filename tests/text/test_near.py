"""The near-duplicate index finds what comparing every pair finds (text.near)."""

from __future__ import annotations

import random

import pytest

from rollchat.text.near import LOOK_AT, NearIndex
from rollchat.text.phrases import near_duplicates, same_word, word_forms


def _scan(keys: list[frozenset[str]], key: frozenset[str]) -> int | None:
    """The old lookup: the first of ``keys`` that is a near-duplicate of ``key``."""
    return next((i for i, k in enumerate(keys) if key and near_duplicates(key, k)), None)


@pytest.mark.parametrize("seed", range(30))
def test_the_index_finds_the_slot_a_scan_finds(seed: int) -> None:
    rng = random.Random(seed)
    vocabulary = [f"w{n}" for n in range(rng.choice((4, 8, 20, 60)))]
    batch = [frozenset(rng.sample(vocabulary, rng.randint(0, min(9, len(vocabulary)))))
             for _ in range(300)]
    index, kept = NearIndex(near_duplicates, batch), []
    for key in batch:
        expected = _scan(kept, key)
        assert index.find(key) == expected
        if expected is None:
            kept.append(key)
            index.add(key)
        elif rng.random() < 0.5:  # union keeps the longer item: the slot's key changes
            kept[expected] = key
            index.replace(expected, key)


def test_template_items_that_differ_in_one_word_are_kept_apart_without_comparing_them() -> None:
    calls = 0

    def counted(a: frozenset[str], b: frozenset[str]) -> bool:
        nonlocal calls
        calls += 1
        return near_duplicates(a, b)

    batch = [frozenset(("we", "should", "use", f"x_{n}", "for", "it")) for n in range(2000)]
    index = NearIndex(counted, batch)
    for key in batch:
        assert index.find(key) is None
        index.add(key)
    assert calls == 0  # the pairwise check made 1,999,000 comparisons here


def test_a_key_not_given_up_front_is_refused() -> None:
    index = NearIndex(near_duplicates, [frozenset(("a", "b"))])
    with pytest.raises(ValueError, match="up front"):
        index.find(frozenset(("a", "c")))


def test_word_forms_meet_exactly_when_same_word_says_so() -> None:
    words = ["lexer", "lexing", "lex", "tokens", "tokenizer", "users", "user", "use", "used",
             "migration", "migrate", "billing", "bill", "go", "goes", "station", "stations",
             "parse", "parser", "parsing", "art", "arts", "ation", "abcdefgh", "abcdexyz"]
    for a in words:
        for b in words:
            assert same_word(a, b) == bool(word_forms(a) & word_forms(b)), (a, b)


def test_keys_of_common_words_are_looked_up_in_bounded_work_and_duplicates_still_found() -> None:
    """Phrases drawn from a small vocabulary: every word common, no rare word to file under.
    Each lookup compares at most LOOK_AT candidates, and a near-duplicate (a key again, or
    one with a word left out) is still found."""
    calls = 0

    def counted(a: frozenset[str], b: frozenset[str]) -> bool:
        nonlocal calls
        calls += 1
        return near_duplicates(a, b)

    rng = random.Random(7)
    vocabulary = [f"w{n}" for n in range(20)]
    fresh = [frozenset(rng.sample(vocabulary, 8)) for _ in range(3000)]
    again = [fresh[i] - {min(fresh[i])} for i in range(0, 3000, 10)]  # subsets: duplicates
    index = NearIndex(counted, [*fresh, *again])
    kept = {key for key in fresh if index.find(key) is None and index.add(key) >= 0}
    assert len(kept) > 1000
    assert calls <= LOOK_AT * len(fresh)  # the pairwise check: about 2,000,000 here
    missed = [key for i, key in zip(range(0, 3000, 10), again, strict=True)
              if fresh[i] in kept and index.find(key) is None]
    assert len(missed) <= 1  # each found with odds of 99.8% at worst (text/near.py)


def test_near_duplicates_is_its_definition() -> None:
    """The quick form (sizes taken once, integer arithmetic, pairs of too unequal sizes for
    an overlap ruled out before intersecting) says what the definition says."""
    def definition(a: frozenset[str], b: frozenset[str]) -> bool:
        if not a or not b:
            return a == b
        small, large = (a, b) if len(a) <= len(b) else (b, a)
        if len(small) >= 2 and small <= large:
            return True
        shared = len(a & b)
        return shared >= 0.75 * (len(a) + len(b) - shared)

    rng = random.Random(5)
    found = 0
    for _ in range(20_000):
        vocabulary = [f"w{n}" for n in range(rng.choice((2, 4, 8, 16, 40)))]
        a, b = (frozenset(rng.sample(vocabulary, rng.randint(0, len(vocabulary))))
                for _ in range(2))
        assert near_duplicates(a, b) == definition(a, b), (a, b)
        found += definition(a, b)
    assert 2_000 < found < 18_000  # both answers met often
