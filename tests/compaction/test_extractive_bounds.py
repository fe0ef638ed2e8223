"""The local summary is bounded in characters as well as words, however long the session or
its "words" (issue 24: one block of 1,040,303 characters with max_words=50)."""

from __future__ import annotations

from datetime import datetime, timezone

from rollchat.compaction.carry import (
    CHARS_PER_WORD,
    HARD_FACTOR,
    LEFT_OUT_DECISIONS,
    chars_of,
    words_of,
)
from rollchat.compaction.extractive import extractive_summary
from rollchat.domain import Summary, Turn, answer_blocks
from rollchat.text.phrases import ITEM_CHARS

WHEN = datetime(2026, 11, 25, 12, 0, tzinfo=timezone.utc)


def _summary(turns: list[Turn], max_words: int, parent: Summary | None = None) -> Summary:
    return extractive_summary(turns, parent_summary=parent, focus=None, max_words=max_words,
                              fallback=True)


def _word(n: int) -> str:
    """A word of its own for each number (decisions that differ only in a number are
    near-duplicates)."""
    return "".join("abcdefghij"[int(d)] for d in str(n)) + "on"


def _items(summary: Summary) -> list[str]:
    return [*summary.topics, *summary.decisions, *summary.pending, *summary.artifacts]


def test_one_long_word_is_cut_and_the_summary_keeps_to_its_characters() -> None:
    blob = "aGVsbG8gd29ybGQ" * 70_000  # a base64 blob: one "word" of 1 MB
    ok = answer_blocks("ok")
    turns = [Turn("query", 1, WHEN, f"We decided to store {blob} in the cache.", ok),
             Turn("query", 2, WHEN, f"TODO: check {blob} and src/cache/store.py",
                  answer_blocks(blob)),
             Turn("query", 3, WHEN, blob, ok)]
    summary = _summary(turns, max_words=50)
    assert all(len(item) <= ITEM_CHARS + 3 for item in _items(summary))
    assert chars_of(summary) <= 50 * CHARS_PER_WORD
    assert any("src/cache/store.py" in item for item in _items(summary))
    assert any(item.startswith("We decided to store aGVsbG8") for item in summary.decisions)


def test_a_session_of_thousands_of_decisions_keeps_its_latest_within_the_bound() -> None:
    turns = [Turn("query", n + 1, WHEN, f"We decided to use {_word(n)} for {_word(n + 1)}.",
                  answer_blocks(f"Let's keep {_word(n + 2)} warm for {_word(n + 3)}."))
             for n in range(3000)]
    summary = _summary(turns, max_words=100)
    assert words_of(summary) <= HARD_FACTOR * 100
    assert chars_of(summary) <= HARD_FACTOR * 100 * CHARS_PER_WORD
    assert summary.decisions[0] == LEFT_OUT_DECISIONS
    assert f"We decided to use {_word(2999)} for {_word(3000)}." in summary.decisions
    # merged again (the next compaction): still bounded, one line saying some were left out
    again = _summary(turns[-5:], max_words=100, parent=summary)
    assert words_of(again) <= HARD_FACTOR * 100
    assert again.decisions.count(LEFT_OUT_DECISIONS) == 1
