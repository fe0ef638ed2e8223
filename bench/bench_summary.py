"""The local (extractive) summary of long sessions: time and peak memory for 500, 8,000 and
50,000 turns (bench/summary_data.py), this tree's rollchat beside another's (``--old SRC``,
e.g. main's src exported with git archive), each size in a fresh process.

Run: .venv/bin/python bench/bench_summary.py [--old /tmp/rollchat-old/src] [--sizes 500 8000]
     [--timeout 600] [--old-up-to 8000] [--files REAL_SESSION.jsonl ...]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def measure(count: int, path: str = "") -> dict[str, float]:
    """In this process: build ``count`` turns (or import the file at ``path``), then time one
    summary of them."""
    from bench.summary_data import long_session

    from rollchat.compaction.extractive import extractive_summary
    from rollchat.storage.importer import read_transcript

    turns = list(read_transcript(Path(path).read_bytes(), Path(path).name).turns) if path \
        else long_session(count)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start = time.perf_counter()
    summary = extractive_summary(turns, parent_summary=None, focus=None, max_words=500,
                                 fallback=True)
    seconds = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    text = "\n".join((summary.background, *summary.topics, *summary.decisions,
                      *summary.pending, *summary.artifacts))
    return {"turns": len(turns), "seconds": seconds, "peak_mb": after / 1024,
            "grew_mb": (after - before) / 1024,
            "pending": len(summary.pending), "decisions": len(summary.decisions),
            "chars": len(text)}


def run(src: Path, count: int, timeout: float, path: str = "") -> dict[str, float] | None:
    """``measure(count, path)`` in a fresh process whose rollchat is ``src``; None on
    timeout."""
    env = {**os.environ, "PYTHONPATH": f"{src}{os.pathsep}{ROOT}"}
    try:
        done = subprocess.run([sys.executable, __file__, "--worker", str(count), "--file", path],
                              env=env,
                              capture_output=True, text=True, timeout=timeout, check=True)
    except subprocess.TimeoutExpired:
        return None
    return json.loads(done.stdout.splitlines()[-1])  # type: ignore[no-any-return]


def cell(result: dict[str, float] | None, timeout: float) -> str:
    if result is None:
        return f"did not finish in {timeout:.0f} s"
    return (f"{result['seconds']:.2f} s, peak {result['peak_mb']:.0f} MB "
            f"(+{result['grew_mb']:.0f} MB); {result['decisions']:.0f} decisions, "
            f"{result['pending']:.0f} pending, {result['chars']:,.0f} chars")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--worker", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--file", default="", help=argparse.SUPPRESS)
    parser.add_argument("--files", nargs="*", default=[],
                        help="real session files to import and summarize too")
    parser.add_argument("--old", type=Path, help="another tree's src to run beside this one")
    parser.add_argument("--sizes", type=int, nargs="*", default=[500, 8000, 50000])
    parser.add_argument("--timeout", type=float, default=600.0)
    parser.add_argument("--old-up-to", type=int, default=10**9,
                        help="run --old only for sizes up to this (it is quadratic)")
    args = parser.parse_args()
    if args.worker is not None:
        print(json.dumps(measure(args.worker, args.file)))
        return
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, Python "
          f"{platform.python_version()}, {platform.platform()}\n")
    print("| turns | this tree | --old |" if args.old else "| turns | this tree |")
    print("| --- | --- | --- |" if args.old else "| --- | --- |")
    for count in args.sizes:
        new = cell(run(ROOT / "src", count, args.timeout), args.timeout)
        old = "" if not args.old else " not run |" if count > args.old_up_to \
            else f" {cell(run(args.old, count, args.timeout), args.timeout)} |"
        print(f"| {count:,} | {new} |{old}", flush=True)
    for path in args.files:
        result = run(ROOT / "src", 0, args.timeout, path)
        old = f" {cell(run(args.old, 0, args.timeout, path), args.timeout)} |" if args.old else ""
        turns = f"{result['turns']:.0f} turns" if result else "?"
        print(f"| {Path(path).name} ({Path(path).stat().st_size:,} bytes, {turns}) | "
              f"{cell(result, args.timeout)} |{old}", flush=True)


if __name__ == "__main__":
    main()
