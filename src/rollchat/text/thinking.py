"""A reply's leading ``<think>`` block taken apart from its answer as it streams: what reasoning
models send when the server has no reasoning parser (llama.cpp without ``--jinja``, Ollama's raw
templates). Text-only, so every layer that reads a model's reply can use it."""

from __future__ import annotations

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


def without_thinking(reply: str) -> str:
    """A whole reply without its leading thinking block (a summary's, an extraction's)."""
    splitter = ThinkSplitter()
    parts = [*splitter.feed(reply), *splitter.flush()]
    return "".join(piece for thinking, piece in parts if not thinking)
