"""The local summary's open tasks and names on the real phrasings they were built from
(tests/text/data/phrasings.json, each with its source)."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from rollchat.compaction.extractive import extractive_summary
from rollchat.domain import Turn, answer_blocks
from rollchat.text import named

DATA = json.loads((Path(__file__).parent / "data" / "phrasings.json").read_text("utf-8"))
WHEN = datetime(2026, 11, 25, 12, 0, tzinfo=timezone.utc)


def _pending_after(user: str, reply: str = "ok") -> tuple[str, ...]:
    """The pending items of a summary of a turn saying ``user`` and a later, unrelated one."""
    turns = [Turn("query", 1, WHEN, user, answer_blocks(reply)),
             Turn("query", 2, WHEN, "Thanks, what's a good name for the retry helper?",
                  answer_blocks("Call it retry_with_jitter."))]
    return extractive_summary(turns, parent_summary=None, focus=None, max_words=500,
                              fallback=True).pending


@pytest.mark.parametrize("case", DATA["pending"], ids=lambda c: c["text"][:40])
def test_a_request_or_reminder_is_pending(case: dict[str, Any]) -> None:
    pending = _pending_after(case["text"])
    assert any(case["token"].lower() in item.lower() for item in pending), pending


def test_recall_questions_and_the_assistants_own_next_steps_are_not_pending() -> None:
    question, reply = DATA["not_pending"]
    assert not any("decided" in item for item in _pending_after(question["text"]))
    assert not any("blockquotes" in item
                   for item in _pending_after("Skip empty stdout.", reply["text"]))


@pytest.mark.parametrize("case", DATA["names"], ids=lambda c: c["name"])
def test_a_name_at_the_start_of_a_sentence_is_a_name(case: dict[str, Any]) -> None:
    # a CamelCase name is an identifier (an artifact) rather than a name: kept all the same
    assert case["name"] in [*named.names(case["text"]), *named.artifacts(case["text"])]


@pytest.mark.parametrize("case", DATA["not_names"], ids=lambda c: c["text"][:20])
def test_a_plain_word_at_the_start_of_a_sentence_is_not(case: dict[str, Any]) -> None:
    assert case["text"].split()[0] not in named.names(case["text"])


@pytest.mark.parametrize("case", DATA["preferences"], ids=lambda c: c["text"][:30])
def test_preferences(case: dict[str, Any]) -> None:
    assert named.PREFERENCE.search(case["text"])


def test_an_adverb_between_the_person_and_the_verb() -> None:
    assert named.PREFERENCE.search("I don't really want to move classes ahead of the parser")
    assert named.PREFERENCE.search("I'd actually rather keep it in Go")
