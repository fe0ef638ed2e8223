"""Adversarial scale (issue 33, item 5): sessions of many near-identical phrases, each stage
in a fresh process and timed: the local summary of 500 / 8,000 / 50,000 such turns, importing
a 1,000,000-line Claude Code file and a 500,000-turn markdown chat, then ``show`` and
``compact --refresh`` of the session that import made (about 100 MB). This tree beside
another (``--old SRC``: e.g. main's src exported with ``git archive``), side by side.

Run: .venv/bin/python bench/bench_scale.py [--old /tmp/rollchat-old/src] [--sizes 500 8000 50000]
     [--lines 1000000] [--md-turns 500000] [--timeout 300] [--only summary import show]
"""

# The phrases: every prompt and reply is a template filled with words drawn from a vocabulary
# of 20 ("please make the parser cache index tool work with the reader table writer again"),
# so every word is common, most pairs of phrases share half their words or more, few are
# near-duplicates: the case where an index on rare words finds no rare word to file under.

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WHEN = datetime(2026, 12, 1, 12, 0, tzinfo=timezone.utc)
LOAD = ("import sys; from pathlib import Path; from rollchat.storage.store import SessionStore;"
        "SessionStore(Path(sys.argv[1])).load_transcript(sys.argv[2])")
VOCABULARY = ("parser", "exporter", "session", "formatter", "cache", "index", "header", "tool",
              "reader", "writer", "picker", "render", "loader", "config", "schema", "queue",
              "table", "column", "field", "record")


def phrases(i: int, rng: random.Random) -> tuple[str, str]:
    """Turn ``i``'s prompt and reply: near-identical templates, a to-do every 5th, a decision
    in every reply."""
    words = rng.sample(VOCABULARY, 7)
    user = f"please make the {' '.join(words[:4])} work with the {' '.join(words[4:])} again."
    if i % 5 == 0:
        user += f" We still need to update the {' '.join(rng.sample(VOCABULARY, 4))} module."
    reply = (f"We decided to keep the {' '.join(rng.sample(VOCABULARY, 6))} as it is. "
             f"I'll update the {' '.join(rng.sample(VOCABULARY, 5))} first.")
    return user, reply


def turns(count: int) -> list:  # type: ignore[type-arg]
    from rollchat.domain import Turn, answer_blocks

    rng = random.Random(count)
    out = []
    for i in range(count):
        user, reply = phrases(i, rng)
        out.append(Turn("query", i + 1, WHEN, user, answer_blocks(reply)))
    return out


def write_jsonl(path: Path, lines: int) -> None:
    """A Claude Code file of ``lines`` lines: in each twelve, a prompt, its answer and ten of
    the tool's own progress lines (so that a million lines stay under the import's 64 MiB)."""
    rng = random.Random(lines)
    with open(path, "w", encoding="utf-8") as f:
        for n in range(lines):
            i, kind = divmod(n, 12)
            stamp = (WHEN + timedelta(seconds=n)).strftime("%Y-%m-%dT%H:%M:%SZ")
            if kind == 0:
                user, reply = phrases(i, rng)
                line = {"type": "user", "timestamp": stamp,
                        "message": {"role": "user", "content": user}}
            elif kind == 1:
                line = {"type": "assistant", "timestamp": stamp,
                        "message": {"role": "assistant",
                                    "content": [{"type": "text", "text": reply}]}}
            else:
                line = {"type": "progress", "n": n}
            f.write(json.dumps(line, separators=(",", ":")) + "\n")


def write_markdown(path: Path, count: int) -> None:
    rng = random.Random(count)
    with open(path, "w", encoding="utf-8") as f:
        for i in range(count):
            user, reply = phrases(i, rng)
            f.write(f"## User\n\n{user}\n\n## Assistant\n\n{reply}\n\n")


def summary_worker(count: int) -> dict[str, float]:
    from rollchat.compaction.extractive import extractive_summary

    session = turns(count)
    start = time.perf_counter()
    summary = extractive_summary(session, parent_summary=None, focus=None, max_words=500,
                                 fallback=True)
    return {"seconds": time.perf_counter() - start, "topics": len(summary.topics),
            "decisions": len(summary.decisions), "pending": len(summary.pending)}


def timed(src: Path, command: list[str], timeout: float) -> tuple[float | None, str]:
    """``command`` in a fresh process whose rollchat is ``src``: (seconds or None on timeout
    or failure, its last output line or why)."""
    env = {**os.environ, "PYTHONPATH": f"{src}{os.pathsep}{ROOT}", "NO_COLOR": "1"}
    start = time.perf_counter()
    try:
        done = subprocess.run(command, env=env, capture_output=True, text=True,
                              timeout=timeout, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return None, f"did not finish in {timeout:.0f} s"
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        return None, f"exit {done.returncode}: {(done.stderr.strip().splitlines() or [''])[-1]}"
    return seconds, (done.stdout.strip().splitlines() or [""])[-1]


def cell(result: tuple[float | None, str]) -> str:
    seconds, said = result
    return said if seconds is None else f"{seconds:.2f} s"


def rollchat(*args: str) -> list[str]:
    return [sys.executable, "-m", "rollchat", *args]


def bench_summary(trees: dict[str, Path], sizes: list[int], timeout: float) -> None:
    print("| turns | " + " | ".join(trees) + " |")
    print("| --- |" + " --- |" * len(trees))
    for count in sizes:
        cells = []
        for src in trees.values():
            seconds, said = timed(src, [sys.executable, __file__, "--worker", str(count)],
                                  timeout)
            if seconds is None:
                cells.append(said)
            else:
                got = json.loads(said)
                cells.append(f"{got['seconds']:.2f} s ({got['topics']} topics, "
                             f"{got['decisions']} decisions, {got['pending']} pending)")
        print(f"| {count:,} | " + " | ".join(cells) + " |", flush=True)


def bench_files(trees: dict[str, Path], lines: int, md_turns: int, timeout: float,
                stages: list[str]) -> None:
    with tempfile.TemporaryDirectory(prefix="bench-scale-") as tmp:
        work = Path(tmp)
        config = work / "rollchat.yml"
        config.write_text("agents:\n  assistant:\n    provider: offline\n", encoding="utf-8")
        big, md = work / "big.jsonl", work / "big.md"
        write_jsonl(big, lines)
        write_markdown(md, md_turns)
        print(f"files: {big.name} {lines:,} lines, {big.stat().st_size / 1e6:.1f} MB; "
              f"{md.name} {md_turns:,} turns, {md.stat().st_size / 1e6:.1f} MB\n")
        print("| stage | " + " | ".join(trees) + " |")
        print("| --- |" + " --- |" * len(trees))
        rows: dict[str, list[str]] = {}
        for name, src in trees.items():
            sessions = work / f"sessions-{name}"
            common = ["--sessions-dir", str(sessions), "--config", str(config)]
            runs = [(f"import {big.name} --local-summary", rollchat(
                "import", str(big), "--local-summary", "--again", *common))]
            runs.append((f"import {md.name} --local-summary", rollchat(
                "import", str(md), "--local-summary", "--again", *common)))
            for label, command in runs:
                if "import" in stages:
                    rows.setdefault(label, []).append(cell(timed(src, command, timeout)))
        made = sorted((p for p in work.glob("sessions-*/**/*.md")),
                      key=lambda p: p.stat().st_size)
        if made and "show" in stages:
            session = made[-1]  # the biggest session an import made, copied for each tree
            home = next(p for p in work.iterdir() if p.name.startswith("sessions-")
                        and session.is_relative_to(p))
            size = f"{session.stat().st_size / 1e6:.0f} MB"
            for name, src in trees.items():
                copy = work / f"show-{name}"
                shutil.copytree(home, copy)
                common = ["--sessions-dir", str(copy), "--config", str(config)]
                load = [sys.executable, "-c", LOAD, str(copy), session.stem]
                for label, command in (
                        (f"load_transcript, the parse of show ({size} session)", load),
                        (f"show ({size} session)", rollchat("show", session.stem, *common)),
                        (f"compact --refresh ({size} session)",
                         rollchat("compact", session.stem, "--refresh", *common))):
                    rows.setdefault(label, []).append(cell(timed(src, command, timeout)))
                shutil.rmtree(copy)
        for label, cells in rows.items():
            print(f"| `{label}` | " + " | ".join(cells) + " |", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--worker", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--old", type=Path, help="another tree's src to run beside this one")
    parser.add_argument("--sizes", type=int, nargs="*", default=[500, 8000, 50000])
    parser.add_argument("--lines", type=int, default=1_000_000)
    parser.add_argument("--md-turns", type=int, default=500_000)
    parser.add_argument("--timeout", type=float, default=300.0)
    parser.add_argument("--only", nargs="*", default=["summary", "import", "show"])
    parser.add_argument("--old-stages", nargs="*", default=["summary", "import", "show"],
                        help="the stages --old runs (its imports do not finish: --old-stages "
                             "summary)")
    args = parser.parse_args()
    if args.worker is not None:
        print(json.dumps(summary_worker(args.worker)))
        return
    trees = {"this tree": ROOT / "src"}
    if args.old:
        trees["--old"] = args.old
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, Python "
          f"{platform.python_version()}, {platform.platform()}, load {os.getloadavg()[0]:.1f}\n")
    if "summary" in args.only:
        bench_summary(trees, args.sizes, args.timeout)
        print()
    if "import" in args.only or "show" in args.only:
        if "import" not in args.old_stages:
            trees.pop("--old", None)
        bench_files(trees, args.lines, args.md_turns, args.timeout, args.only)


if __name__ == "__main__":
    main()
