"""Turns from another tool's lines in order: a typed prompt opens a turn; the model's text, its
tool calls, their results and notes for the tool's own lines join the open turn as they come."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from rollchat.domain import (
    ROUND_SEPARATOR,
    Block,
    Image,
    Note,
    Text,
    ToolCall,
    ToolResult,
    ToolUse,
    Turn,
)
from rollchat.storage.imports.common import Imported, arguments, cut, timestamp
from rollchat.text.normalize import clean

PARAGRAPH = ROUND_SEPARATOR  # between two texts of the model that follow each other


class Builder:
    """Collects the turns of one file into ``out.turns``; what it folds or leaves out is
    counted in ``out.folded`` and ``out.left_out``."""

    def __init__(self, out: Imported) -> None:
        self.out = out
        self.last_time: datetime | None = None
        self._user: str | None = None  # the open turn's prompt (None: no turn is open)
        self._started: datetime | None = None
        self._ended: datetime | None = None  # the time of the open turn's last line
        self._blocks: list[Block] = []
        self._calls: dict[str, int] = {}  # the open turn's call ids, in the order made
        self._waiting: list[Note] = []  # notes that came before the first turn
        self._attached: list[Image] = []  # images the user sent with the next prompt
        self._images: tuple[Image, ...] = ()  # those of the open turn
        self._texts: list[str] = []  # the model's texts not yet made a block (joined once:
        # a run of thousands of texts stays linear)

    @property
    def is_open(self) -> bool:
        return self._user is not None

    def when(self, raw: Any) -> None:
        """The time of the line being read (when it has one)."""
        stamp = timestamp(raw)
        if stamp is not None:
            self.last_time = stamp

    def prompt(self, text: str) -> None:
        """A prompt the user typed: the open turn ends, a new one starts."""
        self.close()
        self._user, self._started = text, self.last_time
        self._blocks, self._waiting = list(self._waiting), []
        self._images, self._attached = tuple(self._attached), []

    def text(self, text: str) -> None:
        """Text the model wrote; it joins the text just before it, if any."""
        if not text.strip():
            return
        self._open()
        self._texts.append(text)
        self._ended = self.last_time

    def call(self, call_id: str, name: str, raw_arguments: Any) -> None:
        """A tool call the model made (``raw_arguments``: a JSON string or value)."""
        self._open()
        self._flush()
        self._ended = self.last_time
        cid = cut(clean(call_id), 200) or f"imported_{len(self._calls) + 1}"
        self._calls[cid] = len(self._calls)
        self._blocks.append(ToolUse(ToolCall(cid, cut(clean(name), 200) or "tool",
                                             arguments(raw_arguments))))

    def result(self, call_id: str, content: str, is_error: bool = False,
               images: tuple[Image, ...] = ()) -> None:
        """The result of the call ``call_id``; one whose call is not in the open turn is kept
        after a stand-in call of that id. Results that come back out of order (parallel
        calls) are put in the order of their calls: a transcript pairs a round's results with
        its calls by position."""
        self._open()
        self._flush()
        self._ended = self.last_time
        cid = cut(clean(call_id), 200) or "unknown"
        if cid not in self._calls:
            self._calls[cid] = len(self._calls)
            self._blocks.append(ToolUse(ToolCall(cid, "tool", {})))
        at = len(self._blocks)
        while at > 0 and isinstance(before := self._blocks[at - 1], ToolResult) and \
                self._calls.get(before.call_id, -1) > self._calls[cid]:
            at -= 1
        self._blocks.insert(at, ToolResult(cid, content, is_error, images))

    def note(self, kind: str, text: str, counted_as: str) -> None:
        """One of the tool's own lines, kept as a note in the open turn (or the next one),
        counted under ``counted_as``."""
        self.out.folded[counted_as] += 1
        note = Note(kind, text)
        if self.is_open:
            self._flush()
            self._blocks.append(note)
        else:
            self._waiting.append(note)

    def fold(self, counted_as: str, count: int = 1) -> None:
        """One of the tool's own lines with nothing worth a note (a caveat), counted."""
        self.out.folded[counted_as] += count

    def attach(self, image: Image) -> None:
        """An image the user sent with the prompt being read (or the next one)."""
        self._attached.append(image)

    def leave_out(self, what: str, count: int = 1) -> None:
        """Something the file holds that is not imported (thinking, a sub-agent's lines)."""
        self.out.left_out[what] += count

    def close(self) -> None:
        """The open turn is done: it joins ``out.turns``."""
        if self._user is None:
            return
        self._flush()
        started = self._started or self.last_time or datetime.now(timezone.utc)
        ended = self._ended or started  # how long the turn took, by the file's own times
        elapsed = max(0.0, (ended - started).total_seconds())
        self.out.turns.append(Turn("query", len(self.out.turns) + 1, started, self._user,
                                   tuple(self._blocks), elapsed=elapsed,
                                   attached=self._images))
        self._user, self._blocks, self._calls, self._ended = None, [], {}, None

    def finish(self) -> None:
        """The end of the file: the open turn is closed; notes that never found a turn stay
        counted (the caller reports a file that holds nothing else)."""
        self.close()

    def _flush(self) -> None:
        """The texts that came one after another become one Text block."""
        if self._texts:
            self._blocks.append(Text(cut(PARAGRAPH.join(self._texts))))
            self._texts = []

    def _open(self) -> None:
        if self._user is None:  # the model spoke before any prompt: a turn with no prompt
            self.prompt("")
