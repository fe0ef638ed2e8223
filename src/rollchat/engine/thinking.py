"""A reply's leading ``<think>`` block taken apart from its answer as it streams: what reasoning
models send when the server has no reasoning parser (llama.cpp without ``--jinja``, Ollama's raw
templates), so the thinking is kept and shown apart and never sent back as the answer."""

from __future__ import annotations

from collections.abc import Iterator

from rollchat.domain import Thinking
from rollchat.providers.base import TextDelta, ThinkingDelta
from rollchat.text.normalize import StreamCleaner

OPENINGS = ("<think>", "<thinking>")


class ThinkSplitter:
    """Feeds a round's text deltas; yields (thinking?, piece) pairs. Only a block that opens
    the reply (after blank space) is thinking: a ``<think>`` later in an answer is the answer's
    own text (a model explaining the tag). Tags split across deltas are held until decided."""

    def __init__(self) -> None:
        self.state = "start"  # start | thinking | after | text
        self.held = ""
        self.closing = ""
        self.fresh = False  # thinking began and nothing of it was passed on yet

    def feed(self, piece: str) -> list[tuple[bool, str]]:
        self.held += piece
        out: list[tuple[bool, str]] = []
        while self.held:
            if self.state == "start" and not self._opening():
                break
            if self.state == "thinking" and not self._thought(out):
                break
            if self.state == "after":
                self.held = self.held.lstrip()  # the blank lines between thinking and answer
                if not self.held:
                    break
                self.state = "text"
            if self.state == "text":
                out.append((False, self.held))
                self.held = ""
        return out

    def _opening(self) -> bool:
        """Decide whether the reply opens with a thinking tag; False: wait for more text."""
        lead = self.held.lstrip()
        for tag in OPENINGS:
            if lead.startswith(tag):
                self.state, self.held, self.fresh = "thinking", lead[len(tag):], True
                self.closing = "</" + tag[1:]
                return True
        if lead == "" or any(tag.startswith(lead) for tag in OPENINGS):
            return False
        self.state = "text"
        return True

    def _thought(self, out: list[tuple[bool, str]]) -> bool:
        """Pass on the thinking up to its closing tag; False: the rest may start the tag."""
        if self.fresh:  # the line break after the opening tag, in whichever delta it came
            self.held = self.held.lstrip("\n")
            self.fresh = not self.held
        end = self.held.find(self.closing)
        if end >= 0:
            if self.held[:end].rstrip():
                out.append((True, self.held[:end].rstrip()))
            self.held, self.state = self.held[end + len(self.closing):], "after"
            return True
        keep = next((k for k in range(min(len(self.closing) - 1, len(self.held)), 0, -1)
                     if self.closing.startswith(self.held[-k:])), 0)
        if len(self.held) > keep:
            out.append((True, self.held[:len(self.held) - keep]))
            self.held = self.held[len(self.held) - keep:]
        return False

    def flush(self) -> list[tuple[bool, str]]:
        """The end of the reply: what is held goes out (an unclosed block is all thinking:
        the model was stopped mid-thought)."""
        held, self.held = self.held, ""
        if not held or (self.state == "after" and not held.strip()):
            return []
        return [(self.state == "thinking", held)]


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
