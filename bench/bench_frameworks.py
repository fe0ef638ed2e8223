"""Enter to the first streamed word for a framework agent: the framework called directly
(Strands ``stream_async``, the Agents SDK's ``Runner.run_streamed``, Pydantic AI's
``run_stream_events``) against rollchat's Engine running the same agent through its adapter
(the Runner seam, the bridge), both against the local wire server; and each framework's import
time. ``--history N``: each turn comes after N earlier exchanges (a question, a tool call, its
result, an answer), given to the direct call in the framework's own messages (made once, as an
app keeps its history) and to rollchat as its working context.

    .venv/bin/python bench/bench_frameworks.py --runs 15 [--history 25] [--only openai-agents]
        [--no-imports]
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.framework_agents import OPENAI_AGENT, PYDANTIC_AI_AGENT, STRANDS_AGENT
from tests.wire_servers import OpenAIDialect, WireServer

LOOP = asyncio.new_event_loop()  # one loop for the direct calls, as a framework's own app has


class Stopwatch:
    """Enter to the first word: the wall time (``stop`` returns it), the process's CPU time
    (``cpu``: every thread's, the wire server's too, the same for both sides), which the
    machine's load moves less than the wall time, and this thread's (``mine``: the run's own,
    the framework's loop runs on it both ways; without the wire server's)."""

    def __init__(self) -> None:
        self.wall = self.cpu = self.mine = 0.0

    def start(self) -> None:
        self.wall, self.cpu = time.perf_counter(), time.process_time()
        self.mine = time.thread_time()

    def stop(self) -> float:
        self.cpu, self.mine = time.process_time() - self.cpu, time.thread_time() - self.mine
        return time.perf_counter() - self.wall


WATCH = Stopwatch()


def build(source: str, url: str) -> Any:
    os.environ["WIRE_URL"] = url
    scope: dict[str, Any] = {}
    exec(compile(source, "agent.py", "exec"), scope)
    return scope.get("root_agent") or scope["agent"]


def direct_strands(agent: Any, history: list[Any]) -> float:
    async def first() -> float:
        agent.messages = copy.deepcopy(history)  # Strands appends to it
        WATCH.start()
        async for event in agent.stream_async("hello"):
            if isinstance(event, dict) and event.get("data"):
                took = WATCH.stop()
                break
        return took
    return LOOP.run_until_complete(first())


def direct_agents(agent: Any, history: list[Any]) -> float:
    from agents import RunConfig, Runner

    async def first() -> float:
        WATCH.start()
        items: Any = [*history, {"role": "user", "content": "hello"}] if history else "hello"
        result = Runner.run_streamed(agent, items,
                                     run_config=RunConfig(tracing_disabled=True))
        async for event in result.stream_events():
            if getattr(event, "type", "") == "raw_response_event" and \
                    getattr(event.data, "type", "") == "response.output_text.delta":
                took = WATCH.stop()
                result.cancel()
                break
        return took
    return LOOP.run_until_complete(first())


def direct_pydantic_ai(agent: Any, history: list[Any]) -> float:
    from pydantic_ai import messages as pm

    def text(event: object) -> bool:
        if isinstance(event, pm.PartStartEvent):
            return isinstance(event.part, pm.TextPart) and bool(event.part.content)
        return isinstance(event, pm.PartDeltaEvent) and isinstance(
            event.delta, pm.TextPartDelta) and bool(event.delta.content_delta)

    async def first() -> float:
        took = 0.0
        WATCH.start()
        async with agent.run_stream_events("hello", message_history=history) as run:
            async for event in run:
                if text(event):
                    took = WATCH.stop()
                    break
        return took
    return LOOP.run_until_complete(first())


def earlier(exchanges: int) -> tuple[Any, ...]:
    """``exchanges`` earlier exchanges as rollchat's messages: a question, a word_count call,
    its result, an answer."""
    from rollchat.domain import Message, ToolCall

    out: list[Message] = []
    for k in range(exchanges):
        call = ToolCall(f"call_{k}", "word_count", {"text": f"count the words of line {k}"})
        out += [Message("user", f"question {k}: how many words in line {k}?"),
                Message("assistant", "", (call,)),
                Message("tool", "6 words", tool_call_id=call.id, name="word_count"),
                Message("assistant", f"Line {k} has 6 words. " * 8)]
    return tuple(out)


def via_rollchat(engine: Any, context: Any) -> float:
    """``context``: the working context each turn starts from (a copy of it)."""
    from rollchat.providers.base import TextDelta

    engine.context.revert_to(context.copy())
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


def compare(label: str, direct: Callable[[Any, list[Any]], float], plain: Any, engine: Any,
            module: str, runs: int, history: tuple[Any, ...], converted: list[Any],
            imports: bool = True) -> None:
    """The first word of ``plain`` called directly (after ``converted``, the framework's own
    form of ``history``) against ``engine`` running its twin (after ``history``), runs
    interleaved (medians of Stopwatch's two figures), and the framework's import time; one
    line printed."""
    engine.context.reset(history, prefix_len=0)
    context = engine.context.copy()
    direct(plain, converted), via_rollchat(engine, context)  # warm: imports, connections
    wall: dict[str, list[float]] = {"direct": [], "rollchat": []}
    cpu: dict[str, list[float]] = {"direct": [], "rollchat": []}
    mine: dict[str, list[float]] = {"direct": [], "rollchat": []}
    for _ in range(runs):  # interleaved
        for key, call in (("direct", lambda: direct(plain, converted)),
                          ("rollchat", lambda: via_rollchat(engine, context))):
            wall[key].append(call())
            cpu[key].append(WATCH.cpu)
            mine[key].append(WATCH.mine)
    da, db = (statistics.median(wall[k]) * 1000 for k in ("direct", "rollchat"))
    ca, cb = (statistics.median(cpu[k]) * 1000 for k in ("direct", "rollchat"))
    ta, tb = (statistics.median(mine[k]) * 1000 for k in ("direct", "rollchat"))
    said = ""
    if imports:
        took = statistics.median(import_time(module) for _ in range(3)) * 1000
        floor = statistics.median(import_time("sys") for _ in range(3)) * 1000
        said = f"; import {took:.0f} ms (python -c 'import sys': {floor:.0f} ms)"
    print(f"{label} (history {len(history)} messages): first word direct {da:.1f} ms, via "
          f"rollchat {db:.1f} ms ({(db / da - 1) * 100:+.0f}%); CPU to the first word direct "
          f"{ca:.1f} ms, via rollchat {cb:.1f} ms ({(cb / ca - 1) * 100:+.0f}%); the thread's "
          f"CPU direct {ta:.1f} ms, via rollchat {tb:.1f} ms ({(tb / ta - 1) * 100:+.0f}%){said}",
          flush=True)


def installed(module: str) -> bool:
    import importlib.util

    if importlib.util.find_spec(module.split(".")[0]) is None:
        print(f"{module}: not installed, skipped", flush=True)
        return False
    return True


def converter(label: str) -> Callable[[tuple[Any, ...]], list[Any]]:
    """The framework's own form of rollchat's messages (what its app would keep)."""
    if label == "strands":
        from rollchat.agents.frameworks.strands import to_strands
        return to_strands
    if label == "openai-agents":
        from rollchat.agents.frameworks.openai_agents import to_items
        return to_items
    from rollchat.agents.frameworks.pydantic_ai import to_messages
    return to_messages


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--history", type=int, default=0, help="earlier exchanges per turn")
    parser.add_argument("--only", action="append", default=None,
                        choices=("strands", "openai-agents", "pydantic-ai"))
    parser.add_argument("--no-imports", action="store_true", help="skip the import times")
    args = parser.parse_args()
    history = earlier(args.history)
    with WireServer(OpenAIDialect()) as server:
        for label, source, direct, module, name in (
                ("strands", STRANDS_AGENT, direct_strands, "strands", "root_agent"),
                ("openai-agents", OPENAI_AGENT, direct_agents, "agents", "agent"),
                ("pydantic-ai", PYDANTIC_AI_AGENT, direct_pydantic_ai, "pydantic_ai",
                 "agent")):
            if (args.only and label not in args.only) or not installed(module):
                continue
            plain, adapted = build(source, server.url), build(source, server.url)
            compare(label, direct, plain, engine_for(adapted, name), module, args.runs,
                    history, converter(label)(history), imports=not args.no_imports)


if __name__ == "__main__":
    main()
