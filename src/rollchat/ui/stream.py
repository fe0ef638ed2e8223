"""A streamed answer on the screen: markdown drawn block by block under a live region, and
the terminal's echo turned off while it streams."""

from __future__ import annotations

import atexit
import contextlib
import functools
import re
import sys
import threading
import time
from typing import TYPE_CHECKING, Any

from rollchat.interrupts import start_worker
from rollchat.ui.sanitize import harmless

if TYPE_CHECKING:
    from rich.console import Console
    from rich.markdown import Markdown

_FENCE = re.compile(r"^\s{0,3}(```|~~~)")
_REFRESH_SECONDS = 1 / 15


def markdown(text: str) -> Markdown:
    """rich's Markdown, imported on first use (it costs ~40 ms at start-up), with HTML read
    as text: rich draws nothing for an HTML block, so a ``<think>`` block (what a reasoning
    model served without a reasoning parser sends), and the answer after it in the same
    block, would vanish from the screen.

    rich's own constructor builds a new markdown-it parser for every text (~1 ms: most of
    ``show``'s time on a big session); this one parses once, with this thread's parser."""
    return _markdown_class()(text)


_parsers = threading.local()  # each thread's parser (a parser's rule caches are shared state)


@functools.cache
def _markdown_class() -> type[Markdown]:
    from markdown_it import MarkdownIt
    from markdown_it.token import Token
    from rich.markdown import Markdown

    class SharedParserMarkdown(Markdown):
        """rich's Markdown with the attributes its ``__init__`` sets (rich 15), the text
        parsed by a parser made once per thread instead of once per object."""

        def __init__(self, markup: str) -> None:
            self.markup = markup
            self.code_theme = "monokai"
            self.justify = None
            self.style = "none"
            self.hyperlinks = True
            self.inline_code_lexer = None
            self.inline_code_theme = self.code_theme

        @functools.cached_property
        def parsed(self) -> list[Token]:  # type: ignore[override]
            """The text parsed when first drawn (``show`` writes the simplest markdown
            piped without rich: it is never parsed then)."""
            parser = getattr(_parsers, "parser", None)
            if parser is None:
                parser = MarkdownIt("commonmark", {"html": False}).enable(
                    ["strikethrough", "table"])
                _parsers.parser = parser
            return parser.parse(self.markup)

    return SharedParserMarkdown


class MarkdownStream:
    """Renders streamed markdown block by block: finished blocks are printed once, only the
    block being written is redrawn, so long answers cost linear time and do not flicker.

    The live region is redrawn at most every ``_REFRESH_SECONDS``; text that came in between
    is drawn by a catch-up thread once that time is up, so the last words before a pause (a
    slow model, a tool call being written) are on the screen, not held until the next chunk.
    """

    def __init__(self, console: Console, live: bool) -> None:
        self.console = console
        self.pending = ""
        self.in_fence = False
        self.scanned = 0  # chars of ``pending`` whose lines were scanned for fences
        self.held_cr = False  # a chunk ended in "\r": it may be half of a "\r\n"
        from rich.live import Live

        self.live = Live(console=console, auto_refresh=False, transient=True) if live else None
        self.last_refresh = 0.0
        self.thought = ""  # the thinking streaming now (shown live, folded when it ends)
        self.thinking_since = 0.0
        self._lock = threading.RLock()  # the screen: this stream's drawing, in either thread
        self._stale = False  # the live region is behind what came in
        self._closed = threading.Event()
        if self.live is not None:
            self.live.start()
            start_worker(threading.Thread(target=self._catch_up, name="rollchat-redraw",
                                          daemon=True))

    def _catch_up(self) -> None:
        while not self._closed.wait(_REFRESH_SECONDS):
            with self._lock:
                if self._stale and not self._closed.is_set():
                    self._redraw()

    def _redraw(self, force: bool = True) -> None:
        """The live region as things are now: the thinking's last line while it streams,
        else the block being written (unless drawn less than _REFRESH_SECONDS ago and not
        ``force``: then the catch-up thread draws it)."""
        if self.live is None:
            return
        now = time.monotonic()
        if not force and now - self.last_refresh < _REFRESH_SECONDS:
            self._stale = True
            return
        self.last_refresh, self._stale = now, False
        if self.thought:
            from rich.text import Text

            tail = self.thought.rstrip().rsplit("\n", 1)[-1][-(self.console.width - 14):]
            self.live.update(Text(f"thinking… {tail}", style="dim italic"), refresh=True)
        else:
            self.live.update(markdown(self.pending), refresh=True)

    def think(self, text: str) -> None:
        """The model's thinking: while it streams, its last line is shown dim under a
        "thinking" mark; when the answer starts it folds to one dim line (the transcript and
        ``thinking`` keep it whole)."""
        with self._lock:
            if not self.thought:
                self.flush()  # the text before it (a previous round's) stays above it
                self.thinking_since = time.monotonic()
            self.thought += harmless(text)
            self._redraw(force=False)

    def _fold(self) -> None:
        if not self.thought:
            return
        from rich.text import Text

        words, seconds = len(self.thought.split()), time.monotonic() - self.thinking_since
        self.thought = ""
        if self.live is not None:
            self.live.update(Text(""), refresh=True)
        self.console.print(Text(f"▸ thought for {seconds:.1f}s ({words:,} words; 'thinking' "
                                "shows them)", style="dim italic"))

    def feed(self, text: str) -> None:
        with self._lock:
            self._fold()
            if self.held_cr:
                text, self.held_cr = "\r" + text, False
            if text.endswith("\r"):
                text, self.held_cr = text[:-1], True
            self.pending += harmless(text)
            self._flush_complete_blocks()
            self._redraw(force=False)

    def _flush_complete_blocks(self) -> None:
        cut = -1
        pos = self.scanned
        while True:
            nl = self.pending.find("\n", pos)
            if nl < 0:
                break
            line_start = self.pending.rfind("\n", 0, nl) + 1
            line = self.pending[line_start:nl]
            if _FENCE.match(line):
                self.in_fence = not self.in_fence
            elif not self.in_fence and line.strip() == "" and line_start > 0:
                cut = nl + 1
            pos = nl + 1
        self.scanned = pos
        if cut > 0:
            block, self.pending = self.pending[:cut], self.pending[cut:]
            self.scanned -= cut
            if block.strip():
                self.console.print(markdown(block))

    def flush(self) -> None:
        """Print what is pending now, even an unfinished block (before a tool call line)."""
        with self._lock:
            self._fold()
            if self.held_cr:
                self.pending, self.held_cr = self.pending + "\n", False
            self._stale = False
            if self.live is not None:
                from rich.text import Text

                self.live.update(Text(""), refresh=True)
            if self.pending.strip():
                self.console.print(markdown(self.pending))
            self.pending, self.scanned, self.in_fence = "", 0, False

    def close(self) -> None:
        with self._lock:
            self._closed.set()
            self.flush()
            if self.live is not None:
                self.live.stop()


class QuietTerminal:
    """Terminal echo off while an answer streams: a ``^C`` echoed under rich's live region
    shifts it down a line, so its erase leaves a duplicated line behind.

    Only ECHO and ECHOCTL are cleared (typed-ahead input stays buffered for the next prompt);
    the saved attributes come back on ``restore``, and at exit at the latest.
    """

    def __init__(self, fd: int | None) -> None:
        self.fd = fd
        self.saved: list[Any] | None = None
        self._at_exit = False

    def quiet(self) -> None:
        if self.fd is None or self.saved is not None:
            return
        try:
            import termios
        except ImportError:  # not a POSIX terminal
            return
        try:
            attrs = termios.tcgetattr(self.fd)
            self.saved = [list(a) if isinstance(a, list) else a for a in attrs]
            attrs[3] &= ~(termios.ECHO | getattr(termios, "ECHOCTL", 0))
            if not self._at_exit:
                atexit.register(self.restore)
                self._at_exit = True
            termios.tcsetattr(self.fd, termios.TCSANOW, attrs)
        except (termios.error, OSError, ValueError):
            self.saved = None

    def restore(self) -> None:
        saved, self.saved = self.saved, None
        if saved is None or self.fd is None:
            return
        import termios

        # A terminal that is gone has nothing left to restore.
        with contextlib.suppress(termios.error, OSError, ValueError):
            termios.tcsetattr(self.fd, termios.TCSANOW, saved)


def stdin_terminal() -> int | None:
    try:
        return sys.stdin.fileno() if sys.stdin is not None and sys.stdin.isatty() else None
    except (OSError, ValueError):  # closed or replaced stdin
        return None
