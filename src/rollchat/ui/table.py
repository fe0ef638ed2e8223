"""The sessions table: each listed session as two lines of (text, style) segments. Every field
read from a session file is shown on its line (a newline in it as ``\\n``); Renderer.line makes
the whole line harmless."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rollchat.text.wording import plural, tokens_billed
from rollchat.ui.sanitize import one_line

if TYPE_CHECKING:
    from rollchat.storage.listing import Hit, Page
    from rollchat.storage.store import SessionInfo

Row = tuple[tuple[str, str], ...]
ROW_INDENT = 5  # where a row's second line starts, and its continuation lines in a terminal
# how the chat's current session is marked wherever sessions are listed (it keeps its number)
CURRENT_MARK = "* current"


def _mark(session_id: str, current: str | None) -> tuple[tuple[str, str], ...]:
    return ((f" · {CURRENT_MARK}", "bold green"),) if session_id == current else ()


def session_rows(info: SessionInfo, current: str | None = None) -> list[Row]:
    """The head line (number, id, agent, date, figures, summary; marked when it is the chat's
    ``current`` session), the title line and, when there is one, the detail line (parent,
    first query when it is not the title)."""
    problem = one_line(info.summary_problem or "")
    summary = "summary" if info.has_summary else (
        "no summary" + (f" ({problem})" if problem else ""))
    tokens = tokens_billed(info.tokens, info.tokens_exact)
    rows: list[Row] = [(
        (f"{info.number:>3}. ", "bold"), (one_line(info.session_id), "cyan"),
        (f" · {one_line(info.agent)} · {info.date:%Y-%m-%d %H:%M} · "
         f"{plural(info.queries, 'query')} · {tokens} · {summary}", ""),
        *_mark(info.session_id, current),
    )]
    title = one_line(info.title)
    rows.append(((f"     {title}" if title else "     (untitled: no query yet)",
                  "bold" if title else "dim"),))
    parent = one_line(info.resumed_from or "")
    preview = one_line(info.first_query_preview or "")
    details = [f"{'forked from' if info.forked else 'parent'}: {parent}"] if parent else []
    if preview and not title.startswith(preview.rstrip("…")):
        details.append(f'"{preview}"')
    if details:
        rows.append(((f"     {' · '.join(details)}", "dim"),))
    return rows


def more_line(page: Page, command: str) -> str | None:
    """The line under a page of the listing saying how many sessions it leaves out and how to
    see them (``command``: how to ask for all of them, or for the N most recent)."""
    if page.more <= 0:
        return None
    return (f"... {plural(page.more, 'more session')} ({page.total:,} in all): "
            f"{command}")


def hit_rows(hit: Hit, terminal: bool, current: str | None = None) -> list[Row]:
    """A search hit: its number, id, date and title (marked when it is the chat's ``current``
    session), then its snippet (none when only the title matched), the matched words in bold
    in a terminal and plain text elsewhere (piped: no markup to strip)."""
    head: Row = ((f"{hit.number:>3}. ", "bold"), (one_line(hit.session_id), "cyan"),
                 (f" · {hit.date:%Y-%m-%d %H:%M} · ", ""),
                 (one_line(hit.title) or "(untitled)", "bold"), *_mark(hit.session_id, current))
    if not hit.parts:
        return [head]
    return [head, (("     ", ""), *((one_line(text), "bold" if matched and terminal else "dim")
                                   for text, matched in hit.parts))]
