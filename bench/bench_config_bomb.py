"""Measure loading hostile config files: the merge-key bomb, an alias bomb, and the largest files
the size cap lets through (the shapes slowest to parse), each in a fresh process.

Run: .venv/bin/python bench/bench_config_bomb.py [--timeout S]
Reports per case: wall time of load_config in the child, its peak RSS, and the first line of
the outcome. Run it with PYTHONPATH pointing at another tree's src/ to compare before/after.
(goal: every case refused or loaded in well under a second, in a few tens of MB)
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

CHILD = r"""
import json, resource, sys, time
from pathlib import Path
from rollchat.config.load import load_config
from rollchat.errors import ConfigError
path = Path(sys.argv[1])
start = time.perf_counter()
try:
    load_config(config_path=path, env={}, cwd=path.parent, user_config_dir=path.parent / "u")
    outcome = "loaded"
except ConfigError as exc:
    outcome = str(exc)
elapsed = time.perf_counter() - start
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"seconds": elapsed, "rss_kb": rss, "outcome": outcome}))
"""


def merge_bomb(width: int = 9, levels: int = 8) -> str:
    lines = ["a0: &a0 {" + ", ".join(f"k{i}: 1" for i in range(width)) + "}"]
    for level in range(1, levels):
        lines.append(f"a{level}: &a{level} {{<<: [" + ", ".join([f"*a{level - 1}"] * width)
                     + "]}")
    return "\n".join([*lines, f"<<: *a{levels - 1}"]) + "\n"


def agents_merge_bomb() -> str:
    """The bomb where a valid config has merges: under agents, no unknown key until flattened."""
    lines = ["agents:", "  b0: &b0 {provider: offline, max_output_tokens: 1, name: x}"]
    for level in range(1, 8):
        lines.append(f"  b{level}: &b{level} {{<<: [" + ", ".join([f"*b{level - 1}"] * 9)
                     + "]}")
    return "\n".join(lines) + "\n"


def alias_bomb() -> str:
    lines = ["l0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    lines += [f"l{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * 9) + "]" for i in range(1, 10)]
    return "\n".join(lines) + "\n"


def filled(unit: str, size: int, head: str = "", tail: str = "") -> str:
    body = (unit * (size // len(unit) + 1))[: size - len(head) - len(tail) - 1]
    return head + body.rsplit("\n", 1)[0] + tail + "\n"


def cases(size: int) -> dict[str, str]:
    return {
        "merge-key bomb (top level)": merge_bomb(),
        "merge-key bomb (under agents)": agents_merge_bomb(),
        "alias bomb (lists of lists)": alias_bomb(),
        f"{size // 1024} KiB of comments": filled("# a comment line of some length\n", size),
        f"{size // 1024} KiB flow list": filled("{a: 1, b: [1, 2, 3]},\n", size,
                                                "session:\n  dir: [", "]"),
        f"{size // 1024} KiB of block entries": filled("  - [a, b, c, d]\n", size,
                                                       "session:\n  dir:\n"),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--timeout", type=float, default=120.0)
    parser.add_argument("--size", type=int, default=256 * 1024,
                        help="bytes for the large-file cases (default: the cap, 256 KiB)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        for name, text in cases(args.size).items():
            path = Path(tmp) / "case.yml"
            path.write_text(text, encoding="utf-8")
            try:
                done = subprocess.run([sys.executable, "-c", CHILD, str(path)],
                                      capture_output=True, text=True, timeout=args.timeout)
                result = json.loads(done.stdout)
                print(f"{name:32} {len(text.encode()):>8,} B  {result['seconds']:7.3f} s  "
                      f"{result['rss_kb'] / 1024:7.1f} MB  {result['outcome'][:90]}")
            except subprocess.TimeoutExpired:
                print(f"{name:32} {len(text.encode()):>8,} B  > {args.timeout:.0f} s (killed)")


if __name__ == "__main__":
    main()
