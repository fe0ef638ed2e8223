"""What one large tool result costs in the chat and in the readers of its session (issue 36
item 7): the CPU seconds of each step a result of N MB (lines of 91 characters, as
tests/storage/test_large_sessions.py's tool returns) passes through, in this process:
``clean`` (where tool output enters; also of 1 MB of control bytes, as that file's import
holds), ``as_sent`` (cut to the room the offline model's context leaves), ``render_turn``
(the session file's text of the turn), ``parse`` (the file read back) and ``harmless``
(the result on its way to the terminal: ``rollchat show``).

    python bench/bench_large_result.py [--mb 35] [--room 100000] [--runs 3]
"""

from __future__ import annotations

import argparse
import resource
from collections.abc import Callable
from datetime import datetime, timezone

from rollchat.domain import SessionHeader, ToolCall, ToolExchange, Turn, answer_blocks
from rollchat.engine.hygiene import as_sent
from rollchat.models.tokens import TokenCounter
from rollchat.storage.transcript import parse, render_header, render_turn
from rollchat.text.normalize import clean
from rollchat.ui.sanitize import harmless

T0 = datetime(2026, 11, 25, 23, 0, tzinfo=timezone.utc)


def cpu() -> float:
    used = resource.getrusage(resource.RUSAGE_SELF)
    return used.ru_utime + used.ru_stime


def best(runs: int, step: Callable[[], object]) -> float:
    """The least CPU seconds of ``runs`` runs of ``step``."""
    times = []
    for _ in range(runs):
        started = cpu()
        step()
        times.append(cpu() - started)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mb", type=float, default=35.0)
    parser.add_argument("--room", type=int, default=100_000, help="tokens the result may take")
    parser.add_argument("--runs", type=int, default=3)
    options = parser.parse_args()
    line = "abcdefghij" * 9 + "\n"
    result = "R1:\n" + line * int(options.mb * 1e6 // len(line)) + ":end1"
    count = TokenCounter("offline").count_text
    turn = Turn("query", 1, T0, "use big 1",
                answer_blocks("done", (ToolExchange(ToolCall("c1", "big", {"n": 1}), result),)))
    header = SessionHeader(session_id="worker_20261125_230000_0001", date=T0, agent="Worker",
                           agent_path="worker.py", model="offline", provider="offline")
    text = render_header(header) + render_turn(turn, "Worker") + render_turn(turn, "Worker")
    controls = "".join(map(chr, [*range(1, 9), 11, 12, *range(14, 32), 127])) * 33_334
    steps: dict[str, Callable[[], object]] = {
        "clean": lambda: clean(result),
        "clean (1 MB of control bytes)": lambda: clean(controls),
        f"as_sent (room {options.room:,})": lambda: as_sent(result, "c1", options.room, count),
        "render_turn": lambda: render_turn(turn, "Worker"),
        f"parse ({len(text) / 1e6:.0f} MB, 2 turns)": lambda: parse(text),
        "harmless": lambda: harmless(result),
    }
    print(f"| step ({options.mb:g} MB result) | CPU s |")
    print("|---|---|")
    for name, step in steps.items():
        print(f"| {name} | {best(options.runs, step):.3f} |")


if __name__ == "__main__":
    main()
