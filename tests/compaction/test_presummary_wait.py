"""A compaction waiting for a background summary still running: a Ctrl-C that the kernel
handed to another thread (one not started with it blocked: the chat's builder, a timer) is
still acted on during the wait, which is cut into short slices."""

from __future__ import annotations

import signal
import sys
import threading
import time
from concurrent.futures import Future
from datetime import datetime, timezone

from rollchat.compaction.call import SummaryOutcome
from rollchat.compaction.policy import Budget
from rollchat.compaction.summarizer import Background, Summarizer
from rollchat.config.settings import SummaryConfig
from rollchat.domain import Text, Turn
from rollchat.models.tokens import TokenCounter
from tests.compaction.test_autocompact import MODEL, FakeProvider, chat_answer, user_message

NEVER = 3600.0  # the summary timeout: the background run never ends within the test


class _Watched(Future[SummaryOutcome]):
    """A background run that never finishes; ``waited`` is set once someone waits for it."""

    def __init__(self) -> None:
        super().__init__()
        self.waited = threading.Event()

    def result(self, timeout: float | None = None) -> SummaryOutcome:
        self.waited.set()
        return super().result(timeout)


def _turns(count: int) -> list[Turn]:
    now = datetime.now(timezone.utc)
    return [Turn("query", i + 1, now, user_message(i), (Text(chat_answer(user_message(i))),))
            for i in range(count)]


def _blocked_in_a_wait(thread_id: int) -> bool:
    """The thread sits in ``threading.Condition.wait`` (a lock taken with a timeout)."""
    frame = sys._current_frames().get(thread_id)
    return frame is not None and frame.f_code.co_name == "wait" and \
        frame.f_code.co_filename == threading.__file__


def _ctrl_c_to_another_thread(run: _Watched, main: int) -> None:
    """Once the main thread waits for ``run``, send SIGINT to this thread, not to it: the
    handler then runs only when the main thread next runs Python code. Bounded: past 60 s
    the Ctrl-C goes anyway (the test then fails on what it finds instead of hanging)."""
    deadline = time.monotonic() + 60
    run.waited.wait(60)
    while not _blocked_in_a_wait(main) and time.monotonic() < deadline:
        time.sleep(0.01)
    signal.pthread_kill(threading.get_ident(), signal.SIGINT)


def test_ctrl_c_taken_by_another_thread_stops_the_wait_for_a_background_summary() -> None:
    provider = FakeProvider()
    summarizer = Summarizer(provider, model=MODEL, config=SummaryConfig(timeout_seconds=NEVER),
                            budget=Budget(4000, 500, 0, 3000), counter=TokenCounter(MODEL))
    turns, run = _turns(6), _Watched()
    background = Background([(0, 4, run)])
    sender = threading.Thread(target=_ctrl_c_to_another_thread,
                              args=(run, threading.get_ident()), daemon=True)
    # Python's own Ctrl-C handler (pytest run in the background starts with SIGINT ignored)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        sender.start()
        outcome = summarizer.summarize(turns, None, None, background=background, quick=True)
    finally:
        signal.signal(signal.SIGINT, previous)
    assert outcome.fallback_used and outcome.reason == "interrupted"  # the local summary
    assert provider.requests == []  # nothing asked of the model after the Ctrl-C
    assert not run.done()
