"""``rollchat show``: a saved session drawn with rich, for reading: its header fields, each turn
(the answers as markdown), and the summary as a section of its own. Every text from the file
passes ``sanitize`` first."""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable, Iterator
from typing import IO, TYPE_CHECKING

from rollchat.domain import (
    Block,
    Image,
    Note,
    SessionHeader,
    Summary,
    Thinking,
    ToolResult,
    ToolUse,
    Transcript,
    Turn,
)
from rollchat.domain import Text as TextBlock
from rollchat.storage.transcript.stream import TranscriptStream
from rollchat.text.wording import plural
from rollchat.ui.plain_markdown import plain_markdown
from rollchat.ui.render import plain_console, usage_line
from rollchat.ui.sanitize import harmless, one_line
from rollchat.ui.show_text import cuts
from rollchat.ui.show_text import is_line as _line
from rollchat.ui.show_text import is_prose as _prose
from rollchat.ui.show_text import title as _title
from rollchat.ui.stream import markdown
from rollchat.ui.styled_show import Palette, styled_part, styled_turn

if TYPE_CHECKING:
    from rich.console import Console, RenderableType

_RESULT_LINES = 12  # of a tool result; ``rollchat export`` prints them whole
_BATCH = 64 * 1024  # characters of prose turns written to the output at once
class _Source:
    """What ``show`` reads, whole or streamed: the header, the turns once, then the summary."""

    def __init__(self, t: Transcript | TranscriptStream, summary_dropped: bool) -> None:
        self.header = t.header
        self._t = t
        self._dropped = summary_dropped
        self.count = 0  # turns read so far

    def turns(self) -> Iterator[Turn]:
        for turn in (self._t.turns if isinstance(self._t, Transcript) else self._t.turns()):
            self.count += 1
            yield turn

    def ending(self) -> tuple[Summary | None, bool]:
        """The summary and whether a corrupted one was dropped: once ``turns`` are read."""
        if isinstance(self._t, Transcript):
            return self._t.summary, self._dropped
        return self._t.summary, self._t.summary_dropped


def session_view(t: Transcript | TranscriptStream, *, summary_dropped: bool = False,
                 ) -> Iterator[RenderableType]:
    """What ``show`` prints, in order, drawn as each turn is read. ``summary_dropped``: the
    file's summary block could not be read (a stream knows it itself)."""
    source = _Source(t, summary_dropped)
    yield from _head(source.header)
    for turn in source.turns():
        yield from _turn(turn, source.header.agent)
    yield from _tail(source)


def _head(h: SessionHeader) -> Iterator[RenderableType]:
    from rich.rule import Rule
    from rich.table import Table

    yield Rule(f"{one_line(h.agent)} conversation · {one_line(h.session_id)}", style="bold")
    fields = Table.grid(padding=(0, 2))
    fields.add_column(style="bold")
    fields.add_column()
    rows = [("Date", f"{h.date:%Y-%m-%d %H:%M:%S %z}"),
            ("Agent", f"{h.agent} ({h.agent_path})"), ("Model", f"{h.model} ({h.provider})")]
    if h.resumed_from is not None:
        rows.append(("Forked from" if h.forked else "Resumed from", h.resumed_from))
    if h.continued_in:
        rows.append(("Continued in", ", ".join(h.continued_in)))
    rows += [("Queries", f"{h.total_queries}"), ("Tokens billed", f"{h.total_tokens:,}")]
    if h.context_tokens:
        rows.append(("Context tokens", f"{h.context_tokens:,}"))
    for name, value in rows:
        fields.add_row(name, one_line(value))
    yield fields


def _tail(source: _Source) -> Iterator[RenderableType]:
    from rich.rule import Rule
    from rich.text import Text

    summary, summary_dropped = source.ending()
    yield Text("")
    if summary is not None:
        yield _summary(summary)
    elif summary_dropped:
        yield Rule("Its summary block is corrupted: not shown ('rollchat export' prints the "
                   "file as it is)", style="yellow")
    elif source.count:
        yield Rule("No summary (the session ended without one)", style="dim")


def _turn(turn: Turn, agent: str) -> Iterator[RenderableType]:
    from rich.rule import Rule
    from rich.text import Text

    yield Text("")
    yield Rule(_title(turn), style="cyan", align="left")
    if turn.kind in ("restored", "handoff"):
        yield Text.assemble(("Context: ", "bold"), harmless(turn.context))
    if turn.kind != "restored":
        yield Text.assemble(("You: ", "bold cyan"), harmless(turn.user))
    if turn.typed:
        yield Text(f"[typed {harmless(turn.typed)}]", style="dim")
    for image in turn.attached:
        yield Text(f"[attached {_image(image)}]", style="dim")
    if turn.kind == "handoff":  # the message went to the other agent: no answer here
        return
    said = False
    for block in turn.blocks:
        if isinstance(block, TextBlock):
            if not said:
                yield Text(f"{one_line(agent)}:", style="bold green")
                said = True
            yield markdown(harmless(block.text))
        else:
            yield from _block(block)
    if not said:
        yield Text(f"{one_line(agent)}:", style="bold green")
    if turn.status != "ok":
        why = f": {one_line(turn.error)}" if turn.error else ""
        yield Text(f"[{turn.status}{why}]", style="yellow")
    yield Text(usage_line(turn.elapsed, turn.usage), style="dim")


def _block(block: Block) -> Iterator[RenderableType]:
    """A call, a result (its first lines), a note; a provider's own block is not shown."""
    from rich.text import Text

    if isinstance(block, ToolUse):
        call = block.call
        args = json.dumps(dict(call.arguments), ensure_ascii=False)
        yield Text(f"→ tool {one_line(call.name)}({one_line(args)})", style="dim")
    elif isinstance(block, ToolResult):
        lines = harmless(block.content).split("\n")
        shown = "\n".join(lines[:_RESULT_LINES])
        if len(lines) > _RESULT_LINES:
            shown += f"\n… {plural(len(lines) - _RESULT_LINES, 'more line')} (rollchat export)"
        yield Text(("error: " if block.is_error else "") + shown,
                   style="red dim" if block.is_error else "dim")
        for image in block.images:
            yield Text(f"[{_image(image)}]", style="dim")
    elif isinstance(block, Note):
        yield Text(f"({one_line(block.kind)}: {harmless(block.text)})", style="dim italic")
    elif isinstance(block, Thinking):
        yield Text(f"thinking: {harmless(block.text)}", style="dim italic")


def _image(image: Image) -> str:
    where = f": {one_line(image.path)}" if image.path else ""
    return f"image {image.media_type}, {image.size:,} bytes{where}"


def _summary(s: Summary) -> RenderableType:
    from rich.console import Group
    from rich.panel import Panel
    from rich.text import Text

    parts: list[RenderableType] = [Text("Background", style="bold"), Text(harmless(s.background))]
    for head, items in (("Topics discussed", s.topics), ("Decisions made", s.decisions),
                        ("Pending", s.pending), ("Timeline", s.timeline),
                        ("Files and artifacts", s.artifacts)):
        if head == "Timeline" and not items:  # (optional: older summaries have none)
            continue
        parts.append(Text(f"\n{head}", style="bold"))
        if not items:
            parts.append(Text("(none)", style="dim"))
        parts.extend(Text(f"• {harmless(item)}") for item in items)
    dropped = [plural(n, what) for n, what in ((s.dropped_topics, "topic"),
                                               (s.dropped_artifacts, "artifact")) if n]
    if dropped:
        parts.append(Text(f"\n({' and '.join(dropped)} left out to fit the summary budget)",
                          style="dim"))
    title = "Summary" + (" (written locally: the model's summary failed)" if s.fallback else "")
    return Panel(Group(*parts), title=title, title_align="left", border_style="magenta")


def prose_turn(turn: Turn, agent: str, width: int) -> str | None:
    """The text ``_turn`` draws on a console without colours ``width`` cells wide, written
    here without rich (which costs ~1 ms a turn: minutes for a session of 100,000 turns), for
    a turn of plain prose only (``_PROSE``: a question and answers as rich wraps them, word
    by word); None for any other turn, which rich draws. Every text passes ``harmless``."""
    if turn.kind not in ("query", "carried") or turn.attached or turn.typed or \
            turn.status != "ok":
        return None
    texts = [harmless(block.text) if isinstance(block, TextBlock) else None
             for block in turn.blocks]
    name = f"{one_line(agent)}:"
    user = f"You: {harmless(turn.user)}"
    usage = usage_line(turn.elapsed, turn.usage)
    title = _title(turn)
    if len(title) > width - 2 or any(text is None or not _prose(text) for text in texts) \
            or not all(_line(line) for line in (user, name, usage)):
        return None
    lines = ["", _rule(title, width), *_wrapped(user, width), name]
    for text in texts:
        lines += _wrapped(text or "", width)
    lines += _wrapped(usage, width)
    if max(map(len, lines)) > width:  # a word wider than the line: rich folds it
        return None
    return "\n".join(lines) + "\n"


def _rule(title: str, width: int) -> str:
    """A rule with ``title`` at its left, as rich draws it when ``len(title) <= width - 2``."""
    return f"{title} " + "─" * (width - len(title) - 1)


def plain_part(part: RenderableType, width: int) -> str | None:
    """What rich draws of one part of ``_turn`` (a Text of plain lines, a rule titled with
    one, an answer of ``_PROSE``) on a console without colours ``width`` cells wide, written
    without rich; None for any other part, which rich draws."""
    from rich.markdown import Markdown
    from rich.rule import Rule
    from rich.text import Text

    if isinstance(part, Text):
        if part.justify is not None or part.overflow is not None or part.no_wrap or \
                part.end != "\n":
            return None
        if not part.plain:
            return "\n"
        lines: list[str] = []
        for line in part.plain.split("\n"):
            if not _line(line):
                return None
            lines += _wrapped(line, width)
    elif isinstance(part, Rule):
        title = part.title
        if part.align != "left" or part.characters != "─" or not isinstance(title, str) or \
                len(title) > width - 2 or not _line(title):
            return None
        return _rule(title, width) + "\n"
    elif isinstance(part, Markdown) and _prose(part.markup):
        lines = _wrapped(part.markup, width)
    elif isinstance(part, Markdown):  # paragraphs and lists of words: as rich draws them
        return plain_markdown(part.markup, width, _wrapped)
    else:
        return None
    if any(len(line) > width for line in lines):  # a word wider than the line: rich folds it
        return None
    return "\n".join(lines) + "\n"


def _wrapped(text: str, width: int) -> list[str]:
    """``text`` (``_PROSE`` or ``_LINE``: words apart by one space) wrapped as rich wraps it
    (``cuts``: a word wider than the line stays whole, callers decline it)."""
    return [text[start:end] for start, end in cuts(text, width)]


def show(t: Transcript | TranscriptStream, *, summary_dropped: bool = False,
         terminal: bool) -> None:
    """Print the session to stdout as its turns are read (a stream holds one turn at a time):
    plain text, or for a ``terminal`` through the pager ($PAGER, else less; less shows colours
    unless $LESS says otherwise, and quits at once when it all fits on the screen). A turn of
    plain prose, and the plain parts of any turn, are written directly (``prose_turn`` piped,
    ``styled_show`` in a terminal): the same bytes rich writes, without rich's cost."""
    if not terminal:
        _show_plain(_Source(t, summary_dropped))
        return
    _paged(_Source(t, summary_dropped))


def _paged(source: _Source) -> None:
    """The session drawn for this terminal and written to the pager's input as it comes
    (rich's own pager holds the whole text first); the pager quitting early ends the
    drawing."""
    import io
    import shutil
    import subprocess

    from rich.console import Console

    screen = Console()
    command = os.environ.get("PAGER") or ("less" if shutil.which("less") else "")
    if not command.strip():
        _show_styled(source, screen)
        return
    env = {**os.environ, "LESS": os.environ.get("LESS", "-FRX")}
    pager = subprocess.Popen(command, shell=True, stdin=subprocess.PIPE, env=env)
    assert pager.stdin is not None
    pipe = io.TextIOWrapper(pager.stdin, encoding="utf-8", errors="backslashreplace")
    console = Console(file=pipe, force_terminal=True,
                      width=screen.width, height=screen.height, no_color=screen.no_color)
    try:
        _show_styled(source, console)
        pipe.close()
    except (BrokenPipeError, KeyboardInterrupt):  # the reader quit the pager: stop drawing
        pass
    finally:
        with contextlib.suppress(OSError):
            pipe.close()
        while True:  # Ctrl-C in the pager is the pager's, as pydoc's pager has it
            try:
                pager.wait()
                break
            except KeyboardInterrupt:
                continue


def _show_styled(source: _Source, console: Console) -> None:
    """``session_view`` drawn on ``console``: a turn of prose written whole
    (``styled_turn``), the plain parts of any other written directly (``styled_part``),
    what is left drawn by rich."""
    console.size = console.size  # measured once (else at every part: a system call each)
    palette = Palette(console)
    out, width = console.file, console.width
    agent = source.header.agent
    for part in _head(source.header):
        console.print(part)

    def draw(turn: Turn) -> None:
        for part in _turn(turn, agent):
            styled = styled_part(part, width, palette)
            if styled is None:
                console.print(part)
            else:
                out.write(styled)

    _write_turns(source, out, lambda turn: styled_turn(turn, agent, width, palette), draw)
    for part in _tail(source):
        console.print(part)
    out.flush()


def _write_turns(source: _Source, out: IO[str], whole: Callable[[Turn], str | None],
                 draw: Callable[[Turn], None]) -> None:
    """Every turn of ``source``: as the text ``whole`` makes of it where it makes one (such
    turns are written in batches: fewer writes), else by ``draw``."""
    written: list[str] = []  # whole turns not yet written
    size = 0
    try:
        for turn in source.turns():
            text = whole(turn)
            if text is not None:
                written.append(text)
                size += len(text)
                if size < _BATCH:
                    continue
            out.write("".join(written))
            written.clear()
            size = 0
            if text is None:
                draw(turn)
    finally:  # a turn that cannot be read further on: the ones before it are shown
        out.write("".join(written))
        out.flush()


def _draw(parts: Iterator[RenderableType], plain: Console, width: int) -> None:
    """The parts of a turn that is not plain prose: each written directly where it can be
    (``plain_part``), else drawn by rich."""
    for part in parts:
        text = plain_part(part, width)
        if text is None:
            plain.print(part, soft_wrap=False)
        else:
            plain.file.write(text)


def _show_plain(source: _Source) -> None:
    plain = plain_console()
    plain.size = plain.size  # measured once (else at every part: a system call each)
    out, width = plain.file, plain.width
    agent = source.header.agent
    for part in _head(source.header):  # wrapped at the width: a soft-wrapped box or list
        plain.print(part, soft_wrap=False)  # item is cropped
    _write_turns(source, out, lambda turn: prose_turn(turn, agent, width),
                 lambda turn: _draw(_turn(turn, agent), plain, width))
    for part in _tail(source):
        plain.print(part, soft_wrap=False)
    out.flush()
