"""The live region catches up with text that came in while it was drawn less than 1/15 s ago:
the last words before a pause (a slow model, a tool call being written) are on the screen,
not held until the next chunk."""

from __future__ import annotations

import io
import threading
import time

import pytest
from rich.console import Console

from rollchat.ui.stream import MarkdownStream


def _shown_within(out: io.StringIO, text: str, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if text in out.getvalue():
            return True
        time.sleep(0.02)
    return text in out.getvalue()


@pytest.mark.parametrize("what", ["answer", "thinking"])
def test_what_came_right_after_a_redraw_is_drawn_before_the_next_chunk(what: str) -> None:
    out = io.StringIO()
    stream = MarkdownStream(Console(file=out, force_terminal=True, width=80), live=True)
    send = stream.feed if what == "answer" else stream.think
    try:
        send("Alpha words ")
        assert _shown_within(out, "Alpha words", 5)
        stream.last_refresh = time.monotonic()  # as if it had just been drawn
        send("then beta before a pause")  # (within 1/15 s of that draw)
        assert _shown_within(out, "beta before a pause", 10)  # no further chunk comes
    finally:
        stream.close()
    assert ("▸ thought for" in out.getvalue()) == (what == "thinking")  # folded at the end


def test_nothing_is_drawn_after_close() -> None:
    out = io.StringIO()
    before = set(threading.enumerate())
    stream = MarkdownStream(Console(file=out, force_terminal=True, width=80), live=True)
    [drawer] = [t for t in threading.enumerate()
                if t not in before and t.name == "rollchat-redraw"]
    stream.feed("Alpha ")
    stream.last_refresh = time.monotonic()
    stream.feed("omega")
    stream.close()  # prints the block whole
    after = out.getvalue()
    drawer.join(30)  # the catch-up thread ends with the stream: what it drew is drawn by now
    assert not drawer.is_alive()
    assert out.getvalue() == after and "Alpha omega" in after
