"""Every unresolved request stays pending through three compactions of a chat with the offline
model (the local summary, rollchat's own compaction path), and a resolved one goes."""

from __future__ import annotations

import json
from pathlib import Path

from tests.session.test_session import make, run

PHRASINGS = Path(__file__).parents[1] / "text" / "data" / "phrasings.json"
CHAT = ["What's a good name for a helper that retries with jitter?",
        "Explain the difference between a mutex and a semaphore.",
        "How should I structure commit messages for a monorepo?",
        "Give me three ideas for the team offsite agenda."]


def test_every_unresolved_request_is_still_pending_after_three_compactions() -> None:
    cases = json.loads(PHRASINGS.read_text("utf-8"))["pending"]
    session, _store, _provider = make()
    for case in cases:
        run(session.turn(case["text"]))
        run(session.turn(CHAT[len(case["text"]) % len(CHAT)]))
    for round_ in range(3):
        for text in CHAT[round_:round_ + 2]:
            run(session.turn(text))
        run(session.compact())
    summary = session.state.parent_summary
    assert summary is not None
    pending = "\n".join(summary.pending).lower()
    missing = [c["token"] for c in cases if c["token"].lower() not in pending]
    assert not missing, summary.pending


def test_a_reminder_goes_once_a_turn_says_it_is_done() -> None:
    session, _store, _provider = make()
    run(session.turn("remind me to email the auditors about the soc2 report"))
    run(session.turn(CHAT[0]))
    run(session.compact())
    assert any("soc2" in p for p in session.state.parent_summary.pending)  # type: ignore[union-attr]
    run(session.turn("I emailed the auditors the soc2 report this morning, that's done."))
    run(session.compact())
    assert not any("soc2" in p for p in session.state.parent_summary.pending)  # type: ignore[union-attr]
