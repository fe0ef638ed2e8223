"""Everything rollchat shows: banner, streamed markdown answers, notices, tables.

The only module that prints. Model text is stripped of terminal control sequences before it is
shown (it is kept verbatim in the transcript).
"""

from __future__ import annotations

import io
import re
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import IO, TYPE_CHECKING, cast

from rich.console import Console
from rich.live import Live
from rich.markup import escape
from rich.text import Text

from rollchat.domain import Turn, Usage

if TYPE_CHECKING:
    from rich.markdown import Markdown

    from rollchat.store import SessionInfo

# C0 controls except tab and newline, DEL, and C1 controls (0x9b is a CSI on some terminals).
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
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
    trimmed = _TrimmedLines(stream or sys.stdout)
    return Console(file=cast(IO[str], trimmed), force_terminal=False, color_system=None,
                   force_interactive=False)


def harmless(text: str) -> str:
    """Make control characters visible instead of letting the terminal interpret them."""
    return _CONTROL.sub(lambda m: f"^{chr((ord(m.group()) + 64) % 128)}"
                        if ord(m.group()) < 0x80 else f"\\x{ord(m.group()):02x}", text)


def human_tokens(n: int) -> str:
    if n < 1000:
        return str(n)
    if n < 1_000_000:
        return f"{n / 1000:.1f}K".replace(".0K", "K")
    return f"{n / 1_000_000:.1f}M".replace(".0M", "M")


def usage_line(elapsed: float, usage: Usage) -> str:
    line = (f"Time: {elapsed:.1f}s | Tokens: {usage.total:,} "
            f"(in: {usage.input_tokens:,}, out: {usage.output_tokens:,}")
    if usage.cache_read_tokens or usage.cache_write_tokens:
        line += f", cache read: {usage.cache_read_tokens:,}, write: {usage.cache_write_tokens:,}"
    return line + ")"


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
        self.block_start_fence = False
        self.live = Live(console=console, auto_refresh=False, transient=True) if live else None
        self.last_refresh = 0.0
        if self.live is not None:
            self.live.start()

    def feed(self, text: str) -> None:
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

    def close(self) -> None:
        if self.live is not None:
            self.live.update(Text(""), refresh=True)
            self.live.stop()
        if self.pending.strip():
            self.console.print(markdown(self.pending))
        self.pending = ""


class Renderer:
    """Output for one chat. ``interactive``: a terminal (spinners, live redraw, colours)."""

    def __init__(self, console: Console, *, interactive: bool) -> None:
        self.console = console
        self.interactive = interactive
        self._stream: MarkdownStream | None = None

    # ------------------------------------------------------------ notices
    def banner(self, *, agent: str, model: str, provider: str, reason: str, where: str) -> None:
        self.console.print(f"[bold]rollchat[/] · {escape(agent)} · {escape(model)} "
                           f"via {escape(provider)} ({escape(reason)})")
        self.console.print(f"[dim]Sessions in {escape(where)}. Type 'help' for commands; "
                           "Alt+Enter or Esc Enter inserts a newline; Ctrl-D exits.[/]")

    def info(self, message: str) -> None:
        self.console.print(escape(harmless(message)))

    def dim(self, message: str) -> None:
        self.console.print(f"[dim]{escape(harmless(message))}[/]")

    def warn(self, message: str) -> None:
        self.console.print(f"[yellow]Warning:[/] {escape(harmless(message))}")

    def error(self, message: str) -> None:
        self.console.print(f"[red]Error:[/] {escape(harmless(message))}")

    @contextmanager
    def spinner(self, message: str) -> Iterator[None]:
        if self.interactive:
            with self.console.status(escape(message)):
                yield
            self.console.print(f"{escape(message)} [green]done[/]")
        else:
            self.console.print(escape(message))
            yield

    # ------------------------------------------------------------ answers
    def answer_start(self, agent: str) -> None:
        self.console.print(f"[bold cyan]{escape(harmless(agent))}:[/]")
        self._stream = MarkdownStream(self.console, live=self.interactive)

    def answer_delta(self, text: str) -> None:
        if self._stream is not None:
            self._stream.feed(text)

    def answer_end(self, turn: Turn) -> None:
        if self._stream is not None:
            self._stream.close()
            self._stream = None
        if turn.status == "interrupted":
            self.console.print("[yellow]\\[interrupted: partial answer kept][/]")
        elif turn.status in ("unanswered", "error") and turn.error:
            self.error(turn.error)
            if turn.status == "unanswered":
                self.dim("Your message was kept; press Up and Enter to send it again.")
        self.dim(usage_line(turn.elapsed, turn.usage))

    def answer_abort(self) -> None:
        """Close an answer that will be retried, without notices."""
        if self._stream is not None:
            self._stream.close()
            self._stream = None

    def tool_call(self, description: str) -> None:
        self.dim(f"→ tool {description}")

    def tool_result(self, name: str, result: str) -> None:
        first = result.strip().splitlines()[0] if result.strip() else ""
        self.dim(f"← {name}: {len(result):,} chars" + (f" · {first[:80]}" if first else ""))

    # ------------------------------------------------------------ tables
    def sessions(self, infos: Sequence[SessionInfo], problems: Sequence[tuple[str, str]]) -> None:
        """Numbered, most recent first; two lines each so it reads at any width."""
        if not infos:
            self.info("No saved sessions.")
        for info in infos:
            summary = "summary" if info.has_summary else (
                "no summary" + (f" ({info.summary_problem})" if info.summary_problem else ""))
            head = Text(f"{info.number:>3}. ", style="bold")
            head.append(info.session_id, style="cyan")
            head.append(f" · {harmless(info.agent)} · {info.date:%Y-%m-%d %H:%M} · "
                        f"{info.queries} {'query' if info.queries == 1 else 'queries'} · "
                        f"{human_tokens(info.tokens)} tokens · {summary}")
            self.console.print(head)
            detail = f"     parent: {info.resumed_from}" if info.resumed_from else "     "
            preview = harmless(info.first_query_preview or "")
            if preview:
                detail += (" · " if info.resumed_from else "") + f'"{preview}"'
            if detail.strip():
                self.console.print(Text(detail, style="dim"))
        for name, reason in problems:
            self.warn(f"{name}: {reason}")
