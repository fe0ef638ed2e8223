"""``model NAME`` in a chat: the models a session may switch to, the window a model is known
by, and the switch itself (``ModelSwitch``: the one CurrentModel replaced in one place, and the
note the next turn starts with)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from rollchat.domain import Note, Turn
from rollchat.errors import UsageError
from rollchat.models.tokens import CONTEXT_WINDOWS, context_window
from rollchat.providers.names import ANTHROPIC, OFFLINE, OPENAI
from rollchat.session.windowing import ask_server

if TYPE_CHECKING:
    from rollchat.config.settings import AgentConfig, Config
    from rollchat.engine.core import Engine
    from rollchat.models.current import CurrentModel
    from rollchat.models.tokens import TokenCounter
    from rollchat.models.windows import WindowBook

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


def checked_choice(config: Config, agent: AgentConfig, provider: str, model: str) -> None:
    """UsageError when ``provider`` does not serve ``model`` (see ``choices``)."""
    allowed = choices(config, agent, provider)
    if model not in allowed.named and not allowed.any_name:
        raise UsageError(f"unknown model {model!r} for {provider}; choose one "
                         f"of: {', '.join(allowed.named)} (or name it under models: in "
                         "the config); the model is unchanged")


def window_of(config: Config, book: WindowBook, base_url: str | None, model: str) -> int:
    """The window ``model`` is known by: the config's, else the one learned from its server,
    else rollchat's table."""
    return context_window(model, config.context_window_override(model)
                          or book.get(base_url, model))


class ModelSwitch:
    """Which model answers a chat's turns: ``model NAME`` (``use``) and a saved prompt's
    ``model:`` (``for_turn``), each through the one CurrentModel, with the note of the change
    the next turn starts with in the file (``noted``)."""

    def __init__(self, config: Config, agent: AgentConfig, engine: Engine,
                 counter: TokenCounter, current: CurrentModel) -> None:
        self.config, self.agent, self.engine = config, agent, engine
        self.counter, self.current = counter, current
        self._note: str | None = None  # the note the next turn starts with, after a switch

    def use(self, model: str) -> int | None:
        """``model`` answers from the next message on: the estimate counts for it, the window
        and budgets are its own (the CurrentModel's followers), its price is used, summaries
        and memory extraction that used the chat's model use it, and the next turn notes the
        switch in the file. Its window; None when it is the model already; UsageError for a
        model the provider does not serve."""
        current, model = self.current, model.strip()
        checked_choice(self.config, self.agent, current.provider_name, model)
        old = current.name
        if model == old:
            return None
        self.engine.use_model(model)
        self.counter.use_model(model)
        window = window_of(self.config, current.windows.book, self.agent.base_url, model)
        current.switch(model, window)
        ask_server(current.windows, current.provider, again=True)  # its window as stated now
        self._note = f"{model} answers from here on (was {old})"
        return window

    @contextmanager
    def for_turn(self, model: str, why: str) -> Iterator[str]:
        """``model`` answers the turns run inside (a saved prompt's ``model:``, as Claude Code
        runs a command with it), then the chat's model again; the turn notes it in the file.
        Yields the chat's model; UsageError (nothing switched) for a model the provider does
        not serve."""
        old, pending = self.current.name, self._note
        model = model.strip()
        if model == old:
            yield old
            return
        self.use(model)
        self._note = f"{model} answered this turn ({why}); the chat's model is {old}"
        try:
            yield old
        finally:
            self.use(old)
            self._note = pending  # the chat's model is the one it had: nothing to note

    def noted(self, turn: Turn) -> Turn:
        """``turn`` starting with the note of a switch made since the last one (kept in the
        file, never sent: the change reads back from the transcript)."""
        note, self._note = self._note, None
        return turn if note is None else replace(turn, blocks=(Note("model", note),
                                                               *turn.blocks))
