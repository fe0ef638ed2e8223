"""Fact extraction while the chat is idle: after ``memory.idle_seconds`` at the prompt with no
input, the session starts a background extraction (the prompt stays responsive). What the
background extractions find (idle ones, and those a compaction started) is drawn above the
prompt (prompt_toolkit's ``in_terminal``), or before the next prompt when the user has moved
on meanwhile."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rollchat.events import Event
    from rollchat.ui.starting import Starting


class IdleExtraction:
    """Arm at each prompt, disarm once a line is read; ``pt_app``: the prompt's Application."""

    def __init__(self, chat: Starting, pt_app: Any, seconds: float) -> None:
        self.chat = chat
        self.pt_app = pt_app
        self.seconds = seconds
        self._lock = threading.Lock()
        self._timer: threading.Timer | None = None
        self._pending: list[Event] = []
        self._prompting = False

    def arm(self) -> None:
        """The prompt waits for input: extraction starts after ``seconds`` of it."""
        app = self.chat.ready
        if app is not None and app.session.memory is not None:
            app.session.memory.notify_with(self._wake)
            found = app.session.take_memory_events()
            with self._lock:
                self._pending.extend(found)
        self.draw_pending()
        with self._lock:
            self._prompting = True
            if self.seconds > 0 and self._timer is None:
                self._timer = threading.Timer(self.seconds, self._fire)
                self._timer.daemon = True
                self._timer.name = "rollchat-idle"
                self._timer.start()

    def disarm(self) -> None:
        """A line was read (or the prompt ended): no extraction starts from this wait."""
        with self._lock:
            self._prompting = False
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None

    def _fire(self) -> None:
        try:
            app = self.chat.ready
            if app is not None:
                app.session.extract_memory()  # its events come through _wake
        finally:
            with self._lock:
                self._timer = None

    def _wake(self) -> None:
        """(A background extraction's thread) events are ready: draw them."""
        app = self.chat.ready
        events = app.session.take_memory_events() if app is not None else []
        if events:
            self._deliver(events)

    def _deliver(self, events: list[Event]) -> None:
        with self._lock:
            loop = getattr(self.pt_app, "loop", None)
            if self._prompting and loop is not None and self.pt_app.is_running:
                try:
                    loop.call_soon_threadsafe(self._above_prompt, events)
                    return
                except RuntimeError:  # the loop ended just now
                    pass
            self._pending.extend(events)

    def _above_prompt(self, events: list[Event]) -> None:
        """In the prompt's event loop: draw the events above the prompt."""
        from prompt_toolkit.application import in_terminal
        from prompt_toolkit.application.current import set_app

        async def show() -> None:
            with set_app(self.pt_app):
                async with in_terminal():
                    self._draw(events)

        if not self.pt_app.is_running:
            with self._lock:
                self._pending.extend(events)
            return
        self.pt_app.create_background_task(show())

    def _draw(self, events: list[Event]) -> None:
        app = self.chat.ready
        if app is None:
            return
        for event in events:
            app.draw(event)

    def draw_pending(self) -> None:
        """Draw, in the caller's thread, what arrived while no prompt was waiting."""
        with self._lock:
            events, self._pending = self._pending, []
        if events:
            self._draw(events)

    def stop(self) -> None:
        """No more extraction from idleness, nor drawing from here: what the extractions
        still under way find is drawn by the exit, which waits for them within its deadline."""
        self.disarm()
        app = self.chat.ready
        if app is not None:
            for session in app.sessions.values():
                if session.memory is not None:
                    session.memory.notify_with(None)
        self.draw_pending()
