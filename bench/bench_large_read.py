"""Reading a large session whole (issue 24, item 3): a session with two tool results of N MB
each is written through the store, then each reader runs in a fresh process: the time and the
peak memory (ru_maxrss) of ``load_transcript`` and of ``rollchat show`` / ``export --format
json`` / ``audit`` on it.

    python bench/bench_large_read.py [--mb 17.5 35 70]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

from rollchat.domain import Summary, ToolCall, ToolExchange, Turn, answer_blocks
from rollchat.storage.store import SessionStore

T0 = datetime(2026, 11, 25, 23, 0, tzinfo=timezone.utc)
LOAD = ("import sys; from pathlib import Path; from rollchat.storage.store import SessionStore;"
        "SessionStore(Path(sys.argv[1])).load_transcript(sys.argv[2])")


def write(root: Path, mb: float) -> tuple[str, int]:
    """A finalized session with two tool results of ``mb`` MB each (lines of 91 bytes)."""
    store = SessionStore(root)
    live = store.new_session(agent_key="worker", agent="Worker", agent_path="worker.py",
                             model="offline", provider="offline", now=T0)
    line = "abcdefghij" * 9 + "\n"
    for n in (1, 2):
        result = f"R{n}:\n" + line * int(mb * 1e6 // len(line)) + f":end{n}"
        call = ToolExchange(ToolCall(f"c{n}", "big", {"n": n}), result)
        live.append_turn(Turn("query", n, T0, f"use big {n}", answer_blocks("done", (call,))),
                         "Worker")
    store.finalize(live.session_id, Summary("bench", ("big",), (), ()), total_queries=2,
                   total_tokens=0)
    live.close()
    return live.session_id, live.path.stat().st_size


PEAK = ("import resource, subprocess, sys; subprocess.run(sys.argv[1:], check=True, "
        "stdout=subprocess.DEVNULL); print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")


def timed(args: list[str], cwd: Path) -> tuple[float, float]:
    """Seconds and peak MB of one process (measured by a parent of its own)."""
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", PEAK, *args], cwd=cwd, check=True,
                          capture_output=True, text=True,
                          env={**os.environ, "HOME": str(cwd / "home")})
    return time.perf_counter() - started, int(done.stdout.split()[-1]) / 1024


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mb", type=float, nargs="+", default=[17.5, 35.0, 70.0])
    sizes = parser.parse_args().mb
    print("| tool results | file | reader | seconds | peak MB |")
    print("|---|---|---|---|---|")
    for mb in sizes:
        with tempfile.TemporaryDirectory() as tmp:
            cwd = Path(tmp)
            sid, size = write(cwd / "sessions", mb)
            rc = [sys.executable, "-m", "rollchat"]
            where = ["--sessions-dir", "sessions"]
            readers = {
                "load_transcript": [sys.executable, "-c", LOAD, "sessions", sid],
                "show": [*rc, "show", sid, *where],
                "export --format json": [*rc, "export", sid, "--format", "json", *where],
                "audit": [*rc, "audit", sid, *where],
            }
            for name, args in readers.items():
                seconds, peak = timed(args, cwd)
                print(f"| 2 x {mb:g} MB | {size / 1e6:.1f} MB | {name} | {seconds:.2f} | "
                      f"{peak:.0f} |")


if __name__ == "__main__":
    main()
