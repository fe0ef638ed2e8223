"""A longer kill loop than the suite's (tests/storage/test_rewrite_kill.py): a child saving three
turns of three large tool calls each through the session API is stopped inside a random one of
its large writes, after a random share of its bytes, and SIGKILLed; what is left is checked
(it parses; every call whose turn in progress was saved, and every saved turn, is kept whole).

Run: .venv/bin/python bench/bench_rewrite_kills.py [--kills 300] [--seed 24]
(before a change: PYTHONPATH=<a copy of the old src> to count the old store's failures)
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.e2e import clean_env
from tests.storage import test_rewrite_kill as loop

from rollchat.errors import TranscriptError


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--kills", type=int, default=300)
    parser.add_argument("--seed", type=int, default=24)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    base = Path(tempfile.mkdtemp())
    env = {**clean_env(base / "home"), "PYTHONPATH": os.environ.get("PYTHONPATH", "")}
    found: Counter[str] = Counter()
    start = time.monotonic()
    for kill in range(args.kills):
        cwd = base / f"k{kill}"
        cwd.mkdir()
        stop = f"{rng.randint(1, loop.API_WRITES)}:{rng.random():.4f}"
        events = loop._kill_inside_a_write(cwd, {**env, "SEED": str(kill)}, loop.API, stop)
        files = list((cwd / "sessions").glob("*.md"))
        try:
            if files:
                loop._check(files[0], events)
            found["kept"] += 1
        except TranscriptError:
            found["unparseable"] += 1
        except AssertionError:
            found["lost a completed call or turn"] += 1
    print(f"{args.kills} kills in {time.monotonic() - start:.1f} s: {dict(found)} ({base})")


if __name__ == "__main__":
    main()
