"""The model an Engine asks: chosen when it is built, switched by ``model NAME`` in a chat."""

from __future__ import annotations


class ModelChoice:
    """The Engine's ``model`` and its switch (a mixin, so that the Engine stays small)."""

    model: str

    def use_model(self, model: str) -> None:
        """``model`` answers from the next request on (Session.use_model notes the change)."""
        self.model = model
