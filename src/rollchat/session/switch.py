"""``model NAME`` in a chat: the models a session may switch to, and the switch itself (the
engine, the token counter, the window and budgets, the price, the summaries, the file)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from rollchat.domain import Note, Turn
from rollchat.errors import UsageError
from rollchat.models.prices import price_for
from rollchat.models.tokens import CONTEXT_WINDOWS, context_window
from rollchat.models.windows import WindowLearner
from rollchat.providers.names import ANTHROPIC, OFFLINE, OPENAI, is_local

if TYPE_CHECKING:
    from collections.abc import Callable

    from rollchat.config.settings import AgentConfig, Config
    from rollchat.engine.core import Engine
    from rollchat.models.prices import Price
    from rollchat.models.tokens import TokenCounter
    from rollchat.session.compactor import Compactor
    from rollchat.session.forks import Recorder

# The table's names each provider serves itself (a server at a base_url serves what it holds).
_FAMILIES = {ANTHROPIC: ("claude-",), OPENAI: ("gpt-", "o1", "o3", "o4")}


@dataclass(frozen=True)
class Choices:
    """The models a chat may switch to: ``named`` (the table's for the provider, and the
    config's ``models:``); ``any_name``: a server at a base_url takes any name it serves."""

    named: tuple[str, ...]
    any_name: bool


def choices(config: Config, agent: AgentConfig, provider: str) -> Choices:
    if provider == OFFLINE:
        return Choices((OFFLINE,), False)
    prefixes = _FAMILIES.get(provider, ())
    table = [m for m in CONTEXT_WINDOWS if m.startswith(prefixes)] if prefixes else []
    return Choices(tuple(dict.fromkeys([*config.models, *table])), agent.base_url is not None)


class ModelSwitch:
    """The Session's ``use_model`` (a mixin: the parts it changes are the Session's)."""

    config: Config
    agent: AgentConfig
    provider_name: str
    engine: Engine
    counter: TokenCounter
    recorder: Recorder
    windows: WindowLearner
    price: Price | None
    compactor: Compactor
    _resize: Callable[[int], None]  # (Session's: the budgets follow a window)
    _switched: str | None = None  # the note the next turn starts with, after a switch

    def noted(self, turn: Turn) -> Turn:
        """``turn`` starting with the note of a switch made since the last one (kept in the
        file, never sent: the change reads back from the transcript)."""
        note, self._switched = self._switched, None
        return turn if note is None else replace(turn, blocks=(Note("model", note),
                                                               *turn.blocks))

    def use_model(self, model: str) -> int:
        """``model`` answers from the next message on: the estimate counts for it, the window
        and budgets are its own, its price is used, summaries that used the chat's model use
        it, and the next turn notes the switch in the file. Its window; UsageError for a model
        the provider does not serve."""
        model = model.strip()
        allowed = choices(self.config, self.agent, self.provider_name)
        if model not in allowed.named and not allowed.any_name:
            raise UsageError(f"unknown model {model!r} for {self.provider_name}; choose one "
                             f"of: {', '.join(allowed.named)} (or name it under models: in "
                             "the config); the model is unchanged")
        old = self.engine.model
        if model == old:
            return self.compactor.budget.window
        summarizer = self.compactor.summarizer
        if summarizer.provider is self.engine.provider and summarizer.model == old:
            summarizer.use_model(model)
        self.engine.use_model(model)
        self._switched = f"{model} answers from here on (was {old})"
        self.counter.use_model(model)
        self.recorder.use_model(model)
        self.price = None if is_local(self.agent.base_url) else price_for(
            model, self.config.prices)
        book, url = self.windows.book, self.agent.base_url
        window = context_window(model, self.config.context_window_override(model)
                                or book.get(url, model))
        self.windows = WindowLearner(book, model=model, base_url=url, window=window,
                                     on_change=self._resize)
        self._resize(window)
        return window
