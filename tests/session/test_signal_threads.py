"""Ctrl-C and the ending signals blocked in the chat's threads that start no program and may
run while the main thread waits on the network (interrupts.start_worker's rule: one handed to
such a thread only sets Python's flag, and a main thread asleep in a read would not see it
until the read ended): the warm-up after the chat's build, a request's watchdog timer."""

from __future__ import annotations

import signal
import threading
import time
from typing import Any

from rollchat.interrupts import signals_blocked
from rollchat.providers.lanes import Ticket, watchdog
from rollchat.ui.starting import Starting


def _blocked(native_id: int) -> set[int]:
    """The signals thread ``native_id`` of this process blocks (its SigBlk in /proc)."""
    with open(f"/proc/self/task/{native_id}/status", encoding="ascii") as status:
        mask = int(next(line for line in status if line.startswith("SigBlk:")).split()[1], 16)
    return {number for number in range(1, 65) if mask >> (number - 1) & 1}


def test_the_warm_up_after_the_build_runs_with_ctrl_c_blocked_and_the_build_does_not() -> None:
    """The build may start MCP servers (a child inherits a blocked signal: not blocked
    there); the warm-up after it (the SDK's import, the tokenizer) starts none."""
    seen: dict[str, set[int]] = {}

    def build() -> tuple[Any, list[str]]:
        seen["build"] = set(signal.pthread_sigmask(signal.SIG_BLOCK, []))
        return object(), []

    def then(app: Any) -> None:
        seen["then"] = set(signal.pthread_sigmask(signal.SIG_BLOCK, []))

    starting = Starting(build, label="x", out=None)  # type: ignore[arg-type]
    starting.start(then=then)
    deadline = time.monotonic() + 30
    while "then" not in seen and time.monotonic() < deadline:
        time.sleep(0.01)
    assert signal.SIGINT not in seen["build"]
    assert {signal.SIGINT, signal.SIGTERM, signal.SIGHUP} <= seen["then"]


def test_a_requests_watchdog_thread_blocks_ctrl_c() -> None:
    before = set(threading.enumerate())
    disarm = watchdog(60, Ticket(0))
    try:
        [timer] = [t for t in threading.enumerate() if t not in before]
        assert timer.native_id is not None
        assert {signal.SIGINT, signal.SIGTERM, signal.SIGHUP} <= _blocked(timer.native_id)
    finally:
        disarm()


def test_signals_blocked_is_nothing_in_the_main_thread() -> None:
    before = set(signal.pthread_sigmask(signal.SIG_BLOCK, []))
    with signals_blocked():
        assert set(signal.pthread_sigmask(signal.SIG_BLOCK, [])) == before
