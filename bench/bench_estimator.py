"""The prompt estimator's error against an exact count, at the moment compaction triggers and
over every turn, in a long scripted session against the counting wire servers (4K window).

Exact count: TokenCounter's full count of the request that would be sent at that moment
(hygiene applied, tools included). Run: /tmp/v/bin/python bench/bench_estimator.py
"""

from __future__ import annotations

import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the tests package

from tests.compaction.test_autocompact_wire import WINDOW, Script, Session, realistic, send, start
from tests.wire_servers import AnthropicDialect, OpenAIDialect, WireServer

TURNS = 200


def run(dialect: OpenAIDialect | AnthropicDialect) -> Session:
    with WireServer(dialect, window=WINDOW, responder=Script()) as server, \
            tempfile.TemporaryDirectory() as tmp:
        session = start(Path(tmp), server)
        for i in range(TURNS):
            text = realistic(i)
            if i % 25 == 24:
                text = f"[{i}] Check the archive: what did we decide about the Redis cache TTL?"
            send(session, text)
        return session


def error(estimate: int, exact: int) -> float:
    return 100.0 * (estimate - exact) / exact


def report(name: str, session: Session) -> None:
    steps = session.steps
    at = [s for s in steps if s.compacted]
    errors_at = [error(s.estimate, s.exact) for s in at]
    errors_all = [error(s.estimate, s.exact) for s in steps]
    refused = sum(1 for r in session.server.requests
                  if r.prompt_tokens is not None and r.prompt_tokens > WINDOW)
    print(f"| {name} | {len(steps)} | {len(at)} | "
          f"{statistics.mean(errors_at):+.2f}% | {min(errors_at):+.2f}% / {max(errors_at):+.2f}% | "
          f"{statistics.mean(abs(e) for e in errors_all):.2f}% | "
          f"{max(abs(e) for e in errors_all):.2f}% | {refused} |")


def main() -> int:
    print("| server | turns | compactions | mean error at trigger | min / max at trigger "
          "| mean abs error, all turns | max abs error, all turns | requests over window |")
    print("|---|---|---|---|---|---|---|---|")
    report("OpenAI wire", run(OpenAIDialect()))
    report("Anthropic wire", run(AnthropicDialect()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
