"""Enter to the first streamed word for the Pydantic AI and LangGraph example agents: the
framework called directly (``run_stream_events``, ``astream`` of the graph) against rollchat's
Engine running the same agent through its adapter, both against the local wire server; and
each framework's import time (bench_frameworks.py does Strands and the Agents SDK).

    .venv/bin/python bench/bench_frameworks_more.py --runs 15
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.bench_frameworks import WATCH, compare, engine_for, installed  # noqa: E402
from tests.wire_servers import OpenAIDialect, WireServer  # noqa: E402


def on_loop(work: Any) -> float:
    """The direct call runs on rollchat's shared loop too: langchain-openai keeps one cached
    httpx client per process, bound to the first loop that used it, so two loops in one
    process would break the second."""
    from rollchat.agents.frameworks.bridge import shared_loop

    took: float = asyncio.run_coroutine_threadsafe(work(), shared_loop()).result(60)
    return took


def build(example: str, name: str) -> Any:
    scope: dict[str, Any] = {}
    path = ROOT / "examples" / example / "agent.py"
    exec(compile(path.read_text(encoding="utf-8"), str(path), "exec"), scope)
    return scope[name]


def direct_pydantic_ai(agent: Any) -> float:
    from pydantic_ai import messages as pm

    async def first() -> float:
        WATCH.start()
        async with agent.run_stream_events("hello") as run:
            async for event in run:
                if isinstance(event, (pm.PartStartEvent, pm.PartDeltaEvent)):
                    took = WATCH.stop()
                    break
            run.cancel()
        return took
    return on_loop(first)


def direct_langgraph(graph: Any) -> float:
    from langchain_core.messages import HumanMessage

    async def first() -> float:
        WATCH.start()
        stream = graph.astream({"messages": [HumanMessage("hello")]}, stream_mode="messages")
        async for chunk, _ in stream:
            if getattr(chunk, "content", ""):
                took = WATCH.stop()
                break
        await stream.aclose()
        return took
    return on_loop(first)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=15)
    runs = parser.parse_args().runs
    with WireServer(OpenAIDialect()) as server:
        os.environ.update(OPENAI_BASE_URL=server.url, OPENAI_API_KEY="bench")
        for label, example, name, direct, module in (
                ("pydantic-ai", "pydantic_ai_agent", "agent", direct_pydantic_ai,
                 "pydantic_ai"),
                ("langgraph", "langgraph_agent", "root_agent", direct_langgraph,
                 "langchain.agents")):
            if installed(module):
                plain, adapted = build(example, name), build(example, name)
                compare(label, direct, plain, engine_for(adapted, name), module, runs)


if __name__ == "__main__":
    main()
