"""``show`` in a terminal: the common parts of a turn (its rule, plain lines, prose and simple
markdown answers) written with the escape codes rich writes for them, without rich's drawing
(~2.6 ms a turn: over ten minutes for a session of 270,000 turns); rich draws the rest."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from rollchat.domain import Text as TextBlock
from rollchat.domain import Turn
from rollchat.ui.plain_markdown import markdown_blocks
from rollchat.ui.render import usage_line
from rollchat.ui.sanitize import harmless, one_line
from rollchat.ui.show_text import cuts, is_line, is_prose, title

if TYPE_CHECKING:
    from rich.console import Console, RenderableType

# Styled runs of a text: (start, end, style or None), in order, covering it.
Runs = list[tuple[int, int, "str | None"]]
# A turn's title as ``show`` makes it: its numbers are all that differ between turns, and
# rich's highlighter styles any digits of a shape alike (no hex, exponent or address here).
_TITLE = re.compile(r"(?:Query \d+|Carried over \d+|Session restored|Handed off) · "
                    r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d")
_NUMBER = re.compile(r"\d+")
_ZEROS = str.maketrans("123456789", "000000000")
_SHAPES = 256  # titles' shapes remembered at most (a session has a handful)


class Palette:
    """What a console writes around text of each style, learned from the console itself
    (rich's own output of one character in that style: colour system, NO_COLOR and theme
    included), and the highlighted shape of each title it has drawn."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self._codes: dict[str, tuple[str, str]] = {}
        self._titles: dict[str, Runs | None] = {}
        self._drawn_titles: dict[str, str | None] = {}
        self._agents: dict[tuple[str, int], list[str] | None] = {}
        self._rules: dict[int, str] = {}  # the painted line of a rule's right part, by length

    def paint(self, text: str, style: str | None) -> str:
        if not text or style is None:
            return text
        start, end = self.codes(style)
        return f"{start}{text}{end}" if start else text

    def codes(self, style: str | None) -> tuple[str, str]:
        """What is written before and after a text in ``style`` (nothing for no style)."""
        if style is None:
            return "", ""
        codes = self._codes.get(style)
        if codes is None:
            codes = self._codes[style] = self._learn(style)
        return codes

    def _learn(self, style: str) -> tuple[str, str]:
        from rich.text import Text

        with self.console.capture() as captured:
            self.console.print(Text("x", style=style), end="")
        start, x, end = captured.get().partition("x")
        return (start, end) if x else ("", "")

    def title_runs(self, text: str) -> Runs | None:
        """The styled runs of a rule's ``text`` (``_TITLE``) as rich highlights it, or None
        when its highlighting is not plain runs (rich draws it then)."""
        if not _TITLE.fullmatch(text):
            return None
        shape = text.translate(_ZEROS)
        if shape not in self._titles:
            if len(self._titles) >= _SHAPES:
                self._titles.clear()
            self._titles[shape] = self._highlighted(text)
        return self._titles[shape]

    def rule_line(self, length: int) -> str:
        """A rule's line of ``length`` cells right of its title, in cyan."""
        line = self._rules.get(length)
        if line is None:
            line = self._rules[length] = self.paint("─" * length, "cyan")
        return line

    def agent_lines(self, agent: str, width: int) -> list[str] | None:
        """The "Agent:" line above each answer, in bold green (the same in every turn)."""
        key = (agent, width)
        if key not in self._agents:
            name = f"{one_line(agent)}:"
            self._agents[key] = _text_lines(name, "bold green", width, self) \
                if is_line(name) else None
        return self._agents[key]

    def title_template(self, text: str) -> str | None:
        """The highlighted ``text`` (``_TITLE``) as a format string with a ``{}`` for each of
        its numbers (the codes around them depend on its shape only), or None."""
        if not _TITLE.fullmatch(text):
            return None
        shape = text.translate(_ZEROS)
        if shape in self._drawn_titles:
            return self._drawn_titles[shape]
        runs = self.title_runs(text)
        template = None
        if runs is not None:
            parts = []
            for start, end, style in runs:
                start_code, end_code = self.codes(style)
                piece = _NUMBER.sub("{}", shape[start:end])
                parts.append(f"{start_code}{piece}{end_code}" if start_code else piece)
            template = "".join(parts)
            if template.count("{}") != len(_NUMBER.findall(shape)):
                template = None  # a style starts or ends inside a number: rich draws it
        if len(self._drawn_titles) >= _SHAPES:
            self._drawn_titles.clear()
        self._drawn_titles[shape] = template
        return template

    def _highlighted(self, text: str) -> Runs | None:
        shown = self.console.render_str(text, style="rule.text")
        if shown.plain != text or shown.style not in ("", "rule.text") or \
                self.console.get_style("rule.text"):  # (a title style of its own: rich)
            return None
        spans = sorted((span.start, span.end, str(span.style)) for span in shown.spans
                       if span.end > span.start)
        runs: Runs = []
        at = 0
        for start, end, style in spans:
            if start < at:  # overlapping styles: rich combines them
                return None
            if start > at:
                runs.append((at, start, None))
            runs.append((start, end, style))
            at = end
        if at < len(text):
            runs.append((at, len(text), None))
        return runs


def _painted(text: str, runs: Runs, first: int, start: int, end: int,
             palette: Palette) -> tuple[str, int]:
    """``text[start:end]`` with the styles of ``runs``, looked at from run ``first`` on
    (callers go forward line by line: each run is passed over once); the styled text and
    the run the next line starts in."""
    out = []
    while first < len(runs) - 1 and runs[first][1] <= start:
        first += 1
    k = first
    while k < len(runs) and runs[k][0] < end:
        run_start, run_end, style = runs[k]
        out.append(palette.paint(text[max(run_start, start):min(run_end, end)], style))
        k += 1
    return "".join(out), first


def _lines(text: str, runs: Runs, width: int, palette: Palette, pad: bool) -> list[str] | None:
    """``text`` wrapped at ``width`` as rich wraps it, styled: a line keeps the space after
    its last word when that fits (rich strips only what is beyond the width); ``pad``: filled
    with spaces to the width (a markdown paragraph). None when a word is wider than a line."""
    lines = []
    size = len(text)
    simple = len(runs) == 1
    first = 0
    for start, end in cuts(text, width):
        if end - start > width:
            return None
        if end < size and end - start < width:
            end += 1  # the space after the line's last word
        if simple:
            line = palette.paint(text[start:end], runs[0][2])
        else:
            line, first = _painted(text, runs, first, start, end, palette)
        lines.append(line + " " * (width - (end - start)) if pad else line)
    return lines


def _text_lines(text: str, style: str | None, width: int, palette: Palette,
                pad: bool = False) -> list[str] | None:
    """``_lines`` of a text in one style (most of them): each line painted whole."""
    start_code, end_code = palette.codes(style)
    size = len(text)
    if size <= width:  # one line (most of them): no cut to look for
        line = f"{start_code}{text}{end_code}" if start_code and text else text
        return [line + " " * (width - size) if pad else line]
    lines = []
    for start, end in cuts(text, width):
        if end - start > width:
            return None
        if end < size and end - start < width:
            end += 1  # the space after the line's last word
        line = text[start:end]
        if start_code and line:
            line = f"{start_code}{line}{end_code}"
        lines.append(line + " " * (width - (end - start)) if pad else line)
    return lines


def _you_lines(user: str, width: int, palette: Palette) -> list[str] | None:
    """The "You: ..." line: its label in bold cyan, the rest plain."""
    if width < 6:
        return _lines(user, [(0, 5, "bold cyan"), (5, len(user), None)], width, palette, False)
    lines = _text_lines(user, None, width, palette)
    if lines is not None:  # the first line holds the label and its space (width >= 6)
        lines[0] = palette.paint("You: ", "bold cyan") + lines[0][5:]
    return lines


def _rule(text: str, width: int, palette: Palette) -> str | None:
    """A rule in cyan, ``text`` at its left as rich highlights it."""
    if len(text) > width - 2:
        return None
    template = palette.title_template(text)
    if template is None:
        return None
    return template.format(*_NUMBER.findall(text)) + " " + \
        palette.rule_line(width - len(text) - 1)


def styled_turn(turn: Turn, agent: str, width: int, palette: Palette) -> str | None:
    """What ``show._turn`` draws for a turn of plain prose (as ``show.prose_turn`` takes),
    as rich writes it to ``palette``'s console ``width`` cells wide; None for any other."""
    if turn.kind not in ("query", "carried") or turn.attached or turn.typed or \
            turn.status != "ok":
        return None
    texts = []
    for block in turn.blocks:
        if not isinstance(block, TextBlock):
            return None
        text = harmless(block.text)
        if not is_prose(text):
            return None
        texts.append(text)
    user = f"You: {harmless(turn.user)}"
    usage = usage_line(turn.elapsed, turn.usage)
    if not (is_line(user) and is_line(usage)):
        return None
    said = palette.agent_lines(agent, width)
    rule = _rule(title(turn), width, palette)
    you = _you_lines(user, width, palette)
    used = _text_lines(usage, "dim", width, palette)
    if rule is None or you is None or said is None or used is None:
        return None
    lines = ["", rule, *you, *said]
    for text in texts:
        answer = _text_lines(text, None, width, palette, True)
        if answer is None:
            return None
        lines += answer
    lines += used
    return "\n".join(lines) + "\n"


def styled_part(part: RenderableType, width: int, palette: Palette) -> str | None:
    """What rich writes of one part of ``show._turn`` (a Text of plain lines in one style or
    in styled runs, a rule titled with a turn's title, an answer of prose or simple
    markdown) to ``palette``'s console ``width`` cells wide, written without rich; None for
    any other part, which rich draws."""
    from rich.markdown import Markdown
    from rich.rule import Rule
    from rich.text import Text

    if isinstance(part, Text):
        return _text_part(part, width, palette)
    if isinstance(part, Rule):
        title_text = part.title
        if part.align != "left" or part.characters != "─" or part.style != "cyan" or \
                part.end != "\n" or not isinstance(title_text, str):
            return None
        rule = _rule(title_text, width, palette)
        return None if rule is None else rule + "\n"
    if isinstance(part, Markdown) and part.style == "none" and part.justify is None:
        return _markdown(part.markup, width, palette)
    return None


def _text_part(part: RenderableType, width: int, palette: Palette) -> str | None:
    from rich.text import Text

    assert isinstance(part, Text)
    if part.justify is not None or part.overflow is not None or part.no_wrap or \
            part.end != "\n" or not isinstance(part.style, str):
        return None
    plain = part.plain
    if not plain:
        return "\n"
    base = part.style or None
    if part.spans:  # runs of their own styles (``Text.assemble``): one line, no base style
        if base is not None or "\n" in plain or not is_line(plain):
            return None
        runs: Runs = []
        at = 0
        for span in sorted(part.spans, key=lambda span: span.start):
            if span.start < at or not isinstance(span.style, str):
                return None
            if span.start > at:
                runs.append((at, span.start, None))
            runs.append((span.start, span.end, span.style or None))
            at = span.end
        if at < len(plain):
            runs.append((at, len(plain), None))
        lines = _lines(plain, runs, width, palette, False)
        return None if lines is None else "\n".join(lines) + "\n"
    out: list[str] = []
    for line in plain.split("\n"):
        if not is_line(line):
            return None
        wrapped = _text_lines(line, base, width, palette)
        if wrapped is None:
            return None
        out += wrapped
    return "\n".join(out) + "\n"


def _markdown(markup: str, width: int, palette: Palette) -> str | None:
    """An answer of prose, or of paragraphs and tight lists (``markdown_blocks``), as rich's
    Markdown writes it: each line filled to the width, a list's bullet in its style."""
    if is_prose(markup):
        lines = _text_lines(markup, None, width, palette, True)
        return None if lines is None else "\n".join(lines) + "\n"
    blocks = markdown_blocks(markup) if width >= 8 else None
    if blocks is None:
        return None
    out: list[str] = []
    bullet, hang = palette.paint(" • ", "markdown.item.bullet"), \
        palette.paint("   ", "markdown.item.bullet")
    for k, (is_list, items) in enumerate(blocks):
        if k or is_list:  # rich puts a blank line before a list, even the first block
            out.append("")
        for text, spans in items:
            runs = _runs(text, spans)
            lines = _lines(text, runs, width - 3 if is_list else width, palette, True)
            if lines is None:
                return None
            if is_list:
                lines = [(hang if n else bullet) + line for n, line in enumerate(lines)]
            out += lines
    return "\n".join(out) + "\n"


def _runs(text: str, spans: list[tuple[int, int, str]]) -> Runs:
    runs: Runs = []
    at = 0
    for start, end, style in spans:
        if start > at:
            runs.append((at, start, None))
        runs.append((start, end, style))
        at = end
    if at < len(text) or not runs:
        runs.append((at, len(text), None))
    return runs
