"""What an agent receives of another agent's session with a handed-over message (``@NAME``):
the value, and the marked block it travels in at the start of the user message."""

from __future__ import annotations

import re
from dataclasses import dataclass

CONTEXT_TAG = "handoff-context"
_BLOCK = re.compile(rf"<{CONTEXT_TAG} [^>\n]*>\n(.*?)\n</{CONTEXT_TAG}>\n\n", re.DOTALL)


@dataclass(frozen=True)
class Handed:
    """What agent NAME receives with the message: ``body`` (empty: nothing to hand over) from
    ``agent``'s session ``session_id`` (state.UNSAVED when it has no file), chosen by
    ``strategy``."""

    agent: str
    session_id: str
    strategy: str
    body: str
    what: str  # e.g. "a summary", "3 turns most relevant to the message"
    tokens: int

    def wrap(self, message: str) -> str:
        """The user message NAME is sent: the marked context block, then the message."""
        if not self.body:
            return message
        agent = self.agent.replace('"', "'")
        return (f'<{CONTEXT_TAG} from="{agent}" session="{self.session_id}" '
                f'strategy="{self.strategy}">\n{self.body}\n</{CONTEXT_TAG}>\n\n{message}')

    @property
    def note(self) -> str:
        """The ``Context`` of NAME's turn in its transcript: who handed it over, and what."""
        head = f"Handed from {self.agent} ({self.session_id}) with {self.what}"
        return f"{head}:\n{self.body}" if self.body else f"{head}."


def split_handed(text: str) -> tuple[str, str]:
    """(the context another agent handed over, the message) of a user message that opens with
    a handoff context block (see ``Handed.wrap``); ("", text) for any other."""
    m = _BLOCK.match(text)
    return (m[1], text[m.end():]) if m else ("", text)
