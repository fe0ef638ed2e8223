"""Context windows learned from the server: the window a too-long refusal states (or a smaller
guess) replaces the assumed one, kept per model and base URL in the user data directory."""

# The file is small JSON, rewritten through a temporary file and an atomic rename, so two
# rollchat processes writing it at once can lose one entry but never corrupt the file.

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from rollchat.providers.base import ContextTooLongError
from rollchat.text.wording import redact_url

FILE_NAME = "windows.json"
MIN_WINDOW = 1_024  # below this no chat works: never guess smaller
VERSION = 1


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

    def _read(self) -> dict[str, dict[str, object]]:
        if self.path is None:
            return dict(self._memory)
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}  # missing or unreadable: nothing learned (it is rewritten whole)
        windows = data.get("windows") if isinstance(data, dict) else None
        return {k: v for k, v in windows.items() if isinstance(v, dict)} if isinstance(
            windows, dict) else {}

    def get(self, base_url: str | None, model: str) -> int | None:
        entry = self._read().get(_key(base_url, model), {})
        tokens = entry.get("tokens")
        return tokens if isinstance(tokens, int) and tokens >= MIN_WINDOW else None

    def remember(self, base_url: str | None, model: str, tokens: int, *, stated: bool) -> None:
        """Record ``tokens`` as the window of ``model`` at ``base_url``. Raises OSError. Two
        processes learning at once both keep what they learned: the read-modify-write holds
        a lock file next to the data (``windows.json.lock``)."""
        if self.path is None:
            self._remember(base_url, model, tokens, stated)
            return
        from filelock import FileLock, Timeout

        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        try:
            with FileLock(f"{self.path}.lock", timeout=10, mode=0o600):
                self._remember(base_url, model, tokens, stated)
        except Timeout:
            raise OSError(f"{self.path} is locked by another process") from None

    def _remember(self, base_url: str | None, model: str, tokens: int, stated: bool) -> None:
        windows = self._read()
        windows[_key(base_url, model)] = {
            "model": model, "base_url": redact_url(base_url) if base_url else None,
            "tokens": tokens, "stated_by_server": stated,
            "learned": datetime.now(timezone.utc).isoformat(timespec="seconds")}
        if self.path is None:
            self._memory = windows
            return
        data = json.dumps({"version": VERSION, "windows": windows}, indent=1, sort_keys=True)
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
    """What one refusal taught: the window before and after, and whether the server said it."""

    before: int
    after: int
    stated: bool
    saved_problem: str | None = None

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
    learned, and where it is remembered. ``on_change`` resizes the session's budgets."""

    def __init__(self, book: WindowBook, *, model: str, base_url: str | None, window: int,
                 on_change: Callable[[int], None]) -> None:
        self.book = book
        self.model = model
        self.base_url = base_url
        self.window = window
        self.on_change = on_change
        self.noted: list[Learned] = []  # learned while summarizing, not yet told

    def refused(self, error: ContextTooLongError, sent: int) -> Learned | None:
        """Learn from a refusal of a prompt of about ``sent`` tokens; None if nothing new."""
        after = smaller_window(error, self.window, sent)
        if after is None:
            return None
        learned = Learned(self.window, after, error.limit is not None)
        try:
            self.book.remember(self.base_url, self.model, after, stated=learned.stated)
        except OSError as exc:
            learned.saved_problem = exc.strerror or str(exc)
        self.window = after
        self.on_change(after)
        return learned

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
