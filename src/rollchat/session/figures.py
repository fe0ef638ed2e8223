"""The figures a session reads from its Compactor (budget, guards, summarizer, the automatic
compaction mode, the next prompt's estimate), as properties of the Session."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rollchat.compaction import policy
    from rollchat.compaction.policy import PolicyState
    from rollchat.compaction.summarizer import Summarizer
    from rollchat.config.settings import AutoCompact
    from rollchat.domain import Message
    from rollchat.session.compactor import Compactor


class CompactorFigures:
    """The Session's view of its ``compactor``."""

    compactor: Compactor

    @property
    def budget(self) -> policy.Budget:
        return self.compactor.budget

    @property
    def guards(self) -> PolicyState:
        return self.compactor.guards

    @property
    def summarizer(self) -> Summarizer:
        return self.compactor.summarizer

    @property
    def auto_mode(self) -> AutoCompact:
        """Automatic compaction in this session: on, off or ask (the config's, unless the
        chat changed it)."""
        return self.compactor.auto_mode

    @property
    def auto_override(self) -> AutoCompact | None:
        return self.compactor.auto_override

    def set_auto(self, mode: AutoCompact) -> AutoCompact:
        """``auto on|off|ask``: see Compactor.set_auto; the mode it had."""
        return self.compactor.set_auto(mode)

    def estimate(self, pending: Sequence[Message] = ()) -> int:
        """The size of the next prompt (see context.estimate_prompt)."""
        return self.compactor.estimate(pending)

