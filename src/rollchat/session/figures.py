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

    @property
    def context_tokens(self) -> int | None:
        """THE context size shown (toolbar, ``context``): the next prompt's estimate, the
        figure automatic compaction compares with its budget; None before the first message
        (nothing counted yet: the tokenizer loads after the first prompt appears)."""
        context = self.compactor.engine.context
        if context.last_prompt_tokens is None and not context.messages:
            return None
        # the toolbar asks at every keystroke: counted again only when the context changed
        key = (id(context), len(context.messages), context.last_prompt_tokens, context.shrunk,
               context.messages[-1].content if context.messages else "")
        cached: tuple[object, int] | None = getattr(self, "_context_tokens", None)
        if cached is None or cached[0] != key:
            cached = (key, self.estimate())
            self._context_tokens = cached
        return cached[1]

    def estimate(self, pending: Sequence[Message] = ()) -> int:
        """The size of the next prompt (see context.estimate_prompt)."""
        return self.compactor.estimate(pending)

