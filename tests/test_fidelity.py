"""Compaction you can check: open tasks carried along a chain, nothing dropped when partial
summaries merge, the audit of a summary (the chat's line after compact, `rollchat audit`)."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

from rollchat.audit import audit, find_items
from rollchat.compaction.carry import merge_summaries, resolves
from rollchat.domain import Summary, ToolCall, ToolExchange, Turn
from rollchat.events import Notice
from tests.e2e import run_piped
from tests.test_session import make, run

WHEN = datetime(2026, 11, 23, 10, 0, tzinfo=timezone.utc)


def turn(n: int, user: str, assistant: str = "ok", tools: tuple[ToolExchange, ...] = ()) -> Turn:
    return Turn("query", n, WHEN, user, assistant, tools=tools)


def test_an_open_task_survives_five_compactions_until_it_is_done() -> None:
    session, _store, provider = make()
    run(session.turn("We still need to migrate the billing database to postgres 16."))
    chats = ["Lets talk about the logo colours, I like teal.",
             "Maria from design sent three mockups yesterday.",
             "How long should the onboarding email be?",
             "The staging box has 64 GB of memory now.",
             "Can you review the wording of the pricing page?"]
    for text in chats:
        run(session.compact())
        pending = session.state.parent_summary.pending  # type: ignore[union-attr]
        assert any("postgres 16" in item for item in pending), pending
        run(session.turn(text))
    # the summary request carried it as a list, verbatim
    from rollchat.compaction.request import parse_summary_request

    sent = parse_summary_request(provider.of("summary")[-1]).parent_summary
    assert sent is not None
    assert "We still need to migrate the billing database to postgres 16." in sent.pending
    run(session.turn("Good news: the billing database migration to postgres 16 is done."))
    run(session.compact())
    assert not any("postgres" in p for p in session.state.parent_summary.pending)  # type: ignore[union-attr]


def test_merging_parts_drops_no_decision_or_pending_item() -> None:
    tens = [range(10 * k, 10 * k + 10) for k in range(4)]
    parts = [Summary("Initial session.", tuple(f"topic {i} about things" for i in tens[k]),
                     tuple(f"Use engine {i} for shard {i}" for i in tens[k]),
                     (f"Benchmark shard {k} under load",), artifacts=(f"shards/{k}.toml",))
             for k in range(4)]
    merged = merge_summaries(parts, max_words=150)
    assert len(merged.decisions) == 40  # the old merge kept the last 12
    assert {f"Benchmark shard {k} under load" for k in range(4)} <= set(merged.pending)
    assert merged.dropped_topics > 0 and len(merged.topics) + merged.dropped_topics == 40
    resolved_later = merge_summaries(parts[:2], 500, [turn(1, "Benchmarking shard 0 under "
                                                              "load is finished.")])
    assert "Benchmark shard 0 under load" not in resolved_later.pending


def test_resolution_needs_a_done_phrase_and_the_task_words() -> None:
    task = "Migrate the billing database to postgres 16"
    assert resolves("We migrated the billing database to Postgres 16 last night.", task)
    assert not resolves("Is the billing database migration done?", task)
    assert not resolves("The billing migration is not done yet.", task)
    assert not resolves("The logo is done.", task)


def test_offline_summary_keeps_natural_decisions_preferences_and_artifacts() -> None:
    turns = [turn(1, "After a long back and forth we picked Postgres over MySQL for the ledger."),
             turn(2, "Alright, let's go with weekly releases then."),
             turn(3, "I'd rather keep the public API in Go."),
             turn(4, "Lets talk about the logo colours, I like teal."),
             turn(5, "The worker reads config/queue.yaml and listens on port 8443.",
                  tools=(ToolExchange(ToolCall("c1", "read_file", {"path": "src/worker/main.py"}),
                                      "ok"),))]
    from rollchat.compaction.extractive import extractive_summary

    summary = extractive_summary(turns, parent_summary=None, focus=None, max_words=300,
                                 fallback=False)
    text = "\n".join(summary.decisions)
    assert "Postgres" in text and "weekly releases" in text and "API in Go" in text
    assert "teal" in text
    assert "The logo colours" in summary.topics
    assert {"config/queue.yaml", "src/worker/main.py"} <= set(summary.artifacts)
    result = audit(turns, summary)
    assert not result.lost, result.lost


def test_audit_finds_lost_items_by_kind() -> None:
    turns = [turn(1, "We decided to run the cache on Redis with a 30 second TTL."),
             turn(2, "Next step: we need to write the load test in bench/load.py.")]
    kinds = {(i.kind, i.text) for i in find_items(turns)}
    assert ("number", "30 second") in kinds and ("path", "bench/load.py") in kinds
    assert ("name", "Redis") in kinds
    topics_only = Summary("Initial session.", ("Redis cache with a 30 second TTL",
                                               "load test in bench/load.py"), (), ())
    result = audit(turns, topics_only)
    lost = {i.kind for i in result.lost}
    assert lost == {"decision", "pending"} and result.failed  # a topic mention is not enough


def test_compact_tells_how_many_named_items_the_summary_keeps() -> None:
    session, _store, _provider = make()
    run(session.turn("We decided the API listens on port 8443."))
    events = run(session.compact())
    lines = [e.text for e in events if isinstance(e, Notice) and "named items" in e.text]
    assert lines and lines[0].startswith("The summary keeps ")


def test_audit_command(tmp_path: Path) -> None:
    chat = ("We picked Kafka for the event bus, with 12 partitions.\n"
            "We still need to write the retry policy in src/bus/retry.py.\n"
            "compact\nexit\n")
    done = run_piped(tmp_path, chat)
    assert done.returncode == 0, done.stderr
    assert "The summary keeps " in done.stdout
    listed = run_piped(tmp_path, "", "audit", "1", "--json")
    assert listed.returncode == 0, listed.stderr
    data = json.loads(listed.stdout)
    kept = {(i["kind"], i["text"]) for i in data["kept"]}
    assert ("path", "src/bus/retry.py") in kept and ("name", "Kafka") in kept
    assert any(kind == "pending" for kind, _ in kept) and data["lost"] == []
    text = run_piped(tmp_path, "", "audit", "1")
    assert text.returncode == 0 and "Kept (" in text.stdout
    missing = run_piped(tmp_path, "", "audit", "nope")
    assert missing.returncode == 2 and missing.stderr.count("\n") == 1
