"""Enter to the first streamed word for a framework agent: the framework called directly
(Strands ``stream_async``, the Agents SDK's ``Runner.run_streamed``) against rollchat's Engine
running the same agent through its adapter (the Runner seam, the bridge's event loop thread),
both against the local wire server; and each framework's import time.

    .venv/bin/python bench/bench_frameworks.py --runs 15
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.framework_agents import OPENAI_AGENT, STRANDS_AGENT
from tests.wire_servers import OpenAIDialect, WireServer

LOOP = asyncio.new_event_loop()  # one loop for the direct calls, as a framework's own app has


class Stopwatch:
    """Enter to the first word: the wall time (``stop`` returns it) and the process's CPU
    time (``cpu``: every thread's, the wire server's too, the same for both sides), which the
    machine's load moves less than the wall time."""

    def __init__(self) -> None:
        self.wall = self.cpu = 0.0

    def start(self) -> None:
        self.wall, self.cpu = time.perf_counter(), time.process_time()

    def stop(self) -> float:
        self.cpu = time.process_time() - self.cpu
        return time.perf_counter() - self.wall


WATCH = Stopwatch()


def build(source: str, url: str) -> Any:
    os.environ["WIRE_URL"] = url
    scope: dict[str, Any] = {}
    exec(compile(source, "agent.py", "exec"), scope)
    return scope.get("root_agent") or scope["agent"]


def direct_strands(agent: Any) -> float:
    async def first() -> float:
        agent.messages = []
        WATCH.start()
        async for event in agent.stream_async("hello"):
            if isinstance(event, dict) and event.get("data"):
                took = WATCH.stop()
                break
        return took
    return LOOP.run_until_complete(first())


def direct_agents(agent: Any) -> float:
    from agents import RunConfig, Runner

    async def first() -> float:
        WATCH.start()
        result = Runner.run_streamed(agent, "hello",
                                     run_config=RunConfig(tracing_disabled=True))
        async for event in result.stream_events():
            if getattr(event, "type", "") == "raw_response_event" and \
                    getattr(event.data, "type", "") == "response.output_text.delta":
                took = WATCH.stop()
                result.cancel()
                break
        return took
    return LOOP.run_until_complete(first())


def via_rollchat(engine: Any) -> float:
    from rollchat.providers.base import TextDelta

    engine.clear()
    WATCH.start()
    flow = engine.chat("hello")
    took = 0.0
    try:
        while True:
            event = next(flow)
            if isinstance(event, TextDelta) and event.text.strip():
                took = WATCH.stop()
                break
        for _ in flow:
            pass
    except StopIteration:
        pass
    return took


def engine_for(agent: Any, source_name: str) -> Any:
    from rollchat.agents.frameworks import adapt
    from rollchat.engine.core import Engine, EngineSettings
    from rollchat.providers.base import RetryPolicy

    framework = adapt(agent, source_name, "agent.py")
    return Engine(EngineSettings(framework.provider, model=framework.model, system="sys",
                                 max_output_tokens=100, temperature=None,
                                 retry=RetryPolicy(max_retries=0), runner=framework.runner))


def import_time(module: str) -> float:
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", f"import {module}"], check=True)
    return time.perf_counter() - t0


def compare(label: str, direct: Callable[[Any], float], plain: Any, engine: Any, module: str,
            runs: int) -> None:
    """The first word of ``plain`` called directly against ``engine`` running its twin, runs
    interleaved (medians of Stopwatch's two figures), and the framework's import time; one
    line printed."""
    direct(plain), via_rollchat(engine)  # warm: imports, connections
    wall: dict[str, list[float]] = {"direct": [], "rollchat": []}
    cpu: dict[str, list[float]] = {"direct": [], "rollchat": []}
    for _ in range(runs):  # interleaved
        for key, call in (("direct", lambda: direct(plain)),
                          ("rollchat", lambda: via_rollchat(engine))):
            wall[key].append(call())
            cpu[key].append(WATCH.cpu)
    da, db = (statistics.median(wall[k]) * 1000 for k in ("direct", "rollchat"))
    ca, cb = (statistics.median(cpu[k]) * 1000 for k in ("direct", "rollchat"))
    imports = statistics.median(import_time(module) for _ in range(3)) * 1000
    floor = statistics.median(import_time("sys") for _ in range(3)) * 1000
    print(f"{label}: first word direct {da:.1f} ms, via rollchat {db:.1f} ms "
          f"({(db / da - 1) * 100:+.0f}%); CPU to the first word direct {ca:.1f} ms, via rollchat "
          f"{cb:.1f} ms; import {imports:.0f} ms (python -c 'import sys': {floor:.0f} ms)",
          flush=True)


def installed(module: str) -> bool:
    import importlib.util

    if importlib.util.find_spec(module.split(".")[0]) is None:
        print(f"{module}: not installed, skipped", flush=True)
        return False
    return True


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=15)
    runs = parser.parse_args().runs
    with WireServer(OpenAIDialect()) as server:
        for label, source, direct, module in (
                ("strands", STRANDS_AGENT, direct_strands, "strands"),
                ("openai-agents", OPENAI_AGENT, direct_agents, "agents")):
            if installed(module):
                plain, adapted = build(source, server.url), build(source, server.url)
                compare(label, direct, plain, engine_for(adapted, "root_agent"), module, runs)


if __name__ == "__main__":
    main()
