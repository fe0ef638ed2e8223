"""Measure the store's head/tail reads: listing 10,000 sessions, loading a summary (50 MB vs 10 KB).

Run: /tmp/v/bin/python bench/bench_store.py   (goals: listing < 0.5 s, summary < 50 ms, flat)
"""

from __future__ import annotations

import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

from rollchat.domain import SessionHeader, Summary, Transcript, Turn, Usage
from rollchat.storage.store import SessionStore
from rollchat.storage.transcript import render

T0 = datetime(2026, 11, 22, 14, 30, 22, tzinfo=timezone.utc)
SUMMARY = Summary("Initial session.", ("rate limiter", "token buckets"), ("use Redis",),
                  ("benchmarks",))


def _write(root: Path, i: int, turns: int, text: str) -> None:
    sid = f"assistant_{(T0 + timedelta(seconds=i)):%Y%m%d_%H%M%S}_{i:04x}"
    header = SessionHeader(sid, T0 + timedelta(seconds=i), "Assistant", "config:assistant",
                           "claude-sonnet-4-5", "anthropic", total_queries=turns)
    ts = tuple(Turn("query", n, T0, f"question {n}: {text}", text, elapsed=1.0,
                    usage=Usage(100, 200)) for n in range(1, turns + 1))
    (root / f"{sid}.md").write_text(render(Transcript(header, ts, SUMMARY)))


def _best(fn: object, runs: int = 5) -> float:
    best = float("inf")
    for _ in range(runs):
        start = time.perf_counter()
        fn()  # type: ignore[operator]
        best = min(best, time.perf_counter() - start)
    return best


def bench_listing(root: Path) -> None:
    for i in range(10_000):
        _write(root, i, 4, "lorem ipsum dolor sit amet " * 10)
    store = SessionStore(root)
    assert len(store.list_sessions().sessions) == 10_000
    print(f"list_sessions, 10,000 sessions (~{4 * 600 // 1000 + 1} KB each): "
          f"{_best(store.list_sessions, 3):.3f} s (best of 3)")


def bench_summary(root: Path, size: int) -> None:
    turns = max(1, size // 10_000)
    _write(root, 0, turns, "x" * 4_900)
    store = SessionStore(root)
    info = store.list_sessions().sessions[0]
    mb = (root / info.file_name).stat().st_size / 1e6
    assert store.load_summary(info) == SUMMARY
    per = _best(lambda: store.load_summary(info), 20)
    listed = _best(store.list_sessions, 20)
    print(f"{mb:9.3f} MB transcript: load_summary {per * 1000:.2f} ms, "
          f"list_sessions {listed * 1000:.2f} ms (best of 20)")


def main() -> None:
    with tempfile.TemporaryDirectory() as d:
        bench_listing(Path(d))
    for size in (10_000, 50_000_000):
        with tempfile.TemporaryDirectory() as d:
            bench_summary(Path(d), size)


if __name__ == "__main__":
    main()
