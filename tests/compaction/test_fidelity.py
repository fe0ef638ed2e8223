"""Compaction you can check: open tasks carried along a chain, nothing dropped when partial
summaries merge, the audit of a summary (the chat's line after compact, `rollchat audit`)."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

from rollchat.compaction.audit import audit, audit_line, find_items
from rollchat.compaction.carry import merge_summaries, resolves
from rollchat.domain import Summary, ToolCall, ToolExchange, Turn, answer_blocks
from rollchat.events import Notice
from tests.e2e import run_piped
from tests.session.test_session import make, run

WHEN = datetime(2026, 11, 23, 10, 0, tzinfo=timezone.utc)


def turn(n: int, user: str, assistant: str = "ok", tools: tuple[ToolExchange, ...] = ()) -> Turn:
    return Turn("query", n, WHEN, user, answer_blocks(assistant, tools))


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
    from rollchat.compaction.prefixed import read_summary_request

    sent = read_summary_request(provider.of("summary")[-1]).parent_summary
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


def test_audit_line_says_what_was_left_out() -> None:
    turns = [turn(1, "We decided to keep the queue on port 5672.")]
    summary = Summary("Initial session.", (), ("We decided to keep the queue on port 5672.",),
                      (), dropped_topics=3)
    line = audit_line(audit(turns, summary))
    assert line.startswith("The summary keeps 2 of 2 named items (3 topics and 0 artifacts left")
    lost = audit_line(audit(turns, Summary("Initial session.", (), (), ())))
    assert "lost: decision We decided to keep the queue on port" in lost


def test_tool_calls_reach_the_summary_request_and_its_artifacts() -> None:
    from rollchat.compaction.call import summarize
    from rollchat.compaction.request import build_summary_request
    from rollchat.providers.offline import OfflineProvider

    call = ToolCall("c1", "read_file", {"path": "services/api/handlers.py", "lines": 40})
    turns = [turn(1, "Look at the handler and tell me what it returns.", "It returns JSON.",
                  tools=(ToolExchange(call, "def handle(): return jsonify(rows) " * 50),))]
    request = build_summary_request(turns, parent_summary=None, focus=None, model="offline",
                                    max_words=200, max_output_tokens=500)
    prompt = request.messages[0].content
    assert "read_file" in prompt and "services/api/handlers.py" in prompt
    assert "chars in all" in prompt  # the result shortened
    outcome = summarize(OfflineProvider(), turns, parent_summary=None, focus=None,
                        model="offline", max_words=200, timeout_seconds=10,
                        max_output_tokens=500)
    assert not outcome.fallback_used
    assert "services/api/handlers.py" in outcome.summary.artifacts


def test_fidelity_bench_runs_and_prints_its_table() -> None:
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "bench/fidelity.py", "--seeds", "1",
                           "--compactions", "2"], capture_output=True, text=True, timeout=120,
                          cwd=Path(__file__).resolve().parents[2])
    assert done.returncode == 0, done.stderr
    assert "| decision | 100% (2/2) |" in done.stdout
    assert "still pending after 2 compactions: manual 100%" in done.stdout
    missing = subprocess.run([sys.executable, "bench/fidelity.py", "--provider", "anthropic"],
                             capture_output=True, text=True, timeout=60,
                             env={"PATH": "/usr/bin:/bin"},
                             cwd=Path(__file__).resolve().parents[2])
    assert missing.returncode == 1 and missing.stderr.startswith("fidelity:")


def test_offline_summary_of_a_realistic_planning_chat() -> None:
    from rollchat.compaction.extractive import extractive_summary

    chat = [
        ("Morning! Quick sync on the checkout rewrite before standup.", "Sure."),
        ("Okay so the payments people, mainly Ingrid and Batu, want the new flow behind a "
         "flag first.", "Makes sense."),
        ("How big should the canary be?", "Start with 5% of traffic for 2 days."),
        ("Alright, 5% for 2 days it is, then we ramp to half.", "Noted."),
        ("Don't forget to ping the fraud team about the new 3DS step.", "Will do."),
        ("The old handler in legacy/checkout/views.py can go once the canary is clean.", ""),
        ("Honestly I'd prefer we don't touch the tax code this sprint.", "Understood."),
        ("Oh and remember to bump the timeout on the card vault client to 8 seconds.", "Ok."),
    ]
    turns = [turn(i + 1, user, reply) for i, (user, reply) in enumerate(chat)]
    summary = extractive_summary(turns, parent_summary=None, focus=None, max_words=300,
                                 fallback=False)
    everything = "\n".join((*summary.topics, *summary.decisions, *summary.pending,
                            *summary.artifacts))
    assert "Ingrid" in everything and "Batu" in everything
    assert any("5%" in d and "2 days" in d for d in summary.decisions)
    assert any("tax code" in d for d in summary.decisions)  # a preference
    assert any("fraud team" in p for p in summary.pending)
    assert any("8 seconds" in p for p in summary.pending)
    assert "legacy/checkout/views.py" in summary.artifacts


def test_audit_line_of_a_session_with_nothing_named_is_not_zero_of_zero() -> None:
    line = audit_line(audit([turn(1, "hello there")], Summary("Greetings.", (), (), ())))
    assert "0 of 0" not in line
    assert line == ("The session named no decisions, open tasks, files or figures for the "
                    "summary to keep.")
