"""The restoration prompt a child session starts with, and how its file keeps it: the parent's
summary once, readably, and the facts the prompt was built from, so the prompt is rebuilt."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from rollchat.domain import Summary
from rollchat.errors import TranscriptError
from rollchat.storage.transcript.summary import parse_summary_body, render_summary_block
from rollchat.storage.transcript.syntax import SUMMARY_END, SUMMARY_START

# The prompt's wording, by version: a file names the version its prompt was built with, so a
# later rollchat rebuilds exactly the bytes that were sent. A new wording is a new version (and
# PROMPTS keeps the old ones); files written before 25.4 hold the prompt itself.
# v2: the wording of v1 with the size in exact figures ("1,412 tokens", never "1.4K"), and
# the facts' JSON holding numbers ("queries": 3, "tokens": 1412); a v1 line is still read
PROMPT_VERSION = 2
_OPEN = "<!-- restored summary: sent in restoration prompt v{version} "
_OPEN_RE = re.compile(r"<!-- restored summary: sent in restoration prompt v([0-9]{1,4}) "
                      r"(\{.*\}) -->")
RESTORED_END = "<!-- end of the restored summary -->"


@dataclass(frozen=True)
class Restoration:
    """What a restoration prompt says besides the summary: the parent (its id, file, date as
    shown, size), its own parent, and the archive tool it offers (None: none)."""

    session_id: str
    file_name: str
    date: str  # "YYYY-MM-DD HH:MM"
    queries: str  # "3 queries": as the prompt words it
    tokens: str  # "2,412" (v1 also "2.4K"): as the prompt words it
    grandparent: str | None
    tool: str | None
    summary: Summary


def prompt_v1(r: Restoration) -> str:
    """The restoration prompt of version 1 (the wording since the first rollchat)."""
    lines = [
        f"CONTEXT RESTORATION: You are continuing a previous conversation from {r.date}.",
        "",
        f"Previous session summary (Session ID: {r.session_id}, {r.queries}, "
        f"{r.tokens} tokens):",
        "",
    ]
    if r.grandparent:
        lines.append(f"This session was resumed from: {r.grandparent}")
    lines += [f"Previous session file: {r.file_name}", "", render_summary_block(r.summary), ""]
    if r.tool:
        lines += [f"The {r.tool} tool can read the previous session's full transcript if you "
                  "need details the summary leaves out.", ""]
    lines += [
        "Task: Review the above and provide a brief acknowledgment (2-6 sentences or bullets) "
        "that includes:",
        "1. Main topics discussed",
        "2. Key decisions made",
        "3. Confirmation you're ready to continue",
        "",
        "Keep your response concise.",
    ]
    return "\n".join(lines)


PROMPTS = {1: prompt_v1, 2: prompt_v1}  # (the same words: see PROMPT_VERSION)
_COUNT = re.compile(r"([0-9]+) quer(?:y|ies)")
_FIGURE = re.compile(r"[0-9]{1,3}(?:,[0-9]{3})*")
_V1 = re.compile(
    r"CONTEXT RESTORATION: You are continuing a previous conversation from (.*)\.\n\n"
    r"Previous session summary \(Session ID: (.*), ([0-9,]+ quer(?:y|ies)), (.*) tokens\):\n\n"
    r"(?:This session was resumed from: (.*)\n)?Previous session file: (.*)\n\n"
    + re.escape(SUMMARY_START) + r"\n(.*)\n" + re.escape(SUMMARY_END) + r"\n\n\n"
    r"(?:The (.*) tool can read the previous session's full transcript[^\n]*\n\n)?Task: ",
    re.DOTALL)


def read_prompt(prompt: str) -> Restoration | None:
    """The facts ``prompt`` was built from, when it is exactly a version-1 prompt (rebuilt byte
    for byte from them), else None."""
    m = _V1.match(prompt)
    if m is None:
        return None
    try:
        summary = parse_summary_body(m[7])
    except TranscriptError:
        return None
    r = Restoration(m[2], m[6], m[1], m[3], m[4], m[5], m[8], summary)
    return r if prompt_v1(r) == prompt else None


def restored_lines(prompt: str) -> list[str] | None:
    """The lines that keep ``prompt`` in a child's first entry: the facts in a comment line,
    the summary (as in the parent's block, between comment lines); None when the prompt is not
    one rollchat rebuilds (then the prompt itself is kept)."""
    r = read_prompt(prompt)
    if r is None:
        return None
    count, figure = _COUNT.fullmatch(r.queries), _FIGURE.fullmatch(r.tokens)
    numbers = (int(count[1]), int(r.tokens.replace(",", ""))) if count and figure else None
    size: tuple[object, object] = (r.queries, r.tokens)  # a v1 prompt's words ("1.4K")
    version = 1
    if numbers is not None and _words({"queries": numbers[0], "tokens": numbers[1]}) == size:
        version, size = 2, numbers  # numbers in the JSON (from which the words are rebuilt)
    queries, tokens = size
    facts: dict[str, object] = {
        "session_id": r.session_id, "file": r.file_name, "date": r.date,
        "queries": queries, "tokens": tokens, "resumed_from": r.grandparent,
        "tool": r.tool}
    # ">" as \u003e: a value can never end the comment
    data = json.dumps(facts, ensure_ascii=False).replace(">", "\\u003e")
    body = render_summary_block(r.summary).split("\n")[1:-2]  # between the markers
    return [_OPEN.format(version=version) + data + " -->", *body, RESTORED_END, ""]


def _words(facts: dict[str, object]) -> tuple[str, str]:
    """The prompt's words for the size in ``facts``: numbers (v2), else the words (v1)."""
    from rollchat.text.wording import plural

    queries, tokens = facts["queries"], facts["tokens"]
    if isinstance(queries, int) and isinstance(tokens, int) and not isinstance(
            queries, bool) and not isinstance(tokens, bool):
        return plural(queries, "query"), f"{tokens:,}"
    if isinstance(queries, (int, float)) or isinstance(tokens, (int, float)):
        raise TypeError("queries and tokens must both be whole numbers or both words")
    return str(queries), str(tokens)


def is_restored_start(line: str) -> bool:
    """Whether ``line`` opens the restored summary of a child's first entry."""
    return line.startswith("<!-- restored summary: ")


def read_restored(lines: list[str], lineno: int) -> str:
    """The restoration prompt rebuilt from ``lines`` (the opening comment line, the summary's
    lines; the closing line excluded); TranscriptError when they cannot be read."""
    m = _OPEN_RE.fullmatch(lines[0])
    if m is None or int(m[1]) not in PROMPTS:
        raise TranscriptError(f"line {lineno}: unreadable restored summary line "
                              f"(a newer rollchat's?): {lines[0][:60]!r}")
    try:
        facts = json.loads(m[2])
        r = Restoration(str(facts["session_id"]), str(facts["file"]), str(facts["date"]),
                        *_words(facts),
                        None if facts["resumed_from"] is None else str(facts["resumed_from"]),
                        None if facts["tool"] is None else str(facts["tool"]),
                        parse_summary_body("\n".join(lines[1:])))
    except (ValueError, KeyError, TypeError) as e:
        raise TranscriptError(f"line {lineno}: unreadable restored summary: {e}") from None
    return PROMPTS[int(m[1])](r)
