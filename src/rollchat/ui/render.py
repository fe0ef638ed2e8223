"""Everything rollchat shows: banner, streamed markdown answers, notices, tables.

The only module that prints. Everything from a file, a config, a server or the model passes
``sanitize.harmless`` before it is drawn.
"""

from __future__ import annotations

import io
import os
import re
import shutil
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING, cast

from rollchat.models.prices import money
from rollchat.providers import OFFLINE
from rollchat.text.wording import redact_url
from rollchat.ui.sanitize import harmless, one_line
from rollchat.ui.table import ROW_INDENT, session_rows

if TYPE_CHECKING:
    from rich.console import Console

    from rollchat.domain import Turn, Usage
    from rollchat.storage.store import SessionInfo
    from rollchat.ui.stream import MarkdownStream, QuietTerminal



_PADDING = re.compile(r" +\n")  # the spaces that end a line


class _TrimmedLines(io.TextIOBase):
    """A text stream that drops the spaces rich pads lines with (piped output stays clean)."""

    def __init__(self, stream: IO[str]) -> None:
        super().__init__()
        self.stream = stream
        self.partial = ""

    def write(self, text: str) -> int:
        whole = self.partial + text
        cut = whole.rfind("\n") + 1  # the lines ended so far, written at once
        whole, self.partial = whole[:cut], whole[cut:]
        if " \n" in whole:
            whole = _PADDING.sub("\n", whole)
        if whole:
            self.stream.write(whole)
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


@dataclass
class Step:
    """A spinner's outcome: set ``done_text`` once the work succeeded, and the spinner ends
    with "<message> <done_text>"; left unset, it ends silently (the caller says why)."""

    done_text: str | None = None


# The styles of plain lines, as rich names them and as SGR codes for the lines written before
# rich is loaded (the banner and start-up warnings: loading rich costs ~25 ms before the prompt).
_SGR = {"bold": "1", "dim": "2", "yellow": "33", "red": "31", "green": "32", "cyan": "36"}


def _sgr(style: str) -> str:
    """The SGR codes of a style of words ("bold yellow": "1;33"); words it lacks are left out."""
    return ";".join(_SGR[word] for word in style.split() if word in _SGR)


Segment = tuple[str, str]  # (text, style; "" for none)
# How the offline model is asked to call a tool (providers/offline/tooluse.py), in the banner:
# here, because importing the offline model before the first prompt costs ~100 ms.
OFFLINE_TOOLS = ("The offline model calls the agent's tools when asked in plain words (count "
                 "the words in 'a b c', given a word_count tool: 'rollchat init-agent' writes "
                 "an agent with one) or with: use TOOL key=value (or JSON: use TOOL "
                 "{\"key\": \"value\"}); 'tools' lists them.")


def _wrapped(segments: Sequence[Segment], width: int, hang: int = 0) -> list[Segment]:
    """``segments`` with the spaces where a line of ``width`` columns ends turned into line
    breaks (as rich wraps: at words; a word longer than a line is left to the terminal). The
    lines a break starts are indented by ``hang`` columns (unless that leaves less than 20)."""
    text = "".join(t for t, _ in segments)
    hang = hang if width - hang >= 20 else 0
    breaks: set[int] = set()
    start, limit = 0, width
    while len(text) - start > limit:
        newline = text.find("\n", start, start + limit + 1)
        cut = text.rfind(" ", start + 1, start + limit + 1)
        if newline != -1:
            start, limit = newline + 1, width
        elif cut == -1:
            start, limit = start + limit, width
        else:
            breaks.add(cut)
            start, limit = cut + 1, width - hang
    indent = "\n" + " " * hang
    out, offset = [], 0
    for part, style in segments:
        out.append(("".join(indent if offset + i in breaks else c for i, c in enumerate(part)),
                    style))
        offset += len(part)
    return out


def output_renderer() -> Renderer:
    """What a subcommand draws its output with: rich's console in a terminal, plain text when
    piped; never interactive (no spinners, no live redraw)."""
    from rich.console import Console

    return Renderer(Console() if sys.stdout.isatty() else plain_console(), interactive=False)


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
                 terminal_fd: int | None = None, show_tools: bool = False) -> None:
        self._console = console
        self.interactive = interactive
        self._stream: MarkdownStream | None = None
        self._terminal_fd = terminal_fd
        self._quiet: QuietTerminal | None = None
        self.show_tools = show_tools  # --show-tools / `tools verbose`: full arguments, results

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

    def control(self, sequence: str) -> None:
        """Write a terminal control sequence (OSC 52, a bell) as it is: only in an interactive
        chat (piped output never gets one); flushed at once."""
        if not self.interactive:
            return
        if self._stream is not None:
            self._stream.flush()
        stream = self.console.file
        stream.write(sequence)
        stream.flush()

    @property
    def terminal(self) -> bool:
        """Whether the lines go to a terminal (styles shown, long lines wrapped)."""
        return self.interactive or (self._console is not None and self._console.is_terminal)

    def line(self, *segments: Segment, hang: int = 0) -> None:
        """One line of styled plain text (never markup: brackets in it are shown as typed), made
        harmless: every notice, error and table line is drawn through here. In a terminal too
        narrow for it, it wraps at words, and ``hang`` indents the lines after the first (so
        that they go on under their column, not at the left edge); piped, it is one line."""
        segments = tuple((harmless(text), style) for text, style in segments)
        if self._stream is not None:  # said during an answer (it was cut off): after the
            self._stream.flush()  # text and the folded thinking so far, never above them
        if self.terminal and (self._console is None or hang):
            width = (self._console.width if self._console is not None
                     else shutil.get_terminal_size().columns)
            segments = tuple(_wrapped(segments, width, hang))
        if self._console is None:
            colour = self.interactive and _colours_wanted()
            sys.stdout.write("".join(
                f"\x1b[{_sgr(style)}m{text}\x1b[0m" if colour and _sgr(style) else text
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
        if provider == OFFLINE:
            self.line((OFFLINE_TOOLS, "dim"))

    def info(self, message: str) -> None:
        self.line((message, ""))

    def entry(self, term: str, text: str, column: int = 25) -> None:
        """One row of a two-column list (``help``): ``term`` indented by two, ``text`` from
        ``column`` on, its continuation lines too (see ``line``)."""
        head = f"  {term:<{column - 3}} "
        self.line((head + text, ""), hang=len(head))

    def document(self, text: str) -> None:
        """Markdown drawn as an answer is (a summary shown with ``summary``)."""
        from rollchat.ui.stream import markdown

        self.console.print(markdown(harmless(text)))

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
        from rollchat.ui.stream import MarkdownStream, QuietTerminal, stdin_terminal

        if self.interactive:
            if self._quiet is None:
                fd = self._terminal_fd if self._terminal_fd is not None else stdin_terminal()
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

    def suspend_answer(self) -> bool:
        """Stop drawing a streamed answer for a question (its text so far stays printed, the
        terminal gets its echo back); True when one was streaming (see ``resume_answer``)."""
        if self._stream is None:
            return False
        self._close_stream()
        return True

    def resume_answer(self) -> None:
        """Continue drawing the answer suspended by ``suspend_answer``."""
        from rollchat.ui.stream import MarkdownStream

        if self._quiet is not None:
            self._quiet.quiet()
        self._stream = MarkdownStream(self.console, live=self.interactive)

    def answer_delta(self, text: str) -> None:
        if self._stream is not None:
            self._stream.feed(text)

    def thinking_delta(self, text: str) -> None:
        if self._stream is not None:
            self._stream.think(text)

    def answer_end(self, turn: Turn, hint: str | None = None, cost: float | None = None,
                   cost_unknown: bool = False) -> None:
        """Close the answer and say how it ended; ``hint``: what to do about a failure;
        ``cost``: the turn's, in dollars (None: not shown, or "cost unknown" when
        ``cost_unknown``: a remote model with no known price)."""
        self._close_stream()
        if turn.status == "interrupted":
            note = "interrupted: partial answer kept" if turn.assistant else \
                "interrupted before any answer"
            self.line((f"[{note}]", "yellow"))
        elif turn.status in ("unanswered", "error") and turn.error \
                and " tokens reached (" not in turn.error:  # (a cut-off: its warning said it)
            self.error(turn.error)
            if hint:
                self.dim(hint)
        if turn.usage.total or turn.status == "ok":
            price = f" · {money(cost)}" if cost is not None and turn.usage.total else (
                " · cost unknown" if cost_unknown and turn.usage.total else "")
            self.dim(usage_line(turn.elapsed, turn.usage) + price)
        else:  # the provider never said (interrupted or failed before its usage report)
            self.dim(f"Time: {turn.elapsed:.1f}s | Tokens: not reported")

    def answer_abort(self) -> None:
        """Close an answer that will be retried, without notices."""
        self._close_stream()

    def tool_call(self, description: str) -> None:
        self.dim(f"→ tool {description}")

    def tool_result(self, name: str, result: str, elapsed: float = 0.0,
                    status: str = "ok") -> None:
        if self.show_tools:  # debugging: the whole result
            self.dim(f"← {name} ({status}, {elapsed:.1f}s):")
            self.line((result, ""))
            return
        if status == "refused":  # the whole reason: it may say what to do
            self.line((f"← {name}: {one_line(result)}", "yellow"))
            return
        size = f"{len(result):,} chars in {elapsed:.1f}s"
        head = {"interrupted": f"← {name}: interrupted",
                "error": f"← {name}: failed ({size})"}.get(status, f"← {name}: {size}")
        first = result.strip().splitlines()[0] if result.strip() else ""
        room = max(min(80, self.console.width - len(head) - 4), 16)
        line = head + (f" · {preview(first, room)}" if first else "")
        self.line((line, "yellow" if status in ("refused", "error") else "dim"))

    # ------------------------------------------------------------ tables
    def sessions(self, infos: Sequence[SessionInfo], problems: Sequence[tuple[str, str]],
                 current: str | None = None) -> None:
        """Numbered, most recent first, the chat's ``current`` session marked; two lines each
        so it reads at any width."""
        if not infos:
            self.info("No saved sessions.")
        for info in infos:
            for row in session_rows(info, current):
                self.line(*row, hang=ROW_INDENT)
        for name, reason in problems:
            self.warn(f"{one_line(name)}: {one_line(reason)}")
