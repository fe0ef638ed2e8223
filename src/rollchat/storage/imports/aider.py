"""aider's chat history (``.aider.chat.history.md``): one turn per message the user typed, the
model's markdown answer, aider's own output lines kept as notes."""

# aider appends markdown to the file as the chat goes: ``# aider chat started at YYYY-MM-DD
# HH:MM:SS`` opens each run; what the user typed is written as ``#### `` lines (one message
# may span several); aider's own output (commands it ran, edits applied, commits, token
# counts, errors) as ``> `` lines; the model's answer as plain markdown. aider ends the lines it
# writes itself with two spaces (a markdown line break), which tells them from the answer's own
# headings and quotes. In-chat commands (``/add``, ``/diff``, ``/undo`` ...) are notes; the ones
# that ask the model something (``/ask``, ``/code``, ``/architect``, ``/context``, ``/help``)
# are prompts. The times are the runs' start times (local time, written without a zone).

from __future__ import annotations

import re
from datetime import datetime, timezone

from rollchat.storage.imports.builder import Builder
from rollchat.storage.imports.common import MAX_NOTE, Imported, cut
from rollchat.text.normalize import clean

STARTED = re.compile(r"^# aider chat started at (\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)\s*$", re.M)
_ASKING = ("/ask", "/code", "/architect", "/context", "/help")


def is_aider(text: str) -> bool:
    """Whether ``text`` is an aider chat history."""
    return STARTED.search(text) is not None


def read(text: str, out: Imported) -> None:
    """Fill ``out`` from an aider chat history."""
    build = Builder(out)
    kind, lines = "", list[str]()
    for line in text.split("\n"):
        now = _kind(line)
        if now != kind or now == "start":
            _flush(build, kind, lines)
            kind, lines = now, []
        lines.append(line)
    _flush(build, kind, lines)
    build.finish()


def _kind(line: str) -> str:
    if line.startswith("# aider chat started at "):
        return "start"
    if line.startswith("####") and (line.endswith("  ") or not line[4:].strip()):
        return "user"
    if line.startswith(">") and (line.endswith("  ") or not line[1:].strip()):
        return "aider"
    return "answer"


def _unmarked(lines: list[str], mark: str) -> str:
    """The lines aider wrote itself without their mark and trailing spaces, cleaned."""
    return clean("\n".join(s[len(mark):].rstrip().removeprefix(" ") for s in lines)).strip()


def _flush(build: Builder, kind: str, lines: list[str]) -> None:
    if kind == "start":
        found = STARTED.match(lines[0])
        if found:
            build.when(datetime.strptime(found[1], "%Y-%m-%d %H:%M:%S")
                       .replace(tzinfo=timezone.utc).isoformat())
        build.fold("aider start line")
    elif kind == "user":
        typed = _unmarked(lines, "####")
        if typed.startswith("/") and not typed.startswith(_ASKING):
            build.note("command", cut(f"aider command {typed}", MAX_NOTE), "aider command")
        elif typed:
            build.prompt(cut(typed))
    elif kind == "aider":
        said = _unmarked(lines, ">")
        if said:
            build.note("aider", cut(said, MAX_NOTE), "aider output block")
    elif kind == "answer":
        build.text(cut(clean("\n".join(lines)).strip("\n")))
