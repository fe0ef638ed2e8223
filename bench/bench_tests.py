"""Where the test suite's time goes, in CPU seconds rather than wall time: each test's own CPU
(the pytest process: in-process chats, wire servers, hypothesis) and its children's (every
rollchat, MCP server or helper it started and waited for), so a ranking made on a machine
shared with other work still holds (wall time there measures the load, not the test).

Usage: python bench/bench_tests.py [--top N] PYTEST_ARGS...
  e.g. python bench/bench_tests.py --top 30 tests/cli/test_oneshot_wire.py tests/storage
Runs pytest in this process, one test at a time (-n 0), then prints the N most costly tests
(own CPU, children's CPU, wall), the totals, and the modules by their summed CPU.
Children's CPU includes the tests' fork server (tests/forkserver.py: its own CPU and its
children's, which are not this process's children) and the MCP test servers' zygote
(tests/mcp_helpers.py's zygote_cpu: the same); ROLLCHAT_TESTS_NO_FORKSERVER=1 to compare
without them.
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
from collections import defaultdict
from collections.abc import Iterator
from typing import Any

import pytest


def _cpu(who: int) -> float:
    usage = resource.getrusage(who)
    seconds = usage.ru_utime + usage.ru_stime
    forkserver = sys.modules.get("tests.forkserver")  # (imported by the tests' conftest)
    if who == resource.RUSAGE_CHILDREN and forkserver is not None:
        seconds += forkserver.cpu_seconds()
    mcp = sys.modules.get("tests.mcp_helpers")  # (its MCP server zygote, the same way)
    if who == resource.RUSAGE_CHILDREN and mcp is not None:
        seconds += mcp.zygote_cpu()
    return seconds


class Recorder:
    """A pytest plugin: (node id, own CPU, children's CPU, wall) of each test run."""

    def __init__(self) -> None:
        self.rows: list[tuple[str, float, float, float]] = []

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item: pytest.Item, nextitem: Any) -> Iterator[None]:
        own, children = _cpu(resource.RUSAGE_SELF), _cpu(resource.RUSAGE_CHILDREN)
        start = time.monotonic()
        yield
        self.rows.append((item.nodeid, _cpu(resource.RUSAGE_SELF) - own,
                          _cpu(resource.RUSAGE_CHILDREN) - children, time.monotonic() - start))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--top", type=int, default=40)
    args, rest = parser.parse_known_args()
    recorder = Recorder()
    status = pytest.main(["-n", "0", "-p", "no:randomly", *rest], plugins=[recorder])
    rows = sorted(recorder.rows, key=lambda r: -(r[1] + r[2]))
    print(f"\n{'own':>7} {'children':>9} {'wall':>7}  test (CPU seconds)")
    for nodeid, own, children, wall in rows[:args.top]:
        print(f"{own:7.1f} {children:9.1f} {wall:7.1f}  {nodeid}")
    modules: dict[str, float] = defaultdict(float)
    for nodeid, own, children, _ in rows:
        modules[nodeid.split("::")[0]] += own + children
    print(f"\n{len(rows)} tests: own {sum(r[1] for r in rows):.1f} s, children "
          f"{sum(r[2] for r in rows):.1f} s, wall {sum(r[3] for r in rows):.1f} s")
    for module, cpu in sorted(modules.items(), key=lambda m: -m[1])[:args.top]:
        print(f"{cpu:7.1f}  {module}")
    forkserver = sys.modules.get("tests.forkserver")
    print(f"fork server: {dict(forkserver.STATS) if forkserver else {}}")
    return int(status)


if __name__ == "__main__":
    sys.exit(main())
