"""Planning the summary of a large saved session (``rollchat compact --refresh``, import,
resume) counts each turn's tokens once, for both the whole plan and the cheap path's plan
from the newest turn: tiktoken is the slow part, and a 200,000-turn session counted four
times over took minutes."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from rollchat.compaction.chunks import chunk_turns
from rollchat.compaction.policy import compute_budget
from rollchat.compaction.saved import plan_saved
from rollchat.compaction.summarizer import SUMMARY_PROMPT_OVERHEAD, Summarizer
from rollchat.config.settings import SummaryConfig
from rollchat.domain import Turn, answer_blocks
from rollchat.models.tokens import TokenCounter
from rollchat.providers.offline import OfflineProvider

WHEN = datetime(2026, 1, 5, 9, 0, tzinfo=timezone.utc)
FILLER = "lorem ipsum dolor sit amet " * 12


def _turns(count: int) -> list[Turn]:
    return [Turn("query", i + 1, WHEN, f"[{i}] step {i}: {FILLER}",
                 answer_blocks(f"Done [{i}]. {FILLER}")) for i in range(count)]


@pytest.mark.parametrize("count", [200, 400])
def test_the_plan_of_a_large_session_counts_each_turn_once(
        count: int, monkeypatch: pytest.MonkeyPatch) -> None:
    counter = TokenCounter("offline")
    summarizer = Summarizer(OfflineProvider(), model="offline", config=SummaryConfig(),
                            budget=compute_budget(8192, 512, 0.8, 0), counter=counter)
    turns = _turns(count)
    limit = (summarizer.budget.window - summarizer.budget.max_output_tokens
             - SUMMARY_PROMPT_OVERHEAD - summarizer.words * 2)
    expected = chunk_turns(turns, limit, counter)  # the plan, counted the plain way
    assert len(expected) > 5  # the cheap path
    texts: list[str] = []
    real = TokenCounter.count_text

    def counted(self: TokenCounter, text: str) -> int:
        texts.append(text)
        return real(self, text)

    monkeypatch.setattr(TokenCounter, "count_text", counted)
    plan = plan_saved(summarizer, turns)
    of_turns = [t for t in texts if FILLER in t]
    assert len(of_turns) == 2 * count  # a question and an answer a turn, each counted once
    # and a few counts that do not grow with the session (the summary request's own text,
    # measured to size the chunks for the window: compaction.summarizer._room)
    assert len(texts) - len(of_turns) <= 8
    assert plan.cheap and plan.needed == len(expected)
    newest = chunk_turns(turns[::-1], limit, counter)[0][::-1]
    assert list(plan.chunks[-1]) == newest  # the model gets the newest turns, as before


@pytest.mark.parametrize("count", [3, 6])
def test_a_huge_answer_is_encoded_once_for_the_plan(count: int,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """A turn over a request's size is sized, then cut for the plan, then cut again for the
    cheap path's plan: its answer was encoded by tiktoken three times (12 s of a 100 MB
    session of 40 such turns); now once, with the same plan."""
    counter = TokenCounter("offline")
    summarizer = Summarizer(OfflineProvider(), model="offline", config=SummaryConfig(),
                            budget=compute_budget(8192, 512, 0.8, 0), counter=counter)
    turns = [Turn("query", i + 1, WHEN, f"question {i}",
                  answer_blocks(f"Done [{i}]. " + FILLER * 300)) for i in range(count)]
    limit = (summarizer.budget.window - summarizer.budget.max_output_tokens
             - SUMMARY_PROMPT_OVERHEAD - summarizer.words * 2)
    expected = chunk_turns(turns, limit, TokenCounter("offline"))  # counted the plain way
    counter.count_text("warm up")  # the encoding loaded
    encoding = counter._encoding
    assert encoding is not None
    encoded: list[str] = []

    class Spy:
        def encode(self, text: str, **options: object) -> list[int]:
            if FILLER in text:
                encoded.append(text)
            return list(encoding.encode(text, **options))

    monkeypatch.setattr(counter, "_encoding", Spy())
    plan = plan_saved(summarizer, turns)
    big = [text for text in encoded if len(text) > 50_000]
    assert len(big) == count == len(set(big))  # each answer once, nothing else that large
    assert [list(c) for c in plan.chunks] == [list(c) for c in expected] or plan.cheap
    if plan.cheap:
        newest = chunk_turns(turns[::-1], limit, TokenCounter("offline"))[0][::-1]
        assert list(plan.chunks[-1]) == newest
    assert plan.needed == len(expected)
    assert counter._memo is None  # forgotten once planned: no text outlives its use
