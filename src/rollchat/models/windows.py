"""Context windows learned from the server: the window it states when asked (see
providers/window_probe.py) or in a too-long refusal, or a smaller guess, replaces the assumed
one, kept per model and base URL in the user data directory with where it came from, and
the warning last told about it (told once per change, not at every start)."""

# The file is small JSON, rewritten through a temporary file and an atomic rename, so two
# rollchat processes writing it at once can lose one entry but never corrupt the file.

from __future__ import annotations

import contextlib
import json
import os
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from rollchat.interrupts import start_worker
from rollchat.providers.base import ContextTooLongError
from rollchat.providers.window_probe import StatedWindow
from rollchat.text.wording import redact_url

FILE_NAME = "windows.json"
MIN_WINDOW = 1_024  # below this no chat works: never guess smaller
VERSION = 2  # 2: each entry's "source"; version 1's "stated_by_server" is still read
# where a window came from: stated by the server (asked, or in a refusal), configured on it
# (Ollama's num_ctx), a guess (halved after a refusal without a size, or a server's default);
# assumed: rollchat's table (nothing learned)
SOURCE_WORDS = {"server": "stated by the server", "configured": "configured on the server",
                "guess": "a learned guess", "assumed": "assumed"}
KEPT = ("server", "configured")  # never replaced by a guess


@dataclass(frozen=True)
class Window:
    """A remembered window and where it came from (a SOURCE_WORDS key)."""

    tokens: int
    source: str


def default_path() -> Path:
    import platformdirs

    return Path(platformdirs.user_data_dir("rollchat")) / FILE_NAME


def _key(base_url: str | None, model: str) -> str:
    """One entry per server and model; credentials in the URL never reach the file."""
    return f"{redact_url(base_url) if base_url else 'default'} {model}"


class WindowBook:
    """The learned windows file (``path`` None: kept in memory only, as for tests)."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self._memory: dict[str, dict[str, object]] = {}
        self._told: dict[str, str] = {}

    def _read(self) -> dict[str, dict[str, object]]:
        return self._read_all()[0]

    def _read_all(self) -> tuple[dict[str, dict[str, object]], dict[str, str]]:
        """The windows, and the warning last told of each (see ``told``)."""
        if self.path is None:
            return dict(self._memory), dict(self._told)
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}, {}  # missing or unreadable: nothing learned (it is rewritten whole)
        windows = data.get("windows") if isinstance(data, dict) else None
        told = data.get("told") if isinstance(data, dict) else None
        return ({k: v for k, v in windows.items() if isinstance(v, dict)}
                if isinstance(windows, dict) else {},
                {k: v for k, v in told.items() if isinstance(v, str)}
                if isinstance(told, dict) else {})

    def tell(self, base_url: str | None, model: str, line: str) -> bool:
        """Record ``line`` as the warning about this model's window now ("": none); True
        when it is not the one recorded (by this run or an earlier one): it is to be told.
        Raises OSError."""
        key = _key(base_url, model)
        if self._read_all()[1].get(key, "") == line:
            return False
        return self._locked(lambda: self._tell(key, line))

    def _tell(self, key: str, line: str) -> bool:
        windows, told = self._read_all()
        if told.get(key, "") == line:
            return False  # another process told it meanwhile
        told[key] = line
        self._write(windows, told)
        return True

    def get(self, base_url: str | None, model: str) -> int | None:
        window = self.entry(base_url, model)
        return window.tokens if window is not None else None

    def entry(self, base_url: str | None, model: str) -> Window | None:
        return _window(self._read().get(_key(base_url, model), {}))

    def remember(self, base_url: str | None, model: str, tokens: int, *,
                 source: str) -> bool:
        """Record ``tokens`` as the window of ``model`` at ``base_url``, ``source`` saying
        where it came from; a guess never replaces a window the server stated (False: kept).
        Raises OSError. Two processes learning at once both keep what they learned: the
        read-modify-write holds a lock file next to the data (``windows.json.lock``)."""
        return self._locked(lambda: self._remember(base_url, model, tokens, source))

    def _locked(self, change: Callable[[], bool]) -> bool:
        """``change`` holding the lock file next to the data. Raises OSError."""
        if self.path is None:
            return change()
        from filelock import FileLock, Timeout

        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        try:
            with FileLock(f"{self.path}.lock", timeout=10, mode=0o600):
                return change()
        except Timeout:
            raise OSError(f"{self.path} is locked by another process") from None

    def _remember(self, base_url: str | None, model: str, tokens: int, source: str) -> bool:
        windows, told = self._read_all()
        key = _key(base_url, model)
        known = _window(windows.get(key, {}))
        if source == "guess" and known is not None and known.source in KEPT:
            return False
        windows[key] = {
            "model": model, "base_url": redact_url(base_url) if base_url else None,
            "tokens": tokens, "source": source, "stated_by_server": source in KEPT,
            "learned": datetime.now(timezone.utc).isoformat(timespec="seconds")}
        self._write(windows, told)
        return True

    def _write(self, windows: dict[str, dict[str, object]], told: dict[str, str]) -> None:
        if self.path is None:
            self._memory, self._told = windows, told
            return
        data = json.dumps({"version": VERSION, "windows": windows, "told": told}, indent=1,
                          sort_keys=True)
        fd, temp = tempfile.mkstemp(prefix=".windows-", suffix=".tmp", dir=self.path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                out.write(data + "\n")
                out.flush()
                os.fsync(out.fileno())
            os.replace(temp, self.path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temp)
            raise


def _window(entry: dict[str, object]) -> Window | None:
    tokens = entry.get("tokens")
    if not isinstance(tokens, int) or tokens < MIN_WINDOW:
        return None
    source = entry.get("source")
    if source not in SOURCE_WORDS:  # version 1
        source = "server" if entry.get("stated_by_server") is True else "guess"
    return Window(tokens, str(source))


def smaller_window(error: ContextTooLongError, window: int, sent: int) -> int | None:
    """The window to assume after ``error`` refused a prompt of about ``sent`` tokens while
    ``window`` was assumed: the one the server states, else half the assumption (at most the
    refused prompt, so the next request is always smaller); None when nothing smaller follows
    (the stated window is not smaller, or the guess would go under MIN_WINDOW)."""
    if error.limit is not None:
        return error.limit if error.limit < window else None
    guess = min(window // 2, sent) if sent > 0 else window // 2
    return guess if guess >= MIN_WINDOW else None


@dataclass
class Learned:
    """What one refusal (or answer) taught: the window before and after, and where it came
    from (a SOURCE_WORDS key)."""

    before: int
    after: int
    source: str
    saved_problem: str | None = None

    @property
    def stated(self) -> bool:
        return self.source in KEPT

    def line(self, what: str) -> str:
        """``This model's context is 8,192 tokens, not 128,000: <what>``."""
        size = (f"This model's context is {self.after:,} tokens, not {self.before:,}"
                if self.stated else
                f"The server did not say how large this model's context is; assuming "
                f"{self.after:,} tokens, not {self.before:,}")
        note = f" (not remembered: {self.saved_problem})" if self.saved_problem else ""
        return f"{size}: {what}.{note}"


class WindowLearner:
    """The window of one model at one server for a session: what was assumed, what was
    learned and from where (``source``), and where it is remembered. ``on_change`` resizes
    the session's budgets; it runs on the session's thread (a window the server states in
    the background waits in ``poll``)."""

    def __init__(self, book: WindowBook, *, model: str, base_url: str | None, window: int,
                 on_change: Callable[[int], None]) -> None:
        self.book = book
        self.model = model
        self.base_url = base_url
        self.window = window
        known = book.entry(base_url, model)
        self.source = known.source if known is not None and known.tokens == window \
            else "assumed"
        self.on_change = on_change
        self.noted: list[Learned] = []  # learned while summarizing, not yet told
        self._stated: StatedWindow | None = None  # told by the server, not yet applied
        self.asking: threading.Thread | None = None  # the question to the server, if asked
        self.unanswered = False  # the last question got no window (down): ask it again
        self._told: str | None = ""  # the warning last told in this run (see to_tell)
        self._first = True  # no request planned with it yet (see first_answer)
        self._lock = threading.Lock()

    def refused(self, error: ContextTooLongError, sent: int) -> Learned | None:
        """Learn from a refusal of a prompt of about ``sent`` tokens; None if nothing new.
        A refusal that states no size never replaces a window the server stated."""
        if error.limit is None and self.source in KEPT:
            return None
        after = smaller_window(error, self.window, sent)
        if after is None:
            return None
        return self._learn(after, "server" if error.limit is not None else "guess")

    def cut_off(self, input_tokens: int, output_tokens: int, limit: int) -> Learned | None:
        """An answer stopped at "length" before its output limit: the prompt and the answer
        met the window, so it is about their sum (a guess); None when nothing new."""
        reached = input_tokens + output_tokens
        if output_tokens >= limit or input_tokens <= 0 or self.source in KEPT or \
                not MIN_WINDOW <= reached < self.window:
            return None
        return self._learn(reached, "guess")

    def _learn(self, after: int, source: str) -> Learned:
        learned = Learned(self.window, after, source)
        try:
            self.book.remember(self.base_url, self.model, after, source=source)
        except OSError as exc:
            learned.saved_problem = exc.strerror or str(exc)
        self.window, self.source = after, source
        self.on_change(after)
        return learned

    def ask(self, probe: Callable[[], StatedWindow | None]) -> threading.Thread:
        """Ask the server its window in a daemon thread (``probe``): the chat does not wait
        for it; what it states is kept for ``poll``, and remembered."""
        def run() -> None:
            try:
                stated = probe()
            except Exception:  # a server that cannot tell: the window stays as it is
                stated = None
            if stated is None:  # down, or states nothing: asked again before the next request
                self.unanswered = True
                return
            if stated.tokens < MIN_WINDOW:
                return
            with contextlib.suppress(OSError):
                self.book.remember(self.base_url, self.model, stated.tokens,
                                   source=stated.source)
            with self._lock:
                self._stated = stated

        self.asking = threading.Thread(target=run, name="rollchat-window", daemon=True)
        return start_worker(self.asking)

    def down(self) -> None:
        """A request found nothing listening: the server is asked again before the next
        request (it may come back with another model, or another window)."""
        self.unanswered = True

    def ask_again(self, probe: Callable[[], StatedWindow | None]) -> threading.Thread:
        """Ask again (see ``ask``) a server that did not answer the last question or was
        down since; the next request waits for its answer as the first did (first_answer)."""
        self.unanswered, self._first = False, True
        return self.ask(probe)

    def first_answer(self, seconds: float) -> None:
        """Before the first request planned with this window: wait (at most ``seconds``)
        for the server's answer if it is still on its way, so a remembered or assumed window
        never plans a request the server's statement was about to correct."""
        first, self._first = self._first, False
        if first and self.asking is not None:
            self.asking.join(seconds)

    def poll(self) -> StatedWindow | None:
        """The window the server stated since the last poll, applied (on the session's
        thread, before a request is planned); None when nothing new."""
        with self._lock:
            stated, self._stated = self._stated, None
        if stated is None or (stated.source == "guess" and self.source in KEPT):
            return None
        if stated.tokens == self.window and stated.source == self.source:
            return None
        self.window, self.source = stated.tokens, stated.source
        self.on_change(stated.tokens)
        return stated

    def to_tell(self, warning: str | None) -> bool:
        """Whether ``warning``, about the window now (None: there is none), is to be told:
        not the one last told of this model at this server, in this run or an earlier one
        (see WindowBook.tell). Recorded now; None clears it, so the same warning is told
        again after the window changed and back."""
        if warning == self._told:
            return False
        self._told = warning
        try:
            changed = self.book.tell(self.base_url, self.model, warning or "")
        except OSError:
            changed = True  # not recorded: told again next time rather than never
        return changed and warning is not None

    def summary_refused(self, error: ContextTooLongError, sent: int) -> bool:
        """A summary request was refused (the summarizer's hook): True if a smaller window
        was learned; it is told once the summary is written (see ``take``)."""
        learned = self.refused(error, sent)
        if learned is not None:
            self.noted.append(learned)
        return learned is not None

    def take(self) -> list[Learned]:
        noted, self.noted = self.noted, []
        return noted
