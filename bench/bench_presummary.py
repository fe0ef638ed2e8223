"""How long the user waits at the turn that compacts, with and without the summaries made in
the background from 70% of the budget.

Run: /tmp/v/bin/python bench/bench_presummary.py   (from the repository root)
A fake provider answers in process with a latency model of a real one, scaled down 5x so the
bench runs in about a minute: summaries take 0.01 ms per prompt token and 2 ms per output
word, a chat answer 20 ms, and the user takes 200 ms to type the next message. Both variants
run on the same script; figures are wall-clock milliseconds.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.compaction.test_autocompact import COUNTER, FakeProvider, build_app, user_message

from rollchat.compaction import policy as policy_module
from rollchat.providers.base import ChatRequest, StreamEvent, TextDelta

THINK_SECONDS = 0.2


class Slow(FakeProvider):
    def stream(self, request: ChatRequest) -> Iterator[StreamEvent]:
        events = list(super().stream(request))
        prompt = COUNTER.count_messages(request.system, request.messages, request.tools)
        words = sum(len(e.text.split()) for e in events if isinstance(e, TextDelta))
        if request.purpose == "summary":
            time.sleep(prompt * 0.01 / 1000 + words * 0.002)
        else:
            time.sleep(0.020)
        return iter(events)


def wait_at_compaction(presummary: bool) -> list[float]:
    policy_module.PRESUMMARY_SHARE = 0.7 if presummary else 10.0
    waits = []
    with tempfile.TemporaryDirectory() as tmp:
        built = build_app(Path(tmp), Slow(summary_words=120))
        for i in range(120):
            time.sleep(THINK_SECONDS)  # the user reads the answer and types the next message
            before = len(built.compactions)
            t0 = time.perf_counter()
            built.send(user_message(i))
            if len(built.compactions) > before:
                waits.append((time.perf_counter() - t0) * 1000)
    return waits


def main() -> None:
    with_bg, without = wait_at_compaction(True), wait_at_compaction(False)
    for name, waits in (("without background summaries", without),
                        ("with background summaries", with_bg)):
        print(f"{name:<30} compactions {len(waits):2}  wait at the compacting turn: median "
              f"{statistics.median(waits):7.1f} ms  max {max(waits):7.1f} ms")


if __name__ == "__main__":
    main()
