"""The model a chat talks to now, as ONE object: its name, provider, price and window learner.
The session, its compactor and refusal path, the summarizer and memory extraction (when they
follow the chat's model) hold it by reference; ``model NAME`` replaces it in one place."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from rollchat.models.prices import Price, price_for, price_listed
from rollchat.models.windows import WindowBook, WindowLearner
from rollchat.providers.names import OFFLINE, is_local

if TYPE_CHECKING:
    from rollchat.providers.base import ContextTooLongError, Provider


class CurrentModel:
    """The chat's model (see the module docstring): ``window`` is the one it is known by."""

    def __init__(self, *, name: str, provider: Provider, provider_name: str,
                 prices: Mapping[str, Price], book: WindowBook, base_url: str | None,
                 window: int) -> None:
        self.provider, self.provider_name, self.prices = provider, provider_name, prices
        # the offline model and a server on this machine or network cost nothing to know
        self.free_by_place = provider_name == OFFLINE or is_local(base_url)
        self._resizes: list[Callable[[int], None]] = []  # who follows the window
        self.name = name
        self.price = price_for(name, prices)  # None: unknown (no cost shown)
        self.windows = WindowLearner(book, model=name, base_url=base_url, window=window,
                                     on_change=self._resized)

    def follow_window(self, resize: Callable[[int], None]) -> None:
        """``resize`` is called with the window each time it changes (learned, or the next
        model's after a switch): the session's budgets follow it."""
        self._resizes.append(resize)

    def _resized(self, window: int) -> None:
        for resize in self._resizes:
            resize(window)

    def switch(self, name: str, window: int) -> None:
        """``name`` answers from now on, with its own price and window (``window``: the one
        it is known by); the budgets follow. The one place the current model changes."""
        book, url = self.windows.book, self.windows.base_url
        self.name = name
        self.price = price_for(name, self.prices)
        self.windows = WindowLearner(book, model=name, base_url=url, window=window,
                                     on_change=self._resized)
        self._resized(window)

    @property
    def cost_unknown(self) -> bool:
        """Whether what this model's calls cost is unknown: a remote model with no price in
        the config or the table (rollchat says "cost unknown", never $0)."""
        return not self.free_by_place and not price_listed(self.name, self.prices)

    def price_of(self, model: str) -> Price | None:
        """The price of ``model`` (the chat's, or another that answered a side call)."""
        return self.price if model == self.name else price_for(model, self.prices)

    def summary_refused(self, error: ContextTooLongError, sent: int) -> bool:
        """A summary request to this model was refused as too long: learned by the window
        learner of the model now current (see WindowLearner.summary_refused)."""
        return self.windows.summary_refused(error, sent)
