"""Summaries made in the background from ~70% of the budget on: compaction at the threshold
only summarizes the few turns after them, locally, so there is no model call to wait for."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from rollchat.compaction import policy as policy_module
from rollchat.compaction.request import parse_summary_request
from rollchat.storage.transcript import parse
from tests.compaction.test_autocompact import FakeProvider, build_app, user_message


def _purposes_until_compaction(tmp_path: Path) -> tuple[FakeProvider, list[str], int]:
    provider = FakeProvider()
    built = build_app(tmp_path, provider)
    for i in range(100):
        built.send(user_message(i))
        if built.compactions:
            break
    assert built.compactions, "no compaction in 100 turns"
    purposes = [r.purpose for r in provider.requests]
    first_restore = purposes.index("restore")
    last_chat = max(i for i, p in enumerate(purposes[:first_restore]) if p == "chat")
    return provider, purposes, last_chat


def test_background_summaries_leave_no_summary_call_at_the_threshold(tmp_path: Path) -> None:
    provider, purposes, last_chat = _purposes_until_compaction(tmp_path)
    first_restore = purposes.index("restore")
    background = [i for i, p in enumerate(purposes[:first_restore]) if p == "summary"]
    assert background and min(background) < last_chat  # started while the chat went on...
    # ...and none made by the compaction (a background one may still reach the model after the
    # last chat request on a loaded machine: the compaction then waits for it, sends none)
    assert {provider.threads[i] for i in background} == {"rollchat-presummary"}
    runs = [parse_summary_request(provider.requests[i]) for i in background]
    firsts = [run.turns[0].user for run in runs]
    assert len(set(firsts)) == len(runs)  # consecutive runs of turns, each summarized once
    for earlier, later in itertools.pairwise(runs):
        assert later.parent_summary is not None  # folded into the previous one
        assert earlier.turns[-1].number < later.turns[0].number
    files = [parse(p.read_text()) for p in (tmp_path / "sessions").glob("*.md")]
    [parent] = [t for t in files if t.header.resumed_from is None]
    assert parent.summary is not None and not parent.summary.fallback
    assert "compacted" in " ".join(parent.summary.topics)  # the model's summaries are kept
    covered = sum(len(run.turns) for run in runs)
    assert covered < len([t for t in parent.turns if t.kind == "query"])


def test_without_them_compaction_waits_for_summary_calls(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(policy_module, "PRESUMMARY_SHARE", 10.0)  # never starts
    _, purposes, last_chat = _purposes_until_compaction(tmp_path)
    first_restore = purposes.index("restore")
    assert "summary" not in purposes[:last_chat]
    assert purposes[last_chat + 1:first_restore].count("summary") >= 1
