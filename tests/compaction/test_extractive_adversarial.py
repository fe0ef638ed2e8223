"""The local summary of a session of near-identical phrases (issue 33, item 5): the duplicate
checks are bounded (they were near-quadratic), and what a summary keeps is still found: a named
topic behind thousands of plain ones, a decision said again in other words."""

from __future__ import annotations

import random
import threading
from datetime import datetime, timezone

import pytest

from rollchat.compaction import extractive
from rollchat.domain import Turn, answer_blocks
from rollchat.text import phrases

WHEN = datetime(2026, 12, 1, 12, 0, tzinfo=timezone.utc)
VOCABULARY = ("parser", "exporter", "session", "formatter", "cache", "index", "header", "tool",
              "reader", "writer", "picker", "render", "loader", "config", "schema", "queue",
              "table", "column", "field", "record")


def _session(count: int) -> list[Turn]:
    """``count`` turns of prompts drawn from 20 words; the oldest names a port, the newest
    restates a decision of the one before."""
    rng = random.Random(count)
    turns = [Turn("query", 1, WHEN, "Move the metrics server to port 9464 on Priya's box.",
                  answer_blocks("Moved it."))]
    for i in range(1, count):
        words = rng.sample(VOCABULARY, 7)
        user = f"please make the {' '.join(words[:4])} work with the {' '.join(words[4:])} again."
        reply = f"The {' '.join(rng.sample(VOCABULARY, 6))} work now."
        turns.append(Turn("query", i + 1, WHEN, user, answer_blocks(reply)))
    turns.append(Turn("query", count + 1, WHEN, "We decided to go with sqlite for the index.",
                      answer_blocks("We decided to go with sqlite for the index, then.")))
    return turns


def test_many_similar_phrases_are_compared_in_bounded_work(
        monkeypatch: pytest.MonkeyPatch) -> None:
    calls = 0
    compare = phrases.near_duplicates

    def counted(a: frozenset[str], b: frozenset[str]) -> bool:
        nonlocal calls
        calls += 1
        return compare(a, b)

    monkeypatch.setattr(phrases, "near_duplicates", counted)
    monkeypatch.setattr("rollchat.compaction.carry.near_duplicates", counted)
    made, summaries = [], []
    for count in (1000, 2000):
        calls = 0
        summaries.append((count, extractive.extractive_summary(
            _session(count), parent_summary=None, focus=None, max_words=500, fallback=True)))
        made.append(calls)
    # before: 135,000 then 544,000 comparisons (x4 for twice the turns)
    assert made[1] < 1.2 * made[0] and made[1] < 150_000, made
    for count, summary in summaries:
        assert any("9464" in t for t in summary.topics)  # the named topic, far back
        assert sum("sqlite" in d for d in summary.decisions) == 1  # said twice, kept once
        assert summary.dropped_topics > count // 2  # the plain topics left out are counted


def test_a_session_of_plain_prompts_is_read_only_so_far_back(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Named topics and artifacts are looked for READ_TURNS turns back at most once the plain
    topics fill their room: a 500,000-turn import read every turn for them."""
    monkeypatch.setattr(extractive, "READ_TURNS", 400)
    split = []
    real = extractive.prose_sentences
    this = threading.get_ident()

    def counted(text: str, *, reply: bool = False) -> list[str]:
        if threading.get_ident() == this:  # (not a summary another test left running)
            split.append(text)
        return real(text, reply=reply)

    monkeypatch.setattr(extractive, "prose_sentences", counted)
    made = []
    for count in (1000, 2000):
        split.clear()
        summary = extractive.extractive_summary(_session(count), parent_summary=None,
                                                focus=None, max_words=500, fallback=True)
        made.append(len(split))
        assert summary.dropped_topics >= count - 400
    assert 400 <= made[0] == made[1] < 600, made  # main: 1,000 then 2,000 turns split
