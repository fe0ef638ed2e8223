"""What an agent file costs: loading one (pydantic and docstring_parser imported, the file
run, every tool's schema built) in a fresh interpreter, and the per-call overhead of
validating arguments through the tool's pydantic model.

Usage: python bench/bench_agent_file.py [--runs N] [--calls N]
The bare `rollchat` path never pays the load (tests/cli/test_startup.py checks pydantic is not
imported before the first prompt); only `rollchat agent.py` does, before its prompt.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

AGENT = Path(__file__).resolve().parents[1] / "examples" / "notes_agent" / "agent.py"
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
LOAD = ("import time; t0 = time.perf_counter(); from pathlib import Path; "
        "from rollchat.agents.file import load_agent_file; "
        f"a = load_agent_file(Path({str(AGENT)!r})); "
        "print(time.perf_counter() - t0, len(a.tools))")
BASE = ("import time; t0 = time.perf_counter(); import rollchat.config.settings; "
        "print(time.perf_counter() - t0, 0)")


def _in_fresh_interpreter(code: str) -> float:
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True,
                         text=True, env=ENV, cwd=AGENT.parent).stdout.split()
    return float(out[0])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--calls", type=int, default=20000)
    args = parser.parse_args()
    _in_fresh_interpreter(LOAD)  # warm the byte-code caches
    base = [_in_fresh_interpreter(BASE) for _ in range(args.runs)]
    load = [_in_fresh_interpreter(LOAD) for _ in range(args.runs)]
    print(f"import rollchat.config.settings        median {statistics.median(base) * 1000:7.1f} ms")
    print(f"load the example agent file  median {statistics.median(load) * 1000:7.1f} ms   "
          f"min {min(load) * 1000:7.1f} ms  (3 tools, pydantic + docstring_parser imported)")

    from rollchat.tools.python import function_tool

    def find(query: str, limit: int = 5) -> str:
        """Find.

        Args:
            query: Words.
            limit: At most.
        """
        return query

    tool = function_tool(find)
    arguments = {"query": "wifi password", "limit": 3}
    t0 = time.perf_counter()
    for _ in range(args.calls):
        tool.run(arguments)
    validated = (time.perf_counter() - t0) / args.calls
    t0 = time.perf_counter()
    for _ in range(args.calls):
        find(**arguments)  # type: ignore[arg-type]
    bare = (time.perf_counter() - t0) / args.calls
    print(f"one call, validated          {validated * 1e6:7.1f} µs   "
          f"(the function alone: {bare * 1e6:.2f} µs)")


if __name__ == "__main__":
    main()
