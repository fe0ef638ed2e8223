"""Issue 33, item 5: filing a long session's done-sentences (carry.Resolutions, read over every
turn by merge_summaries) skips text with no word of a done-phrase before building its haystack
and searching DONE; the sentences filed are the same as by the full look at every text."""

from __future__ import annotations

import re
from datetime import datetime, timezone

from hypothesis import given, settings
from hypothesis import strategies as st

from rollchat.compaction.carry import _DONE_WORDS, Resolutions, _says_done, may_say_done
from rollchat.domain import Turn, answer_blocks
from rollchat.text.named import DONE, content_words
from rollchat.text.phrases import haystack, prose_sentences

WHEN = datetime(2026, 12, 1, tzinfo=timezone.utc)


def _variants(alternative: str) -> list[str]:
    """The plain phrases one alternative of DONE spells ("cancell?ed": both spellings)."""
    found = re.search(r"(.)\?", alternative)
    if found is None:
        return [alternative]
    head, tail = alternative[:found.start()], alternative[found.end():]
    return [*_variants(head + found[1] + tail), *_variants(head + tail)]


def test_every_done_phrase_holds_a_word_the_cheap_look_finds() -> None:
    inner = re.fullmatch(r"\\b\(\?:(.*)\)\\b", DONE.pattern)
    assert inner is not None, "DONE's shape changed: update _DONE_WORDS and this test"
    phrases = [v for alt in inner[1].split("|") for v in _variants(alt)]
    assert len(phrases) > 20
    for phrase in phrases:
        assert DONE.search(phrase), phrase
        assert any(word in phrase for word in _DONE_WORDS), phrase
        assert may_say_done(f"So it is {phrase.upper()} now.")


FRAGMENTS = ["done", "Sorted", "out", "taken care", "of", "WRAPPED", "up", "no longer",
             "needed", "anymore", "works", "now", "is", "went", "live", "cancelled", "canceled",
             "completed", "fixed", "the parser", "we", "not", "still", "?", ".", "!", "_",
             "\n", "  ", "```", "~~~", "<!--", "-->", "`", "**", "- ", "1. ", "café", "ſ",
             "K", "SESSION_SUMMARY_START", "it", "shipped", "merged", "x"]
TEXT = st.lists(st.sampled_from(FRAGMENTS), max_size=30).map(" ".join) | st.lists(
    st.sampled_from(FRAGMENTS), max_size=30).map("".join)


@settings(max_examples=400, deadline=None)
@given(TEXT)
def test_text_the_cheap_look_skips_has_no_done_phrase(text: str) -> None:
    assert may_say_done(text) or not DONE.search(haystack(text))


def _filed_the_old_way(turns: list[Turn]) -> list[tuple[int, list[str]]]:
    """Every turn's done-sentences as Resolutions filed them before the cheap look."""
    out = []
    for index, turn in enumerate(turns):
        for text in (turn.user, turn.assistant):
            if not DONE.search(haystack(text)):
                continue
            out += [(index, content_words(s)) for s in prose_sentences(text) if _says_done(s)]
    return out


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(TEXT, TEXT), max_size=12))
def test_the_same_sentences_are_filed(pairs: list[tuple[str, str]]) -> None:
    turns = [Turn("query", n + 1, WHEN, user, answer_blocks(reply))
             for n, (user, reply) in enumerate(pairs)]
    done = Resolutions(turns)
    fresh = Resolutions(())
    for index, words in _filed_the_old_way(turns):
        fresh._file(index, words)
    assert done._turn == fresh._turn and done._filed == fresh._filed
