"""The restoration prompt and its request."""

from __future__ import annotations

from datetime import datetime, timezone

from rollchat.compaction.restore import build_restoration_prompt
from rollchat.domain import Summary
from rollchat.storage.transcript import SUMMARY_END, SUMMARY_START
from rollchat.text.wording import human_tokens

SUMMARY = Summary("Initial session.", ("Auth refactoring",), ("Use JWT",), ())
WHEN = datetime(2026, 11, 21, 10, 15, tzinfo=timezone.utc)


def prompt(**kwargs: object) -> str:
    options: dict[str, object] = dict(session_id="assistant_20261121_101500_c01d", date=WHEN,
                                      queries=5, tokens=2345, parent_of_parent=None,
                                      file_name="assistant_20261121_101500_c01d.md",
                                      summary=SUMMARY)
    options.update(kwargs)
    return build_restoration_prompt(**options)  # type: ignore[arg-type]


def test_prompt_has_the_seed_shape() -> None:
    text = prompt()
    assert text.startswith("CONTEXT RESTORATION: You are continuing a previous conversation "
                           "from 2026-11-21 10:15.")
    assert ("Previous session summary (Session ID: assistant_20261121_101500_c01d, 5 queries, "
            "2,345 tokens):") in text  # exact, as every other figure (issue 35)
    assert "Previous session file: assistant_20261121_101500_c01d.md" in text
    assert text.index(SUMMARY_START) < text.index("- Auth refactoring") < text.index(SUMMARY_END)
    assert "2-6 sentences" in text and "ready to continue" in text
    assert "resumed from" not in text and "session_archive_read" not in text


def test_parent_and_archive_tool_lines() -> None:
    text = prompt(parent_of_parent="assistant_20261120_090000_aaaa", archive_tool=True,
                  queries=1)
    assert "This session was resumed from: assistant_20261120_090000_aaaa" in text
    assert "1 query," in text
    assert text.count("session_archive_read") == 1


def test_human_tokens() -> None:
    assert human_tokens(950) == "950"
    assert human_tokens(2300) == "2.3K"
    assert human_tokens(1_250_000) == "1.2M"
