"""Tab at the prompt: the commands and ``@`` + the agents' names, and after ``resume`` or
``fork`` (bare or with a slash) the saved sessions: their numbers (THE numbering of
storage/listing.py, the chat's own session left out), each shown with its title."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING

from prompt_toolkit.completion import CompleteEvent, Completer, Completion, WordCompleter
from prompt_toolkit.document import Document

from rollchat.errors import RollchatError

if TYPE_CHECKING:
    from rollchat.storage.listing import SessionInfo

_SESSION_ARG = re.compile(r"^\s*/?(?:resume|fork)\s+(\S*)$")
SHOWN = 50  # the most recent sessions offered


class ChatCompleter(Completer):
    """``words`` (commands, @agents) completed as a sentence; a session after ``resume`` /
    ``fork`` from ``sessions()`` (with the id of the chat's current one, left out), read
    when Tab is pressed; a directory that cannot be read offers none."""

    def __init__(self, words: Iterable[str],
                 sessions: Callable[[], tuple[Sequence[SessionInfo], str | None]]) -> None:
        self.words = WordCompleter(list(words), sentence=True)
        self.sessions = sessions

    def get_completions(self, document: Document,
                        complete_event: CompleteEvent) -> Iterator[Completion]:
        found = _SESSION_ARG.match(document.text_before_cursor)
        if found is None:
            yield from self.words.get_completions(document, complete_event)
            return
        typed = found[1]
        try:
            listed, current = self.sessions()
        except (RollchatError, OSError):  # an unreadable directory offers none; the chat goes on
            return
        offered = [s for s in listed if s.session_id != current][:SHOWN]
        for info in offered:
            number = str(info.number)
            text = number if number.startswith(typed) else \
                info.session_id if info.session_id.startswith(typed) else None
            if text is None:
                continue
            title = info.title or info.first_query_preview or ""
            yield Completion(text, start_position=-len(typed), display=text,
                             display_meta=f"{info.date:%Y-%m-%d %H:%M} {title}".strip())
