"""Ctrl-C around work that must not be cut in the middle (a file rewrite, a fallback)."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


@contextmanager
def sigint_deferred(deliver: bool = True) -> Iterator[None]:
    """Hold Ctrl-C while a file is being rewritten; deliver it afterwards (``deliver``) or
    drop it (when the user already asked to stop and this is the quick way out)."""
    pending: list[Any] = []

    def hold(signum: int, frame: Any) -> None:
        pending.append(signum)

    try:
        previous = signal.signal(signal.SIGINT, hold)
    except ValueError:  # not the main thread
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
    if pending and deliver:
        raise KeyboardInterrupt
