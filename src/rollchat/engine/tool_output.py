"""Tool output's share of the context: the most tokens one result may take
(``tools.max_result_tokens``), how much older results may take whole before they are shortened,
and the archive tool that reads any result whole again (the transcript keeps every result)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from rollchat.config.settings import ToolsConfig
from rollchat.domain import ToolExchange, Turn
from rollchat.tools import Tool
from rollchat.tools.archive import Found, archive_tool

if TYPE_CHECKING:
    from rollchat.models.tokens import TokenCounter
    from rollchat.storage.store import Store

WINDOW_SHARE = 10  # by default one result takes at most a tenth of the window
OLDER_RESULTS = 2  # older results stay whole up to this many times the limit, then shortened
PAGE_MARGIN = 20  # tokens a page read back leaves for its message's overhead


class ToolOutput:
    """The limits for one session's tool results, following the model's window."""

    def __init__(self, config: ToolsConfig, counter: TokenCounter, window: int) -> None:
        self.config = config
        self.counter = counter
        self.limit = 1
        self.resize(window)

    def resize(self, window: int) -> None:
        """The window is known (or turned out smaller): the limits follow."""
        self.limit = self.config.max_result_tokens or max(window // WINDOW_SHARE, 1)
        self.limit = min(self.limit, window)

    def allowance(self) -> int:
        """Tokens older results may take whole before they are shortened (see
        WorkingContext.append)."""
        return OLDER_RESULTS * self.limit

    def room(self, budget_tokens: int, estimate: int) -> int:
        """Tokens the next result may take: the limit, or less when the prompt is near the
        budget (it may not be compacted before the model has read the result)."""
        return min(self.limit, budget_tokens - estimate)

    def archive(self, store: Store, parent_id: str | None, turns: Callable[[], Sequence[Turn]],
                current: Callable[[], Sequence[ToolExchange]]) -> Tool:
        """The archive tool for the previous session ``parent_id`` (None: none) and this
        session's results: of its ``turns``, and of the turn in flight (``current``)."""

        def find(call_id: str) -> Found | None:
            for ex in reversed(current()):
                if ex.call.id == call_id:
                    return Found("the current turn", ex)
            for turn in reversed(turns()):
                for ex in reversed(turn.tools):
                    if ex.call.id == call_id:
                        where = (f"query {turn.number}" if turn.kind == "query" else
                                 f"carried over {turn.number}")
                        return Found(f"{where} of this session", ex)
            return None

        return archive_tool(store, parent_id, current=find, count=self.counter.count_text,
                            page_tokens=lambda: max(self.limit - PAGE_MARGIN, 1))
