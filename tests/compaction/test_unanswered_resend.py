"""A message answered when sent again is not "Unanswered" in the local summary; one still
unanswered after it was sent again is, in the transcript's summary and on screen (`summary`)
(issue 40.3). Piped chat in a subprocess against a llama.cpp-framed local server that fails
the first sending of one question, every sending of another, and the summary request."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from rollchat.storage.transcript import parse
from tests.compaction.test_small_window import kind
from tests.e2e import clean_env, run_piped
from tests.wire_local import local_server, sse_answer

QUEUE, RETRIES = "Which queue do we use for jobs?", "How many retries do failed jobs get?"


def failure() -> bytes:
    body = json.dumps({"error": {"code": 500, "message": "model crashed",
                                 "type": "server_error"}}).encode()
    return (b"HTTP/1.1 500 Internal Server Error\r\nContent-Type: application/json\r\n"
            b"Content-Length: %d\r\nConnection: close\r\n\r\n%s" % (len(body), body))


def test_a_question_answered_when_sent_again_is_not_left_unanswered(tmp_path: Path) -> None:
    sent: list[str] = []

    def chat(body: dict[str, Any]) -> bytes:
        what = kind(body)
        if what != "chat":
            return failure() if what == "summary" else sse_answer("Ready.")
        last = body["messages"][-1]["content"]
        sent.append(last)
        if QUEUE in last and sent.count(last) > 1:
            return sse_answer("We use rabbitmq for jobs.")
        return failure()

    (tmp_path / "rollchat.yml").write_text("retry:\n  max_retries: 0\n", encoding="utf-8")
    with local_server(chat=chat) as server:
        done = run_piped(tmp_path, f"{QUEUE}\n{QUEUE}\n{RETRIES}\n{RETRIES}\ncompact\nsummary\n"
                         "exit\n", "--config", "rollchat.yml", "--provider", "openai",
                         "--model", "smollm2", "--base-url", server.url, "--no-memory",
                         "--exit-summary", "skip",
                         env=clean_env(tmp_path / "home", OPENAI_API_KEY="none"))
    assert done.returncode == 0, done.stderr
    assert "We use rabbitmq for jobs." in done.stdout
    [parent] = [p for p in (tmp_path / "sessions").glob("*.md")
                if parse(p.read_text(encoding="utf-8")).summary is not None]
    summary = parse(parent.read_text(encoding="utf-8")).summary
    assert summary is not None
    pending = list(summary.pending)
    assert [p for p in pending if p.startswith("Unanswered")] == [f"Unanswered: {RETRIES}"]
    shown = done.stdout.split("Restored summary (from", 1)[1]  # the `summary` command
    pending_shown = " ".join(shown.split("Pending:", 1)[1].split("Timeline:", 1)[0]
                            .split("'summary edit'", 1)[0].split())
    assert pending_shown == f"• Unanswered: {RETRIES}"
