"""Measure what saving a turn with tool calls costs: the turn in progress written after each call
(the first appended, the next ones replacing it), the finished turn replacing it, the totals;
and a plain turn's append, for sessions whose file already holds 1 MB or 50 MB.

Run: .venv/bin/python bench/bench_checkpoint.py [--runs 3] [--dir DIR]
(before a change: PYTHONPATH=<a copy of the old src> to time the old store the same way)
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path

from rollchat.domain import ToolCall, ToolExchange, Turn, Usage
from rollchat.storage.store import SessionStore

T0 = datetime(2026, 11, 25, 12, 0, tzinfo=timezone.utc)
MB = 1024 * 1024


def _turn(number: int, results: list[int], status: str = "interrupted") -> Turn:
    tools = tuple(ToolExchange(ToolCall(f"c{i}", "big", {"i": i}), "x" * size)
                  for i, size in enumerate(results))
    return Turn("query", number, T0, f"question {number}", "Looking.",
                status=status, tools=tools, usage=Usage(10, 5))  # type: ignore[arg-type]


def _timed(fn: Callable[[], None]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def one_run(root: Path, head_mb: int, call_mb: int) -> dict[str, float]:
    """A session whose file holds ``head_mb`` MB of earlier turns, then one turn of two calls
    of ``call_mb`` MB each: what each save of that turn costs, and a plain turn after it."""
    store = SessionStore(root)
    live = store.new_session(agent_key="w", agent="Worker", agent_path="w.py", model="m",
                             provider="offline", now=T0)
    live.append_turn(_turn(1, [head_mb * MB], "ok"), "Worker")  # the earlier turns
    big = call_mb * MB
    times = {
        "first call (turn in progress)": _timed(
            lambda: live.write_pending(_turn(2, [big]), "Worker")),
        "second call (replaces it)": _timed(
            lambda: live.write_pending(_turn(2, [big, big]), "Worker")),
        "finished turn (replaces it)": _timed(
            lambda: live.append_turn(_turn(2, [big, big], "ok"), "Worker")),
        "totals": _timed(lambda: live.set_totals(2, 30, 20)),
        "plain turn (append)": _timed(
            lambda: live.append_turn(_turn(3, [], "ok"), "Worker")),
    }
    live.close()
    return times


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--dir", type=Path, default=None)
    args = parser.parse_args()
    for head_mb, call_mb in ((1, 1), (50, 1), (1, 50), (50, 50)):
        runs: list[dict[str, float]] = []
        for _ in range(args.runs):
            root = Path(tempfile.mkdtemp(dir=args.dir))
            try:
                runs.append(one_run(root, head_mb, call_mb))
            finally:
                shutil.rmtree(root)
        print(f"file {head_mb} MB before the turn, calls of {call_mb} MB "
              f"(median of {args.runs}, ms):")
        for name in runs[0]:
            print(f"  {name:32} {statistics.median(r[name] for r in runs) * 1000:9.1f}")


if __name__ == "__main__":
    main()
