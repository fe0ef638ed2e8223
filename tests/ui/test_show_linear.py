"""``rollchat show`` does the same work per turn however long the session (issue 33, item 5):
the function calls it makes (Python's and C's, counted by a profile hook, not timed) grow by
the same amount from 2n turns to 4n as twice that from n to 2n (or from turns 2 times as
large to 4 times); a step that went back over what was read before (a quadratic loop) would
make the second growth 4 times the first, not 2."""

from __future__ import annotations

import io
import sys
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path
from types import FrameType

import pytest

from rollchat.domain import SessionHeader
from rollchat.storage.transcript.stream import TranscriptStream, file_lines
from rollchat.ui.show import show
from tests.ui.show_sessions import write_session

WHEN = datetime(2026, 5, 1, 9, 0, 5, tzinfo=timezone.utc)


def _session(path: Path, count: int, paragraphs: int = 1) -> Path:
    """``count`` turns of prose, each answer ``paragraphs`` long; every 10th one that rich
    draws (a list, a tool call and its result)."""
    header = SessionHeader("assistant_20260501_090000_a1a1", WHEN, "Assistant", "agents/a.md",
                           "offline-model", "offline", total_queries=count)
    return write_session(path, header, count, paragraphs=paragraphs, drawn=(10, 9))


def _calls(path: Path, *, terminal: bool) -> int:
    """The function calls ``show`` of ``path`` makes (Python and C), its output discarded."""
    count = 0

    def hook(frame: FrameType, event: str, arg: object) -> None:
        nonlocal count
        if event in ("call", "c_call"):
            count += 1

    real = sys.stdout
    sys.stdout = io.StringIO()
    try:
        with open(path, "rb") as f:
            stream = TranscriptStream(file_lines(f))
            sys.setprofile(hook)
            try:
                show(stream, terminal=terminal)
            finally:
                sys.setprofile(None)
    finally:
        sys.stdout = real
    return count


@pytest.fixture(autouse=True)
def _no_pager(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("PAGER", " ")  # in a "terminal": drawn to stdout, no pager started
    monkeypatch.setenv("COLUMNS", "80")
    monkeypatch.setenv("FORCE_COLOR", "1")  # a colour terminal: styled, as a user's is
    monkeypatch.setenv("COLORTERM", "truecolor")
    yield


def _growth(tmp_path: Path, sizes: list[tuple[int, int]], *, terminal: bool) -> float:
    """How much more the calls grew from the 2nd to the 3rd session than from the 1st to the
    2nd (2 when the work is linear in the session's size, 4 when quadratic)."""
    _calls(_session(tmp_path / "warm.md", 10), terminal=terminal)  # first imports, caches
    n, twice, four = (_calls(_session(tmp_path / f"{k}.md", count, paragraphs),
                             terminal=terminal) for k, (count, paragraphs) in enumerate(sizes))
    return (four - twice) / (twice - n)


@pytest.mark.parametrize("terminal", [False, True], ids=["piped", "terminal"])
def test_show_of_twice_the_turns_is_twice_the_work(tmp_path: Path, terminal: bool) -> None:
    growth = _growth(tmp_path, [(100, 1), (200, 1), (400, 1)], terminal=terminal)
    assert 1.8 < growth < 2.2, growth


@pytest.mark.parametrize("terminal", [False, True], ids=["piped", "terminal"])
def test_show_of_turns_twice_as_large_is_twice_the_work(tmp_path: Path, terminal: bool) -> None:
    """Few very large turns: the work follows the text, not the square of a turn's size."""
    growth = _growth(tmp_path, [(10, 200), (10, 400), (10, 800)], terminal=terminal)
    assert 1.8 < growth < 2.2, growth
