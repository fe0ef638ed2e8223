"""Measure ``rollchat compact ID --json --focus X`` as a user runs it (a whole process each
time): the summary written by the model (uncached: ``--refresh``) against the same answer
from the cache, with the offline model (the default configuration) and with a fake
OpenAI-compatible server answering after a delay (a stand-in for a real model). Also the
session's own summary block (no focus: no model, no cache).

Run: .venv/bin/python bench/bench_compact.py [--runs 7] [--turns 40] [--delay 1.0]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.compact_fixtures import T0, make_sessions, turn
from tests.cli.test_compact_command import SUMMARY_REPLY
from tests.wire_servers import OpenAIDialect, Reply, WireServer

from rollchat.storage.store import SessionStore
from rollchat.storage.transcript import render_turn

FOCUS = "port"


def _grow(root: Path, session_id: str, turns: int) -> None:
    """Add ``turns`` realistic turns to the session (as the chat appends them)."""
    path = SessionStore(root).path_for(session_id)
    with open(path, "a", encoding="utf-8") as f:
        for n in range(3, turns + 3):
            f.write(render_turn(turn(
                n, f"Step {n}: check the limiter's behaviour when the bucket for tenant "
                   f"t{n} is empty and port 8443 is under load; what should we log?",
                f"For tenant t{n} the bucket refills at 100 requests per minute. We decided "
                f"to return 429 with a Retry-After header and to log the tenant id, the "
                f"route and the bucket level to syslog. TODO: load-test step {n}.", T0),
                "Assistant"))


def _run(env: dict[str, str], *args: str) -> tuple[float, dict[str, Any]]:
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "rollchat", "compact", *args, "--json"],
                          capture_output=True, text=True, env=env, check=True)
    return time.perf_counter() - start, json.loads(done.stdout)


def _median_ms(env: dict[str, str], runs: int, *args: str, cached: bool) -> float:
    times = []
    for _ in range(runs):
        seconds, out = _run(env, *args)
        assert out["cached"] is cached, out
        times.append(seconds)
    return statistics.median(times) * 1000


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--turns", type=int, default=40)
    parser.add_argument("--delay", type=float, default=1.0,
                        help="seconds the fake server waits before answering")
    options = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-compact-"))
    made = make_sessions(work / "sessions")
    _grow(made.root, made.child, options.turns)
    home = work / "home"
    base = {k: v for k, v in os.environ.items()
            if not k.endswith("_API_KEY") and not k.startswith(("ROLLCHAT_", "OPENAI_"))}
    base.update(HOME=str(home), XDG_CONFIG_HOME=str(home / "config"),
                XDG_DATA_HOME=str(home / "data"), ROLLCHAT_SESSIONS_DIR=str(made.root))
    size = (made.root / f"{made.child}.md").stat().st_size
    print(f"session: {options.turns + 2} queries, {size:,} bytes, parent summarized; "
          f"{options.runs} runs each, median of whole processes")
    rows = []
    server = WireServer(OpenAIDialect(), responder=lambda body: Reply(
        "stall", text=SUMMARY_REPLY, stall_seconds=options.delay)).start()
    try:
        fake = {**base, "ROLLCHAT_PROVIDER": "openai", "ROLLCHAT_BASE_URL": server.url,
                "ROLLCHAT_MODEL": "fake-model", "OPENAI_API_KEY": "sk-bench"}
        for label, env in (("offline model (default config)", base),
                           (f"fake OpenAI server, {options.delay:g} s reply", fake)):
            args = (made.child, "--focus", FOCUS)
            uncached = _median_ms(env, options.runs, *args, "--refresh", cached=False)
            cached = _median_ms(env, options.runs, *args, cached=True)
            rows.append((label, uncached, cached))
    finally:
        server.stop()
    own = _median_ms(base, options.runs, made.parent, cached=True)
    print()
    print("| model | uncached (--refresh) | cached | ratio |")
    print("|---|---|---|---|")
    for label, uncached, cached in rows:
        print(f"| {label} | {uncached:,.0f} ms | {cached:,.0f} ms | {uncached / cached:.1f}x |")
    print(f"| the session's own summary block (no focus) | | {own:,.0f} ms | |")


if __name__ == "__main__":
    main()
