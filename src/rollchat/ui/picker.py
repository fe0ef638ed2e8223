"""The session picker (``rollchat pick``, a bare ``--resume``): a filter line, the sessions
most recent first with their numbers (THE numbering, storage/listing.py; the chat's current
session marked), filtered fuzzily as you type (``rollchat.text.fuzzy``), and a preview of the
highlighted session's summary, read from its file only when it is highlighted.

Keys: type to filter; Up/Down (Ctrl-P/Ctrl-N), PageUp/PageDown, Home/End move; Enter chooses;
Esc or Ctrl-C cancels.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from rollchat.domain import Summary
from rollchat.storage.listing import SessionInfo
from rollchat.text.fuzzy import Candidate, Matcher
from rollchat.text.wording import session_size
from rollchat.ui.sanitize import one_line

if TYPE_CHECKING:
    from prompt_toolkit.buffer import Buffer
    from prompt_toolkit.formatted_text import StyleAndTextTuples
    from prompt_toolkit.input import Input
    from prompt_toolkit.key_binding import KeyBindings
    from prompt_toolkit.layout import Layout, Window
    from prompt_toolkit.output import Output

SummaryLoader = Callable[[SessionInfo], "Summary | None"]
_PREVIEW_ITEMS = 6  # per summary section
_PREVIEW_CHARS = 300  # of one item or the background: 'rollchat show' has them whole


def _short(text: str) -> str:
    line = one_line(text)
    return line if len(line) <= _PREVIEW_CHARS else line[:_PREVIEW_CHARS - 1] + "…"


NARROW_TITLE = 30  # a title's columns worth more than the date column


@dataclass(frozen=True)
class Picked:
    """What the picker ended with: a session, or how it was cancelled."""

    info: SessionInfo | None
    cancelled: Literal["escape", "interrupt"] | None = None


def candidates(infos: Sequence[SessionInfo], titles: dict[str, str] | None = None,
               ) -> list[Candidate]:
    """What the filter matches for each session: title (``titles``' else its own), id, date,
    first user line, agent."""
    titles = titles or {}
    return [Candidate(i.session_id, (titles.get(i.session_id) or i.title, i.session_id,
                                     i.date.isoformat(" ", "minutes")[:16],
                                     i.first_query_preview or "",
                                     i.agent), i.date)
            for i in infos]


class Picker:
    """The picker's state, apart from the terminal: the filter, the matches, the selection."""

    def __init__(self, infos: Sequence[SessionInfo], load_summary: SummaryLoader,
                 titles: dict[str, str] | None = None, current: str | None = None) -> None:
        self.infos = {i.session_id: i for i in infos}
        self.current_id = current  # the chat's current session: marked, keeps its number
        self.digits = len(str(max((i.number for i in infos), default=0)))  # of the numbers
        self.titles = titles or {}
        self.matcher = Matcher(candidates(infos, self.titles))
        self.load_summary = load_summary
        self.query = ""
        self.matches: list[Candidate] = self.matcher.rank("")
        self.selected = 0
        self.top = 0  # the first row shown
        self._summaries: dict[str, Summary | str | None] = {}

    def filter(self, query: str) -> None:
        if query != self.query:
            self.query = query
            self.matches = self.matcher.rank(query)
            self.selected = self.top = 0

    def move(self, delta: int) -> None:
        if self.matches:
            self.selected = max(0, min(len(self.matches) - 1, self.selected + delta))

    @property
    def current(self) -> SessionInfo | None:
        if not self.matches:
            return None
        return self.infos[self.matches[self.selected].key]

    def rows(self, height: int) -> list[tuple[bool, SessionInfo]]:
        """The rows to show in ``height`` lines, scrolled to keep the selection in view."""
        height = max(1, height)
        if self.selected < self.top:
            self.top = self.selected
        elif self.selected >= self.top + height:
            self.top = self.selected - height + 1
        shown = self.matches[self.top:self.top + height]
        return [(self.top + n == self.selected, self.infos[c.key]) for n, c in enumerate(shown)]

    def summary(self, info: SessionInfo) -> Summary | str | None:
        """The session's summary (None: it has none; a string: why it cannot be read), read
        once, when first highlighted."""
        if info.session_id not in self._summaries:
            if not info.has_summary or info.summary_problem:
                self._summaries[info.session_id] = None
            else:
                try:
                    self._summaries[info.session_id] = self.load_summary(info)
                except Exception as exc:  # a file gone or unreadable: shown, never fatal
                    self._summaries[info.session_id] = f"cannot read it: {exc}"
        return self._summaries[info.session_id]

    def title(self, info: SessionInfo) -> str:
        """The session's title: the one given to the picker, else its own (the header's
        Title, else its first question's first line)."""
        return self.titles.get(info.session_id) or info.title

    def label(self, info: SessionInfo) -> str:
        """A row's start: the session's number (``resume N``), the current one marked."""
        mark = "*" if info.session_id == self.current_id else " "
        return f"{info.number:>{self.digits}}{mark}" if info.number else ""

    def row_text(self, info: SessionInfo, width: int) -> str:
        """A row: number, date, id, queries, title; where that leaves the title fewer than
        NARROW_TITLE columns the date goes (the id holds it); a row still too wide ends in
        an ellipsis, never mid-id without one."""
        title = (self.title(info) or info.first_query_preview
                 or ("(no queries)" if not info.queries else "(first question not readable)"))
        title = one_line(title)
        head = f"{self.label(info)}{info.date:%Y-%m-%d %H:%M}  {info.session_id}  "
        if len(head) + 7 + min(len(title), NARROW_TITLE) > width:  # the id says when, too
            head = f"{self.label(info)}{info.session_id}  "
        text = f"{head}{info.queries:>3}q  {title}"
        return text if len(text) <= width else text[:max(1, width - 1)] + "…"

    def preview(self) -> list[tuple[str, str]]:
        """The preview pane's lines as (style, text): the highlighted session and its summary."""
        info = self.current
        if info is None:
            return [("class:dim", "No session matches the filter.")]
        lines: list[tuple[str, str]] = []
        title = self.title(info)
        if title:
            lines.append(("class:title", one_line(title)))
        lines.append(("class:title", f"{one_line(info.session_id)}  ·  {one_line(info.agent)}"
                                     f"  ·  {one_line(info.model)}"))
        if info.session_id == self.current_id:
            lines.append(("class:warn", "* current: the session you are in (Enter says so)"))
        lines.append(("", f"{info.date:%Y-%m-%d %H:%M}  ·  "
                          f"{session_size(info.queries, info.tokens, info.tokens_exact)}"))
        if info.first_query_preview and info.first_query_preview != title:
            lines.append(("", f"First: {one_line(info.first_query_preview)}"))
        summary = self.summary(info)
        if isinstance(summary, str):
            lines.append(("class:warn", one_line(summary)))
        elif summary is None:
            why = (f" ({one_line(info.summary_problem)})" if info.summary_problem else "")
            lines.append(("class:dim", f"No summary yet{why}: resuming summarizes it first."))
        else:
            if summary.background:
                lines.append(("class:head", "Background"))
                lines.append(("", _short(summary.background)))
            for head, items in (("Topics", summary.topics), ("Decisions", summary.decisions),
                                ("Pending", summary.pending)):
                if not items:
                    continue
                lines.append(("class:head", head))
                lines.extend(("", f"- {_short(item)}") for item in items[:_PREVIEW_ITEMS])
                if len(items) > _PREVIEW_ITEMS:
                    lines.append(("class:dim", f"  … {len(items) - _PREVIEW_ITEMS} more"))
        return lines


def pick(infos: Sequence[SessionInfo], load_summary: SummaryLoader, *,
         titles: dict[str, str] | None = None, input: Input | None = None,
         output: Output | None = None, current: str | None = None) -> Picked:
    """Run the picker full screen until a session is chosen or the picker is cancelled
    (``current``: the chat's current session, marked)."""
    from prompt_toolkit.application import Application
    from prompt_toolkit.buffer import Buffer
    from prompt_toolkit.styles import Style

    state = Picker(infos, load_summary, titles, current)
    query = Buffer(multiline=False, on_text_changed=lambda buf: state.filter(buf.text))
    ended: list[Picked] = []
    layout, list_window = _layout(state, query)
    style = Style.from_dict({"selected": "reverse", "dim": "#888888", "head": "bold",
                             "title": "bold", "warn": "#cc8800"})
    app: Application[None] = Application(
        layout=layout, key_bindings=_keys(state, list_window, ended.append), style=style,
        full_screen=True, input=input, output=output)
    app.run()
    return ended[0] if ended else Picked(None, "interrupt")


def _keys(state: Picker, list_window: Window, end: Callable[[Picked], None]) -> KeyBindings:
    """Up/Down (Ctrl-P/Ctrl-N), PageUp/PageDown (a page: the list's height), Home/End move;
    Enter chooses; Esc or Ctrl-C cancels (``end`` gets what the picker ended with)."""
    from prompt_toolkit.key_binding import KeyBindings

    bindings = KeyBindings()

    def page() -> int:
        info = list_window.render_info
        return max(1, info.window_height - 1) if info is not None else 10

    def done(event: Any, result: Picked) -> None:
        end(result)
        event.app.exit()

    for keys, delta in ((("up",), -1), (("c-p",), -1), (("down",), 1), (("c-n",), 1)):
        bindings.add(*keys)(lambda event, d=delta: state.move(d))
    bindings.add("pageup")(lambda event: state.move(-page()))
    bindings.add("pagedown")(lambda event: state.move(page()))
    bindings.add("home")(lambda event: state.move(-len(state.matches)))
    bindings.add("end")(lambda event: state.move(len(state.matches)))

    @bindings.add("enter")
    def _choose(event: Any) -> None:
        if state.current is not None:
            done(event, Picked(state.current))

    @bindings.add("escape", eager=True)
    def _escape(event: Any) -> None:
        done(event, Picked(None, "escape"))

    @bindings.add("c-c")
    def _interrupt(event: Any) -> None:
        done(event, Picked(None, "interrupt"))

    return bindings


def _layout(state: Picker, query: Buffer) -> tuple[Layout, Window]:
    """The screen: a heading, the filter line, the status, the list (also returned: the keys
    page by its height) and the preview of the highlighted session."""
    from prompt_toolkit.application import get_app
    from prompt_toolkit.layout import (
        BufferControl,
        FormattedTextControl,
        HSplit,
        Layout,
        Window,
    )
    from prompt_toolkit.layout.dimension import Dimension
    from prompt_toolkit.layout.processors import BeforeInput

    list_window: Window

    def list_lines() -> StyleAndTextTuples:
        info = list_window.render_info
        height = info.window_height if info is not None else 10
        # the list spans the screen: the terminal's width, also at the first drawing (which
        # has no render_info yet; 80 columns there cut titles for good in a wide terminal)
        width = get_app().output.get_size().columns
        out: StyleAndTextTuples = []
        for selected, row in state.rows(height):
            style = "class:selected" if selected else ""
            out.append((style, state.row_text(row, width).ljust(width) + "\n"))
        return out

    def status() -> StyleAndTextTuples:
        total = len(state.infos)
        shown = len(state.matches)
        return [("class:dim", f" {shown} of {total} sessions · ↑↓ move · Enter resume · "
                              "Esc cancel")]

    def preview_lines() -> StyleAndTextTuples:
        return [(style, text + "\n") for style, text in state.preview()]

    list_window = Window(FormattedTextControl(list_lines), height=Dimension(min=3, weight=1),
                         wrap_lines=False)
    layout = Layout(HSplit([
        Window(FormattedTextControl([("class:head", "Resume which session? ")]), height=1),
        Window(BufferControl(query, input_processors=[BeforeInput("filter> ",
                                                                  style="class:head")]),
               height=1),
        Window(FormattedTextControl(status), height=1),
        list_window,
        Window(height=1, char="─", style="class:dim"),
        Window(FormattedTextControl(preview_lines), height=Dimension(min=3, weight=1),
               wrap_lines=True),
    ]), focused_element=query)
    return layout, list_window
