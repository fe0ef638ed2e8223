"""Measure the session picker with 10,000 sessions: the listing it opens on (through the
sessions index, against reading every file's head and tail as before the index), building its
state (the fuzzy matcher over every session's title, id, date, first line and agent), one
keystroke (re-ranking for a query), and the preview of the highlighted session (its summary,
read lazily).

Run: .venv/bin/python bench/bench_picker.py [--no-listing]
(goals: the listing < 0.5 s, a keystroke < 50 ms, preview < 5 ms)
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

from rollchat.storage.listing import SessionInfo
from rollchat.ui.picker import Picker

T0 = datetime(2026, 1, 1, tzinfo=timezone.utc)
_TEXT = ("redis cache port eviction tests garden release notes deploy kubernetes helm chart "
         "postgres migration index rate limiter token bucket retry backoff parser grammar "
         "invoice billing stripe webhook queue worker cron metrics grafana alert")
WORDS = _TEXT.split()


def _info(i: int, rng: random.Random) -> SessionInfo:
    sid = f"assistant_{(T0 + timedelta(minutes=i)):%Y%m%d_%H%M%S}_{i:04x}"
    first = " ".join(rng.choice(WORDS) for _ in range(8))[:60]
    title = " ".join(rng.choice(WORDS) for _ in range(4)).capitalize() if i % 3 == 0 else first
    return SessionInfo(0, sid, f"{sid}.md", Path(f"/nowhere/{sid}.md"), "Assistant",
                       "config:assistant", "model", "offline", T0 + timedelta(minutes=i),
                       rng.randint(1, 40), rng.randint(100, 90_000), first, True, None, None,
                       title=title)


def _best(fn: object, runs: int = 5) -> float:
    best = float("inf")
    for _ in range(runs):
        start = time.perf_counter()
        fn()  # type: ignore[operator]
        best = min(best, time.perf_counter() - start)
    return best


def listing(count: int) -> None:
    """The listing the picker opens on, over ``count`` session files (bench_listing.py's)."""
    sys.path.insert(0, str(Path(__file__).parent))
    from bench_listing import write_sessions

    from rollchat.storage.listing import file_info, numbered
    from rollchat.storage.store import SessionStore

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "sessions"
        write_sessions(root, count)
        store = SessionStore(root)

        def by_files() -> None:  # before the index: every file's head and tail
            infos = [file_info(Path(e.path), e.stat(follow_symlinks=False))
                     for e in os.scandir(root) if e.name.endswith(".md")]
            numbered(infos, [])

        start = time.perf_counter()
        store.list_sessions()
        cold = time.perf_counter() - start
        warm = _best(store.list_sessions, 5)
        files = _best(by_files, 3)
    print(f"listing {count:,} sessions (in process): every file read {files:.3f} s (best of "
          f"3); through the index {warm:.3f} s warm (best of 5), {cold:.2f} s cold (building "
          f"it)")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--no-listing", action="store_true",
                        help="skip the listing (it writes 10,000 files to a temporary dir)")
    if not parser.parse_args().no_listing:
        listing(10_000)
    rng = random.Random(1)
    infos = [_info(i, rng) for i in range(10_000)]
    loads: list[str] = []

    def load(info: SessionInfo) -> None:
        loads.append(info.session_id)

    built = _best(lambda: Picker(infos, load), 3)
    print(f"picker state for 10,000 sessions: {built * 1000:.1f} ms (best of 3)")
    for query in ("r", "redis", "rds", "redis port", "2026-01-03", "c0de", "zzzz"):
        worst = first = float("inf")
        for _ in range(3):  # typed one character at a time into a fresh picker
            picker = Picker(infos, load)
            times = []
            for n in range(1, len(query) + 1):
                start = time.perf_counter()
                picker.filter(query[:n])
                times.append(time.perf_counter() - start)
            worst, first = min(worst, max(times)), min(first, times[0])
        print(f"typing {query!r:14}: slowest keystroke {worst * 1000:5.1f} ms (the first: "
              f"{first * 1000:5.1f} ms), {len(picker.matches):5} matches (best of 3)")
    picker.filter("")
    took = _best(lambda: (picker.move(1), picker.preview(), picker.rows(20)), 50)
    print(f"move + preview + 20 rows: {took * 1000:.2f} ms (best of 50); summaries read: "
          f"{len(set(loads))} of 10,000")


if __name__ == "__main__":
    main()
