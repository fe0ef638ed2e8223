"""Signals: Ctrl-C around work that must not be cut in the middle (a file rewrite, a
fallback), and SIGTERM / SIGHUP, which end the chat the way ``exit`` does.

A SIGTERM (``kill``, a shutdown) or SIGHUP (the terminal closed) raises ``Terminated`` in the
main thread. It is a KeyboardInterrupt, so whatever was under way stops as after a Ctrl-C (an
answer streaming is kept, marked interrupted); the front end then sees ``ending()`` and ends
the chat with a summary, and the process exits with 128 + the signal's number.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from concurrent.futures import Future

T = TypeVar("T")

ENDING_SIGNALS = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGHUP")
                       if hasattr(signal, name))
ENDING_SUMMARY_SECONDS = 3.0  # ending on a signal: the model's summary if it is this quick

_received: list[int] = []  # the ending signal, once one arrived
_settled: list[bool] = []  # not empty once nothing is to be interrupted any more
_deferring: list[bool] = []  # not empty while rollchat's own SIGALRM timer is armed
# while a prompt waits for a line: the hand-over of an ending signal to it (see at_prompt)
_prompts: list[Callable[[int], None]] = []


class Terminated(KeyboardInterrupt):
    """A SIGTERM or SIGHUP arrived: stop what is under way, then end like ``exit``."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def ending() -> int | None:
    """The ending signal received (the chat must end), or None."""
    return _received[0] if _received else None


def _receive(signum: int) -> bool:
    """Record an ending signal; False if one had already arrived (the chat is ending)."""
    if _received:
        return False
    _received.append(signum)
    if signum == getattr(signal, "SIGHUP", None):
        _detach_terminal()
    return True


def _detach_terminal() -> None:
    """The terminal is gone: what is still written goes nowhere instead of failing (EIO), so
    the session can be saved and summarized."""
    try:
        null = os.open(os.devnull, os.O_RDWR)
    except OSError:
        return
    for fd in (0, 1, 2):
        try:
            os.dup2(null, fd)
        except OSError:
            continue
    os.close(null)


def settle() -> None:
    """The chat is saving for good (or has ended): ending signals are recorded (for the exit
    status) but raise nothing any more, and one whose raise was put off (see
    ``_raise_when_safe``) is dropped."""
    _settled.append(True)
    if _deferring and hasattr(signal, "setitimer"):  # only the timer rollchat armed: another
        _deferring.clear()                           # one (a test runner's) is not ours
        signal.setitimer(signal.ITIMER_REAL, 0)


def _on_ending(signum: int, frame: Any) -> None:
    if _receive(signum):
        _raise_when_safe(frame)


def _raise_when_safe(frame: Any) -> None:
    """Raise ``Terminated``, unless the main thread is inside the import machinery: an
    exception there breaks its module locks (a KeyError instead of the interruption, with the
    turn lost). Then it is raised a moment later, once the import is done."""
    if _settled:
        return
    if _prompts:  # the prompt ends itself, then raises it (see at_prompt)
        _prompts[-1](_received[0])
        return
    inner = frame
    while inner is not None:
        if inner.f_code.co_filename.startswith("<frozen importlib"):
            signal.signal(signal.SIGALRM, lambda signum, frame: _raise_when_safe(frame))
            signal.setitimer(signal.ITIMER_REAL, 0.02)
            _deferring.append(True)
            return
        inner = inner.f_back
    raise Terminated(_received[0])


@contextmanager
def at_prompt(end: Callable[[int], None]) -> Iterator[None]:
    """While the block runs a prompt's event loop: an ending signal is handed to ``end`` (which
    ends the prompt, or lets it end if it is ending already) instead of raised inside the loop:
    an exception there leaves asyncio cancelling the prompt's tasks, and one that waits on a
    terminal gone (SIGHUP right after Enter) never ends, nor does the chat. The caller raises
    ``Terminated`` once the prompt has returned (see ``raise_ending``)."""
    _prompts.append(end)
    try:
        yield
    finally:
        _prompts.pop()


def raise_ending() -> None:
    """Raise ``Terminated`` if an ending signal arrived and the chat is not saving for good."""
    if _received and not _settled:
        raise Terminated(_received[0])


@contextmanager
def _handling(handlers: dict[int, Any]) -> Iterator[None]:
    """``handlers`` (signal number -> handler) for the block, the previous ones after it.
    Outside the main thread (where Python cannot set handlers) nothing changes."""
    try:
        previous = {signum: signal.signal(signum, handler) for signum, handler in handlers.items()}
    except ValueError:  # not the main thread
        yield
        return
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


@contextmanager
def ending_signals() -> Iterator[None]:
    """While the chat runs: SIGTERM and SIGHUP raise ``Terminated`` (once; the next ones are
    ignored, so that saving finishes). The previous handlers come back afterwards."""
    handlers: dict[int, Any] = dict.fromkeys(ENDING_SIGNALS, _on_ending)
    handlers[signal.SIGALRM] = signal.getsignal(signal.SIGALRM)  # (used by _raise_when_safe)
    with _handling(handlers):
        try:
            yield
        finally:
            settle()


@contextmanager
def sigint_deferred(deliver: bool = True) -> Iterator[None]:
    """Hold Ctrl-C (and an ending signal, when ``ending_signals`` is on) while a file is
    being written; deliver it afterwards (``deliver``) or drop it (when the user already asked
    to stop and this is the quick way out). A held ending signal is never dropped: the chat
    still ends."""
    pending: list[int] = []

    def hold(signum: int, frame: Any) -> None:
        pending.append(signum)

    ours = [s for s in ENDING_SIGNALS if signal.getsignal(s) is _on_ending]
    with _handling(dict.fromkeys((signal.SIGINT, *ours), hold)):
        yield
    ended = [s for s in pending if s != signal.SIGINT]
    if ended and _receive(ended[0]) and deliver:
        raise Terminated(ended[0])
    if signal.SIGINT in pending and deliver:
        raise KeyboardInterrupt


# Ctrl-C and the ending signals, kept away from the chat's own worker threads.
_MASKED = (signal.SIGINT, *ENDING_SIGNALS)
SLICE_SECONDS = 0.1  # the longest the main thread sleeps in one go while it waits for a worker


def start_worker(thread: threading.Thread) -> threading.Thread:
    """Start ``thread`` with Ctrl-C and the ending signals blocked in it (a thread inherits
    the mask of the one that starts it): the kernel then hands them to the main thread, where
    Python runs their handlers. One handed to a worker only sets a flag, and a main thread
    asleep in a long wait would not see it until the wait ended. Only for threads that start
    no program (a child would inherit the blocked signals)."""
    with _masked():
        thread.start()
    return thread


@contextmanager
def signals_blocked() -> Iterator[None]:
    """Ctrl-C and the ending signals blocked in this (not the main) thread for the block:
    ``start_worker``'s rule for a part of a thread's work that starts no program (the chat's
    warm-up, beside its first answer), in a thread that starts programs at other times."""
    if threading.current_thread() is threading.main_thread():
        yield
        return
    with _masked():
        yield


@contextmanager
def _masked() -> Iterator[None]:
    """Ctrl-C and the ending signals blocked in the calling thread for the block (where the
    platform has thread signal masks)."""
    if not hasattr(signal, "pthread_sigmask"):
        yield
        return
    before = signal.pthread_sigmask(signal.SIG_BLOCK, _MASKED)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, before)


def join(thread: threading.Thread, seconds: float) -> bool:
    """Wait up to ``seconds`` for ``thread`` to end (True when it did), in slices of at most
    ``SLICE_SECONDS``: a signal that reached another thread is run by the main thread within a
    slice, so a Ctrl-C during the wait is never slept through."""
    deadline = time.monotonic() + max(0.0, seconds)
    while thread.is_alive():
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        thread.join(min(left, SLICE_SECONDS))
    return True


def result(future: Future[T], seconds: float) -> T:
    """``future``'s result, waited for up to ``seconds`` in slices of at most
    ``SLICE_SECONDS`` (see ``join``: a Ctrl-C that reached another thread is run within one);
    raises what the future raised, or TimeoutError when it is not done by then."""
    from concurrent.futures import TimeoutError as NotYet

    deadline = time.monotonic() + max(0.0, seconds)
    while True:
        left = deadline - time.monotonic()
        try:
            return future.result(timeout=max(0.0, min(left, SLICE_SECONDS)))
        except NotYet:
            if left <= SLICE_SECONDS:
                raise TimeoutError(f"not done within {seconds:g}s") from None
