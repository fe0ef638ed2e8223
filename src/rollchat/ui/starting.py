"""The chat being built behind the first prompt (``Starting``): what the REPL, the piped input
and the idle extraction hold until the session core is ready."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

from rollchat.interrupts import SLICE_SECONDS, signals_blocked

if TYPE_CHECKING:
    from rollchat.ui.app import ChatApp
    from rollchat.ui.render import Renderer


class Starting:
    """The chat being built, in a background thread once the first prompt is drawn (importing
    the session core costs ~50 ms the prompt need not wait for), or at once by ``get``.

    ``build`` returns the chat and the notices it has for the user; they are drawn by
    ``get``, in the caller's thread (a background thread must not write under the prompt).
    ``label``: what the toolbar shows until the chat is ready; ``out``: the chat's renderer.
    """

    def __init__(self, build: Callable[[], tuple[ChatApp, list[str]]], *, label: str,
                 out: Renderer) -> None:
        self._build = build
        self.label = label
        self.out = out
        self._lock = threading.Lock()
        self._started = False
        self._done = threading.Event()
        self._app: ChatApp | None = None
        self._notices: list[str] = []
        self._error: BaseException | None = None

    @property
    def ready(self) -> ChatApp | None:
        return self._app if self._done.is_set() else None

    def start(self, then: Callable[[ChatApp], None] | None = None) -> None:
        """Build in a daemon thread (if not built yet), then run ``then`` there, with Ctrl-C
        and the ending signals blocked (it may run beside the first answer: it must start no
        program, see interrupts.signals_blocked)."""
        with self._lock:
            started, self._started = self._started, True
        threading.Thread(target=self._run, args=(not started, then), name="rollchat-start",
                         daemon=True).start()

    def _run(self, build: bool, then: Callable[[ChatApp], None] | None) -> None:
        if build:
            try:
                self._app, self._notices = self._build()
            except KeyboardInterrupt:  # (only in the caller's thread) not a failed build:
                with self._lock:       # the next ``get`` builds again
                    self._started = False
                raise
            except BaseException as exc:  # re-raised by ``get`` in the caller's thread
                self._error = exc
            self._done.set()
        self._done.wait()
        if then is not None and self._app is not None:
            with signals_blocked():  # (the build may start MCP servers: not blocked there)
                then(self._app)

    def get(self) -> ChatApp:
        """The chat, built here if no thread is building it; its notices drawn once."""
        with self._lock:
            started, self._started = self._started, True
        if not started:
            self._run(True, None)
        while not self._done.wait(SLICE_SECONDS):  # (see interrupts.join: a Ctrl-C is seen)
            pass
        if self._error is not None:
            raise self._error
        assert self._app is not None
        notices, self._notices = self._notices, []
        for notice in notices:
            self.out.warn(notice)
        return self._app
