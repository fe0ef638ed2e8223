"""A model call's stream divided into answer and thinking (a reasoning field, or a leading
``<think>`` block: text/thinking.py), so the thinking is kept and shown apart and never sent
back as the answer."""

from __future__ import annotations

from collections.abc import Iterator

from rollchat.domain import Thinking
from rollchat.providers.base import TextDelta, ThinkingDelta
from rollchat.text.normalize import StreamCleaner
from rollchat.text.thinking import ThinkSplitter


class Split:
    """One model call's stream divided into ``text`` and ``thought`` (the engine's lists, so
    an interruption keeps both), yielding what to draw as it goes."""

    def __init__(self, text: list[str], thought: list[str]) -> None:
        self.answer, self.thought = text, thought
        self.splitter = ThinkSplitter()
        self.cleaner = StreamCleaner()  # a provider's reasoning field, cleaned as text is

    def text(self, piece: str) -> Iterator[TextDelta | ThinkingDelta]:
        yield from self._out(self.splitter.feed(piece) if piece else [])

    def thinking(self, piece: str) -> Iterator[TextDelta | ThinkingDelta]:
        yield from self._out([(True, self.cleaner.feed(piece))])

    def end(self, rest: str) -> Iterator[TextDelta | ThinkingDelta]:
        """The stream ended: what the cleaner and the splitter held goes out."""
        yield from self._out([*(self.splitter.feed(rest) if rest else []),
                              *self.splitter.flush(), (True, self.cleaner.flush())])

    def keep(self, rest: str) -> None:
        """The stream broke off: what was held is kept without drawing it."""
        for _ in self.end(rest):
            pass

    def _out(self, parts: list[tuple[bool, str]]) -> Iterator[TextDelta | ThinkingDelta]:
        for thinking, piece in parts:
            if not piece:
                continue
            (self.thought if thinking else self.answer).append(piece)
            yield ThinkingDelta(piece) if thinking else TextDelta(piece)


def took(thought: list[str]) -> list[Thinking]:
    """The round's thinking as a block (none when there was none), and the list emptied for
    the next round."""
    said = "".join(thought).strip()
    thought.clear()
    return [Thinking(said)] if said else []
