"""A chat written as markdown (an export, notes kept by hand): each message opened by a speaker's
heading or bold label; one turn per user message."""

# Each message is opened by a heading ``# User`` / ``## User`` (levels 1-4, a trailing colon and
# a leading emoji allowed: ``## 👤 User``, as claude-conversation-extractor writes them) or a
# bold label ``**User:**`` at the start of a line, text after the label included. Speakers:
# User, You, Human, Me (the user); Assistant, AI, Claude, ChatGPT, Codex, Gemini, Model, Bot,
# Agent (the assistant). Text before the first label is left out; a label inside a fenced code
# block is code, not the next message. A "Date:" line before the first message gives the time.

from __future__ import annotations

import re

from rollchat.storage.imports.builder import Builder
from rollchat.storage.imports.common import Imported, cut
from rollchat.text.normalize import clean

_USER_NAMES = "user|you|human|me"
_AGENT_NAMES = "assistant|ai|claude|chatgpt|codex|gemini|model|bot|agent"
LABEL = re.compile(
    rf"^(?:#{{1,4}}[ \t]+(?:[^\w\s#*]{{1,3}}[ \t]*)?({_USER_NAMES}|{_AGENT_NAMES})[ \t]*:?[ \t]*$"
    rf"|\*\*({_USER_NAMES}|{_AGENT_NAMES}):?\*\*:?[ \t]?(.*)$)",
    re.IGNORECASE | re.MULTILINE)
_FENCE = re.compile(r"^[ ]{0,3}(`{3,}|~{3,})(.*)$", re.MULTILINE)
# an export's date line before the first message ("Date: 2025-11-20 00:48:03"): the chat's time
_DATE = re.compile(r"^\**Date:?\**:?[ \t]*(\d{4}-\d\d-\d\d[ T]\d\d:\d\d(?::\d\d)?)", re.M)


def is_markdown_chat(text: str) -> bool:
    return LABEL.search(text) is not None


def _fenced(text: str) -> list[tuple[int, int]]:
    """The spans of the fenced code blocks of ``text`` (an unclosed one runs to the end)."""
    spans: list[tuple[int, int]] = []
    opened: re.Match[str] | None = None
    for fence in _FENCE.finditer(text):
        if opened is None:
            opened = fence
        elif fence[1][0] == opened[1][0] and len(fence[1]) >= len(opened[1]) and \
                not fence[2].strip():  # a closing fence: as long, nothing after it
            spans.append((opened.start(), fence.end()))
            opened = None
    if opened is not None:
        spans.append((opened.start(), len(text)))
    return spans


def read(text: str, out: Imported) -> None:
    """Fill ``out`` from a markdown chat."""
    build = Builder(out)
    fenced = _fenced(text)
    at = 0  # spans are in order: one pass over them, not one per label
    matches: list[re.Match[str]] = []
    for m in LABEL.finditer(text):
        while at < len(fenced) and fenced[at][1] <= m.start():
            at += 1
        if not (at < len(fenced) and fenced[at][0] < m.start() < fenced[at][1]):
            matches.append(m)
    date = _DATE.search(text, 0, matches[0].start() if matches else len(text))
    if date is not None:
        build.when(date[1])
    for i, m in enumerate(matches):
        speaker = (m[1] or m[2]).lower()
        end = matches[i + 1].start() if i + 1 < len(matches) else len(text)
        body = cut(clean(((m[3] or "") + text[m.end():end]).strip("\n").strip()))
        if re.fullmatch(_USER_NAMES, speaker):
            build.prompt(body)
        else:
            build.text(body)
    build.finish()
