"""Measure ``rollchat import FILE --local-summary`` as a user runs it (a whole process each time)
on Claude Code files of 1, 3, 10 and 50 MB, plus the real 2.7 MB file they are made from: the
wall time and the process's peak memory; then, in this process, where the time goes (reading
the file, the local summary, writing the session), to show whether each part is linear.

The files repeat the lines of a real session (tests/fixtures/real/claude-code/ae4a77f8-....jsonl:
two typed prompts, 254 tool calls, a skill, a compaction, 1,697 progress lines) with fresh
uuids and tool ids in each copy, cut at the first line past the size.

Run: .venv/bin/python bench/bench_import.py [--sizes 1,3,10,50] [--runs 3] [--dir DIR]
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SEED = ROOT / "tests" / "fixtures" / "real" / "claude-code" / \
    "ae4a77f8-aedd-4bc1-888f-c94edc91af04.jsonl"
MB = 1024 * 1024
_UUID = re.compile(r"([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-)[0-9a-f]{12}")
_TOOL_ID = re.compile(r"(toolu_[A-Za-z0-9]+)")


def make_file(path: Path, megabytes: float) -> int:
    """Write a Claude Code file of about ``megabytes`` MB from the seed's lines; its size."""
    lines = SEED.read_text(encoding="utf-8").split("\n")
    lines = [line for line in lines if line.strip()]
    size, copy = 0, 0
    with open(path, "w", encoding="utf-8") as f:
        while size < megabytes * MB:
            for line in lines:
                fresh = _UUID.sub(lambda m, c=copy: f"{m[1]}{c:012x}", line) if copy else line
                fresh = _TOOL_ID.sub(lambda m, c=copy: f"{m[1]}c{c}", fresh) if copy else fresh
                f.write(fresh + "\n")
                size += len(fresh.encode("utf-8")) + 1
                if size >= megabytes * MB:
                    break
            copy += 1
    return size


def run_cli(source: Path, sessions: Path, config: Path) -> tuple[float, int]:
    """``rollchat import`` in its own process: (seconds, peak resident memory in KiB)."""
    command = [sys.executable, "-m", "rollchat", "import", str(source), "--local-summary",
               "--again", "--sessions-dir", str(sessions), "--config", str(config)]
    start = time.perf_counter()
    child = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(child.pid, 0)
    elapsed = time.perf_counter() - start
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode != 0:
        raise SystemExit(f"import failed: {child.stderr.read().decode() if child.stderr else ''}")
    return elapsed, usage.ru_maxrss


def _timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    value = fn()
    return time.perf_counter() - start, value


def phases(source: Path, sessions: Path) -> dict[str, float]:
    """The import's parts timed in this process: read, local summary, write."""
    from rollchat.compaction.extractive import extractive_summary
    from rollchat.storage.imports import read_transcript
    from rollchat.storage.store import SessionStore

    data = source.read_bytes()
    read, got = _timed(lambda: read_transcript(data, source.name))
    summarize, summary = _timed(lambda: extractive_summary(
        got.turns, parent_summary=None, focus=None, max_words=600, fallback=False))

    def write() -> None:
        store = SessionStore(sessions)
        live = store.new_session(agent_key="bench", agent="Bench", agent_path="", model="m",
                                 provider="claude-code", now=got.turns[0].started)
        try:
            for turn in got.turns:
                live.append_turn(turn, "Bench")
            store.finalize(live.session_id, summary, total_queries=len(got.turns),
                           total_tokens=0)
        finally:
            live.close()

    save, _ = _timed(write)
    return {"read": read, "summary": summarize, "write": save, "turns": len(got.turns),
            "calls": sum(len(t.tools) for t in got.turns)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="1,3,10,50")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--dir", type=Path, default=None)
    args = parser.parse_args()
    work = Path(args.dir or tempfile.mkdtemp(prefix="bench_import_"))
    config = work / "rollchat.yml"
    config.write_text("agents:\n  assistant:\n    provider: offline\n", encoding="utf-8")
    cases = [("real 2.7 MB", SEED)]
    for size in (float(s) for s in args.sizes.split(",")):
        path = work / f"claude-{size:g}MB.jsonl"
        make_file(path, size)
        cases.append((f"{size:g} MB", path))
    print("| file | bytes | turns | tool calls | import --local-summary, median (min) | "
          "peak memory | read | local summary | write |")
    print("|---|---|---|---|---|---|---|---|---|")
    for label, path in cases:
        runs = [run_cli(path, work / "sessions", config) for _ in range(args.runs)]
        times = [t for t, _ in runs]
        part = phases(path, work / "phases")
        print(f"| {label} | {path.stat().st_size:,} | {part['turns']:,} | {part['calls']:,} | "
              f"{statistics.median(times):.2f} s ({min(times):.2f} s) | "
              f"{max(m for _, m in runs) / 1024:,.0f} MiB | {part['read']:.2f} s | "
              f"{part['summary']:.2f} s | {part['write']:.2f} s |", flush=True)


if __name__ == "__main__":
    main()
