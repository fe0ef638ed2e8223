"""Local work per turn (estimate, compaction check, hygiene, request building) with 10, 1,000
and 10,000 turns in the working context; the provider is a no-op that reports usage.

Run: /tmp/v/bin/python bench/bench_turns.py   (from the repository root)
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime, timezone

from rollchat.compaction.policy import plan
from rollchat.config.settings import AgentConfig, Config
from rollchat.domain import Message, ToolCall, Turn, Usage
from rollchat.engine.core import EngineSettings
from rollchat.providers.base import (
    ChatRequest,
    Done,
    RetryPolicy,
    StreamEvent,
    TextDelta,
    UsageEvent,
)
from rollchat.session.core import Session
from rollchat.storage.store import InMemoryStore

SIZES = (10, 1_000, 10_000)
REPEATS = 30


@dataclass
class NoOp:
    """Answers "ok" at once and reports a fixed prompt size."""

    name: str = "noop"

    def stream(self, request: ChatRequest) -> Iterator[StreamEvent]:
        return iter([TextDelta("ok"), UsageEvent(Usage(50_000, 2)), Done("end_turn")])


def history(turns: int) -> tuple[list[Message], list[Turn]]:
    """A working context of ``turns`` turns (every tenth with a tool call) and its turns."""
    now = datetime.now(timezone.utc)
    messages: list[Message] = []
    records: list[Turn] = []
    for i in range(turns):
        user = f"question {i}: how does the invoice retry queue handle charge {i}?"
        answer = f"answer {i}: it retries three times with backoff, then records the failure."
        messages.append(Message("user", user))
        if i % 10 == 0:
            call = ToolCall(f"call_{i}", "lookup", {"id": i})
            messages += [Message("assistant", "", tool_calls=(call,)),
                         Message("tool", "row " * 200, tool_call_id=call.id, name="lookup")]
        messages.append(Message("assistant", answer))
        records.append(Turn("query", i + 1, now, user, answer, usage=Usage(100, 20)))
    return messages, records


def build(turns: int) -> Session:
    agent = AgentConfig(key="bench", name="Bench", provider="openai", model="gpt-4o",
                        system_prompt="You are a benchmark.", max_output_tokens=1000)
    engine = EngineSettings(NoOp(), model="gpt-4o", system=agent.system_prompt,
                            max_output_tokens=1000, temperature=None,
                            retry=RetryPolicy(0, 0.0, 0.0))
    app = Session(config=Config(agents={"bench": agent}, default_agent="bench"), agent=agent,
                  engine_settings=engine, summary_provider=NoOp(), summary_model="gpt-4o",
                  provider_name="openai", store=InMemoryStore(), confirm=lambda q: False,
                  context_window=10**9)
    messages, records = history(turns)
    app.engine.context.messages = messages
    app.engine.context.last_prompt_tokens = 50_000
    app.state.turns = records
    return app


def timed(action: Callable[[], object]) -> float:
    """Median milliseconds of ``action`` over REPEATS runs."""
    samples = []
    for _ in range(REPEATS):
        t0 = time.perf_counter()
        action()
        samples.append((time.perf_counter() - t0) * 1000)
    return statistics.median(samples)


def measure(turns: int) -> dict[str, float]:
    app = build(turns)
    pending = Message("user", "and what about charge 42?")
    ctx = app.engine.context
    parts = {
        "estimate": timed(lambda: app.estimate([pending])),
        "compaction plan (kept tail, expected size)": timed(
            lambda: plan(app.compactor.situation(app.state, pending))),
        "hygiene (incremental, per call)": timed(lambda: ctx.request_messages([pending])),
        "request building": timed(
            lambda: app.engine.request(ctx.request_messages([pending]))),
    }
    total = []
    for i in range(REPEATS):  # whole turns through Session.turn (the context grows by one)
        t0 = time.perf_counter()
        for _event in app.turn(f"follow-up {i}"):
            pass
        total.append((time.perf_counter() - t0) * 1000)
    parts["whole turn()"] = statistics.median(total)
    return parts


def main() -> int:
    results = {n: measure(n) for n in SIZES}
    names = list(results[SIZES[0]])
    print("| per turn, median ms | " + " | ".join(f"{n:,} turns" for n in SIZES) + " |")
    print("|---|" + "---|" * len(SIZES))
    for name in names:
        print(f"| {name} | " + " | ".join(f"{results[n][name]:.3f}" for n in SIZES) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
