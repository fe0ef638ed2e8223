"""Everything rollchat shows: banner, streamed markdown answers, notices, tables.

The only module that prints. Everything from a file, a config, a server or the model passes
``sanitize.harmless`` before it is drawn.
"""

from __future__ import annotations

import atexit
import contextlib
import io
import os
import re
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING, Any, cast

from rollchat.domain import Turn, Usage
from rollchat.providers import OFFLINE
from rollchat.text import redact_url
from rollchat.ui.sanitize import harmless, one_line
from rollchat.ui.table import session_rows

if TYPE_CHECKING:
    from rich.console import Console
    from rich.markdown import Markdown

    from rollchat.store import SessionInfo

_FENCE = re.compile(r"^\s{0,3}(```|~~~)")
_REFRESH_SECONDS = 1 / 15


class _TrimmedLines(io.TextIOBase):
    """A text stream that drops the spaces rich pads lines with (piped output stays clean)."""

    def __init__(self, stream: IO[str]) -> None:
        super().__init__()
        self.stream = stream
        self.partial = ""

    def write(self, text: str) -> int:
        *lines, self.partial = (self.partial + text).split("\n")
        for line in lines:
            self.stream.write(line.rstrip(" ") + "\n")
        return len(text)

    def flush(self) -> None:
        self.stream.flush()

    def isatty(self) -> bool:
        return False


def plain_console(stream: IO[str] | None = None) -> Console:
    """A console for piped output: no colours, no escape codes, no trailing padding."""
    from rich.console import Console

    trimmed = _TrimmedLines(stream or sys.stdout)
    return Console(file=cast(IO[str], trimmed), force_terminal=False, color_system=None,
                   force_interactive=False, soft_wrap=True)  # one line per record: grep-able


def usage_line(elapsed: float, usage: Usage) -> str:
    line = (f"Time: {elapsed:.1f}s | Tokens: {usage.total:,} "
            f"(in: {usage.input_tokens:,}, out: {usage.output_tokens:,}")
    if usage.cache_read_tokens or usage.cache_write_tokens:
        line += f", cache read: {usage.cache_read_tokens:,}, write: {usage.cache_write_tokens:,}"
    return line + ")"


def preview(text: str, width: int) -> str:
    """``text`` in at most ``width`` characters, cut at a word boundary and ending in "…"."""
    if len(text) <= width:
        return text
    cut = text[:max(width - 1, 1)]
    space = cut.rfind(" ")
    if space >= len(cut) // 2:
        cut = cut[:space]
    return cut.rstrip() + "…"


def markdown(text: str) -> Markdown:
    """rich's Markdown, imported on first use (it costs ~40 ms at start-up)."""
    from rich.markdown import Markdown

    return Markdown(text)


class MarkdownStream:
    """Renders streamed markdown block by block: finished blocks are printed once, only the
    block being written is redrawn, so long answers cost linear time and do not flicker."""

    def __init__(self, console: Console, live: bool) -> None:
        self.console = console
        self.pending = ""
        self.in_fence = False
        self.scanned = 0  # chars of ``pending`` whose lines were scanned for fences
        self.held_cr = False  # a chunk ended in "\r": it may be half of a "\r\n"
        from rich.live import Live

        self.live = Live(console=console, auto_refresh=False, transient=True) if live else None
        self.last_refresh = 0.0
        if self.live is not None:
            self.live.start()

    def feed(self, text: str) -> None:
        if self.held_cr:
            text, self.held_cr = "\r" + text, False
        if text.endswith("\r"):
            text, self.held_cr = text[:-1], True
        self.pending += harmless(text)
        self._flush_complete_blocks()
        if self.live is not None:
            now = time.monotonic()
            if now - self.last_refresh >= _REFRESH_SECONDS:
                self.last_refresh = now
                self.live.update(markdown(self.pending), refresh=True)

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
        if self.held_cr:
            self.pending, self.held_cr = self.pending + "\n", False
        if self.live is not None:
            from rich.text import Text

            self.live.update(Text(""), refresh=True)
        if self.pending.strip():
            self.console.print(markdown(self.pending))
        self.pending, self.scanned, self.in_fence = "", 0, False

    def close(self) -> None:
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


@dataclass
class Step:
    """A spinner's outcome: set ``done_text`` once the work succeeded, and the spinner ends
    with "<message> <done_text>"; left unset, it ends silently (the caller says why)."""

    done_text: str | None = None


def _stdin_terminal() -> int | None:
    try:
        return sys.stdin.fileno() if sys.stdin is not None and sys.stdin.isatty() else None
    except (OSError, ValueError):  # closed or replaced stdin
        return None


# The styles of plain lines, as rich names them and as SGR codes for the lines written before
# rich is loaded (the banner and start-up warnings: loading rich costs ~25 ms before the prompt).
_SGR = {"bold": "1", "dim": "2", "yellow": "33", "red": "31", "green": "32", "cyan": "36",
        "bold cyan": "1;36"}
Segment = tuple[str, str]  # (text, style; "" for none)


def _colours_wanted() -> bool:
    return "NO_COLOR" not in os.environ and os.environ.get("TERM") != "dumb"


class Renderer:
    """Output for one chat. ``interactive``: a terminal (spinners, live redraw, colours).

    ``console``: where everything is drawn; left out, a rich Console for the terminal (or a
    plain one when piped) is made when first needed, and lines printed before that are
    written directly. ``terminal_fd``: the terminal whose echo is turned off while an answer
    streams in interactive mode (default: stdin, when it is a terminal).
    """

    def __init__(self, console: Console | None = None, *, interactive: bool,
                 terminal_fd: int | None = None) -> None:
        self._console = console
        self.interactive = interactive
        self._stream: MarkdownStream | None = None
        self._terminal_fd = terminal_fd
        self._quiet: QuietTerminal | None = None

    @property
    def console(self) -> Console:
        if self._console is None:
            if self.interactive:
                from rich.console import Console

                self._console = Console()
            else:
                self._console = plain_console()
        return self._console

    def close(self) -> None:
        """End a streamed answer still open and give the terminal its echo back."""
        try:
            self.answer_abort()
        finally:
            self._restore_terminal()

    def line(self, *segments: Segment) -> None:
        """One line of styled plain text (never markup: brackets in it are shown as typed), made
        harmless: every notice, error and table line is drawn through here."""
        segments = tuple((harmless(text), style) for text, style in segments)
        if self._console is None:
            colour = self.interactive and _colours_wanted()
            sys.stdout.write("".join(
                f"\x1b[{_SGR[style]}m{text}\x1b[0m" if colour and style else text
                for text, style in segments) + "\n")
            sys.stdout.flush()
            return
        from rich.text import Text

        self._console.print(Text.assemble(*segments), highlight=False)

    # ------------------------------------------------------------ notices
    def banner(self, *, agent: str, model: str, provider: str, reason: str, where: str,
               server: str | None = None) -> None:
        """First lines of a chat. ``server``: the agent's base URL (shown without secrets)."""
        via = (f"offline model ({reason})" if provider == OFFLINE
               else f"{model} via {provider} ({reason})")
        if server and provider != OFFLINE and redact_url(server) not in reason:
            via += f" · server {redact_url(server)}"
        self.line(("rollchat", "bold"), (f" · {agent} · {via}", ""))
        keys = ("; Alt+Enter or Esc Enter inserts a newline; Ctrl-D exits" if self.interactive
                else "")
        self.line((f"Sessions in {where}. Type 'help' for commands{keys}.", "dim"))

    def info(self, message: str) -> None:
        self.line((message, ""))

    def dim(self, message: str) -> None:
        self.line((message, "dim"))

    def warn(self, message: str) -> None:
        self.line(("Warning:", "yellow"), (" " + message, ""))

    def error(self, message: str) -> None:
        self.line(("Error:", "red"), (" " + message, ""))

    @contextmanager
    def spinner(self, message: str) -> Iterator[Step]:
        """Show ``message`` while the block runs; it ends with the handle's ``done_text``
        when the caller set one (not after a failure or an interruption)."""
        step = Step()
        if not self.interactive:
            self.info(message)
            yield step
            return
        from rich.markup import escape

        with self.console.status(escape(harmless(message))):
            yield step
        if step.done_text:
            self.line((message + " ", ""), (step.done_text, "green"))

    # ------------------------------------------------------------ answers
    def answer_start(self, agent: str) -> None:
        if self.interactive:
            if self._quiet is None:
                fd = self._terminal_fd if self._terminal_fd is not None else _stdin_terminal()
                self._quiet = QuietTerminal(fd)
            self._quiet.quiet()
        self.line((f"{agent}:", "bold cyan"))
        self._stream = MarkdownStream(self.console, live=self.interactive)

    def _restore_terminal(self) -> None:
        if self._quiet is not None:
            self._quiet.restore()

    def _close_stream(self) -> None:
        stream, self._stream = self._stream, None
        try:
            if stream is not None:
                stream.close()
        finally:
            self._restore_terminal()

    def answer_delta(self, text: str) -> None:
        if self._stream is not None:
            self._stream.feed(text)

    def answer_end(self, turn: Turn, hint: str | None = None) -> None:
        """Close the answer and say how it ended; ``hint``: what to do about a failure."""
        self._close_stream()
        if turn.status == "interrupted":
            note = "interrupted: partial answer kept" if turn.assistant else \
                "interrupted before any answer"
            self.line((f"[{note}]", "yellow"))
        elif turn.status in ("unanswered", "error") and turn.error:
            self.error(turn.error)
            if hint:
                self.dim(hint)
        if turn.usage.total or turn.status == "ok":
            self.dim(usage_line(turn.elapsed, turn.usage))
        else:  # the provider never said (interrupted or failed before its usage report)
            self.dim(f"Time: {turn.elapsed:.1f}s | Tokens: not reported")

    def answer_abort(self) -> None:
        """Close an answer that will be retried, without notices."""
        self._close_stream()

    def tool_call(self, description: str) -> None:
        if self._stream is not None:  # the text before the call comes before its line
            self._stream.flush()
        self.dim(f"→ tool {description}")

    def tool_result(self, name: str, result: str) -> None:
        if self._stream is not None:
            self._stream.flush()
        head = f"← {name}: {len(result):,} chars"
        first = result.strip().splitlines()[0] if result.strip() else ""
        room = max(min(80, self.console.width - len(head) - 4), 16)
        self.dim(head + (f" · {preview(first, room)}" if first else ""))

    # ------------------------------------------------------------ tables
    def sessions(self, infos: Sequence[SessionInfo], problems: Sequence[tuple[str, str]]) -> None:
        """Numbered, most recent first; two lines each so it reads at any width."""
        if not infos:
            self.info("No saved sessions.")
        for info in infos:
            for row in session_rows(info):
                self.line(*row)
        for name, reason in problems:
            self.warn(f"{one_line(name)}: {one_line(reason)}")
