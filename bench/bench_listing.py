"""Whole-process listing and search over 10,000 sessions through the sessions index (issue 12:
`rollchat sessions` and `sessions --json` at most 0.5 s each).

Makes N realistic session files (4-8 turns of varied text, a summary on most, a title on some,
~2-5 KB each) in a temporary directory, then times whole processes (`python -m rollchat ...`):
cold (no index: the first run builds it) once, then warm (median of --runs). Also the
per-turn cost the index adds to a save (append + totals refresh, with and without an index).

Run: .venv/bin/python bench/bench_listing.py [--sessions 10000] [--runs 5] [--against SRC]
(--against SRC: each warm command also run with another checkout's ``src`` first on the path,
the two interleaved, side by side: e.g. ``git archive main src | tar -x -C /tmp/base``.)
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

from rollchat.domain import SessionHeader, Summary, Transcript, Turn, Usage, answer_blocks
from rollchat.storage.index import INDEX_NAME
from rollchat.storage.store import SessionStore
from rollchat.storage.transcript import render

T0 = datetime(2026, 1, 1, 9, 0, tzinfo=timezone.utc)
VOCAB = ["redis", "kafka", "postgres", "nginx", "terraform", "grafana", "docker", "ansible", "limiter", "bucket", "cache", "schema", "migration", "deploy", "rollback", "latency", "budget", "queue", "worker", "cron", "backup", "index", "token", "session", "parser", "lexer", "compiler", "test", "fixture", "release", "branch", "merge", "review", "invoice", "billing", "customer", "report", "dashboard", "alert", "metric", "trace", "span"]


def _text(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(VOCAB) for _ in range(words)).capitalize() + "."


def write_sessions(root: Path, count: int, seed: int = 1) -> None:
    rng = random.Random(seed)
    root.mkdir(parents=True, exist_ok=True)
    for i in range(count):
        when = T0 + timedelta(minutes=7 * i, seconds=rng.randrange(60))
        sid = f"assistant_{when:%Y%m%d_%H%M%S}_{rng.getrandbits(16):04x}"
        turns = tuple(Turn("query", n, when + timedelta(minutes=n), _text(rng, rng.randint(8, 40)),
                           answer_blocks("\n\n".join(_text(rng, rng.randint(20, 60))
                                                       for _ in range(rng.randint(1, 3)))),
                           elapsed=1.5, usage=Usage(rng.randint(100, 4000), rng.randint(50, 800)))
                      for n in range(1, rng.randint(4, 8) + 1))
        summary = None if i % 10 == 0 else Summary(
            "Initial session.", tuple(_text(rng, 5) for _ in range(3)), (_text(rng, 8),),
            (_text(rng, 6),))
        header = SessionHeader(sid, when, "Assistant", "config:assistant", "claude-sonnet-4-5",
                               "anthropic", total_queries=len(turns),
                               total_tokens=sum(t.usage.total for t in turns),
                               title=_text(rng, 4) if i % 3 == 0 else None)
        (root / f"{sid}.md").write_text(render(Transcript(header, turns, summary)))


def run(root: Path, *args: str, src: str | None = None) -> float:
    """One whole process; ``src``: another checkout's source directory, imported instead."""
    # byte-code caches written and reused as on a user's machine (this sandbox turns them off:
    # a fresh checkout then compiles every module it imports on every run)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    if src:
        env["PYTHONPATH"] = src
    where = [] if args == ("--version",) else ["--sessions-dir", str(root)]  # (its fast path)
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "rollchat", *args, *where],
                   check=True, stdout=subprocess.DEVNULL, env=env)
    return time.perf_counter() - start


COMMANDS = (("sessions",), ("sessions", "--json"), ("sessions", "--all", "--json"),
            ("search", "redis"), ("search", "limiter", "bucket", "--json"))


def cpu_run(root: Path, *args: str, src: str | None = None) -> tuple[float, float]:
    """``run``'s wall time and the process's CPU time (user + system): on a machine shared
    with other work the CPU time is the steadier figure."""
    import resource

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    wall = run(root, *args, src=src)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def bench_sides(root: Path, runs: int, against: str) -> None:
    """Each warm command with ``against``'s source and with this one, interleaved."""
    run(root, "sessions")
    time.sleep(2.5)  # past the racy window (see bench_processes)
    print(f"warm, whole process, median of {runs}, interleaved: {against} | this checkout "
          "(wall; CPU user+system)")
    for args in (*COMMANDS, ("--version",)):
        base: list[tuple[float, float]] = []
        this: list[tuple[float, float]] = []
        for _ in range(runs):
            base.append(cpu_run(root, *args, src=against))
            this.append(cpu_run(root, *args))
        bw, nw = (statistics.median(w for w, _ in s) for s in (base, this))
        bc, nc = (statistics.median(c for _, c in s) for s in (base, this))
        print(f"  rollchat {' '.join(args):<32} wall {bw:.3f} s | {nw:.3f} s ({nw / bw:.2f}x)"
              f"   CPU {bc:.3f} s | {nc:.3f} s ({nc / bc:.2f}x)")


def bench_processes(root: Path, runs: int) -> None:
    size = sum(p.stat().st_size for p in root.glob("*.md"))
    print(f"{len(list(root.glob('*.md'))):,} sessions, {size / 1e6:.1f} MB")
    os.environ.pop("ROLLCHAT_SESSIONS_DIR", None)
    print(f"cold `rollchat sessions` (builds the index): {run(root, 'sessions'):.2f} s")
    time.sleep(2.5)  # past the racy window: rows indexed right after a write are re-read once
    run(root, "sessions")
    # every command and ``--version`` (the process floor) interleaved, run after run: a busy
    # machine slows them alike, so the ratios and CPU times are the figures to compare
    measured = (("--version",), *COMMANDS)
    timed: dict[tuple[str, ...], list[tuple[float, float]]] = {a: [] for a in measured}
    for _ in range(runs):
        for args in measured:
            timed[args].append(cpu_run(root, *args))
    floor_wall, floor_cpu = (statistics.median(x[i] for x in timed[("--version",)])
                             for i in (0, 1))
    print(f"warm, whole process, median of {runs}, interleaved with --version "
          "(wall; CPU user+system; each / --version's)")
    for args in measured:
        wall = statistics.median(w for w, _ in timed[args])
        cpu = statistics.median(c for _, c in timed[args])
        print(f"  rollchat {' '.join(args):<32} wall {wall:.3f} s ({wall / floor_wall:.2f}x)  "
              f"CPU {cpu:.3f} s ({cpu / floor_cpu:.2f}x)  min wall "
              f"{min(w for w, _ in timed[args]):.3f} s")
    (root / INDEX_NAME).write_bytes(b"corrupt" * 100)
    print(f"corrupt index, `rollchat sessions` (rebuilds it): {run(root, 'sessions'):.2f} s")


def bench_save(root: Path, turns: int = 50) -> None:
    """The per-turn save (append + totals) with the index present, and without one."""
    for with_index in (False, True):
        with tempfile.TemporaryDirectory() as tmp:
            store = SessionStore(Path(tmp))
            write_sessions(Path(tmp), 100, seed=2)
            if with_index:
                store.index.page()
            live = store.new_session(agent_key="a", agent="A", agent_path="x", model="m",
                                     provider="offline", now=T0)
            costs = []
            for n in range(1, turns + 1):
                turn = Turn("query", n, T0, "question " * 20, answer_blocks("answer " * 300),
                            usage=Usage(1, 2))
                start = time.perf_counter()
                live.append_turn(turn, "A")
                live.set_totals(n, 3 * n, 1)
                costs.append(time.perf_counter() - start)
            live.close()
            print(f"save a turn ({'with' if with_index else 'without'} an index, {turns} turns of "
                  f"~2 KB): median {statistics.median(costs) * 1000:.2f} ms, last "
                  f"{costs[-1] * 1000:.2f} ms")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sessions", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--against", help="another checkout's src directory (side by side)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "sessions"
        write_sessions(root, args.sessions)
        if args.against:
            bench_sides(root, args.runs, args.against)
            return
        bench_processes(root, args.runs)
    bench_save(Path(tmp))


if __name__ == "__main__":
    main()
