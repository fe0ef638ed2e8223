"""Measure one tool call through a stdio MCP server (the SDK's MCPServer, as in
examples/mcp) against the same work as a local Python function, both through the Tool type
the engine calls (with a progress sink, as the chat has); plus the server's start-up (spawn,
handshake, tools/list) and stop.

Run: .venv/bin/python bench/bench_mcp.py [--calls 500]   (the figure that matters: the
per-call overhead, median and p95, in milliseconds)
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Mapping
from pathlib import Path

from rollchat.config.mcp_servers import check_server
from rollchat.providers.base import ToolSpec
from rollchat.tools import Tool
from rollchat.tools.mcp import McpServers

ROOT = Path(__file__).resolve().parents[1]
SERVER = ROOT / "tests" / "mcp_server.py"


def _local_add(arguments: Mapping[str, object]) -> str:
    a, b = arguments["a"], arguments["b"]
    assert isinstance(a, int) and isinstance(b, int)
    return str(a + b)


def _times(tool: Tool, calls: int) -> list[float]:
    out = []
    for i in range(calls):
        start = time.perf_counter()
        result = tool.run({"a": i, "b": 1})
        out.append(time.perf_counter() - start)
        assert result == str(i + 1), result
    return out


def _show(label: str, times: list[float]) -> None:
    ordered = sorted(times)
    p95 = ordered[int(len(ordered) * 0.95) - 1]
    print(f"{label:<28} median {statistics.median(times) * 1000:8.3f} ms   "
          f"p95 {p95 * 1000:8.3f} ms   ({len(times)} calls)")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=500)
    parser.add_argument("--starts", type=int, default=5)
    options = parser.parse_args()
    config = check_server("bench", {"command": sys.executable, "args": [str(SERVER)]},
                          base_dir=ROOT, origin="bench")
    starts = []
    for _ in range(options.starts):
        servers = McpServers([config], {})
        t0 = time.perf_counter()
        servers.start()
        tools, lines = servers.collect(wait=True)
        starts.append(time.perf_counter() - t0)
        assert not lines, lines
        servers.close()
    print(f"{'start (spawn+handshake+list)':<28} median {statistics.median(starts) * 1000:8.1f} ms"
          f"   ({options.starts} starts)")
    servers = McpServers([config], {}, on_progress=lambda tool, text: None)  # as the chat
    servers.start()
    tools, _ = servers.collect(wait=True)
    mcp_tool = tools["mcp__bench__add"]
    local = Tool(ToolSpec("add", "Add two integers."), _local_add)
    _times(mcp_tool, 20)  # warm up both sides
    local_times = _times(local, options.calls)
    mcp_times = _times(mcp_tool, options.calls)
    _show("local Python function", local_times)
    _show("stdio MCP tool", mcp_times)
    overhead = statistics.median(mcp_times) - statistics.median(local_times)
    print(f"overhead of one stdio MCP call: {overhead * 1000:.3f} ms (median)")
    t0 = time.perf_counter()
    servers.close()
    print(f"stop (close + wait for exit)   {(time.perf_counter() - t0) * 1000:.1f} ms")


if __name__ == "__main__":
    main()
