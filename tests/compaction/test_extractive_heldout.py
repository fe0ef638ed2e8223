"""The local summary against the held-out set of real text (tests/compaction/data/
heldout_summary.json, written before the summarizer was tuned): at least 11 of its 12 items."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

from rollchat.compaction.extractive import extractive_summary
from rollchat.domain import Summary, Turn, answer_blocks

DATA = Path(__file__).parent / "data" / "heldout_summary.json"
WHEN = datetime(2026, 11, 25, 12, 0, tzinfo=timezone.utc)


def _section(summary: Summary, kind: str) -> str:
    """Where an item of ``kind`` must be: a decision among the decisions, a pending task among
    the pending items, a preference in either; a name, number or path anywhere."""
    if kind == "decision":
        return "\n".join(summary.decisions)
    if kind == "pending":
        return "\n".join(summary.pending)
    if kind == "preference":
        return "\n".join((*summary.decisions, *summary.pending))
    return "\n".join((summary.background, *summary.topics, *summary.decisions,
                      *summary.pending, *summary.artifacts))


def heldout_score() -> tuple[int, list[str]]:
    """How many held-out items the local summary keeps, and the ones it misses."""
    data = json.loads(DATA.read_text(encoding="utf-8"))
    turns = [Turn("query", n + 1, WHEN, t["user"], answer_blocks(t["assistant"]))
             for n, t in enumerate(data["turns"])]
    summary = extractive_summary(turns, parent_summary=None, focus=None, max_words=500,
                                 fallback=False)
    missed = [f"{i['class']}: {i['token']}" for i in data["items"]
              if i["token"].lower() not in _section(summary, i["class"]).lower()]
    return len(data["items"]) - len(missed), missed


def test_the_local_summary_keeps_11_of_the_12_held_out_items() -> None:
    kept, missed = heldout_score()
    assert kept >= 11, missed
