"""The summary block both ways: render a Summary between the markers, and parse the text between
them (as the renderer writes it, or as a model writes it: the parser is tolerant)."""

from __future__ import annotations

import re
from collections.abc import Sequence

from rollchat.domain import Summary
from rollchat.errors import TranscriptError
from rollchat.storage.transcript.syntax import (
    SUMMARY_END,
    SUMMARY_START,
    forges_turn,
    make_escaper,
    needs_turn,
)

FALLBACK_NOTE = (
    "*[summary written by the local extractive summarizer because the model's summary failed]*"
)
ARTIFACTS = "Files and artifacts"  # optional: files written before it parse without it
TIMELINE = "Timeline"  # optional too: the days the topics happened (files before it lack it)
_SECTIONS = ("Background Context", "Current Session Summary", "Topics Discussed",
             "Decisions Made", "Pending", TIMELINE, ARTIFACTS)
_OPTIONAL = ("Current Session Summary", TIMELINE, ARTIFACTS)
_SECTION_RE = re.compile(
    r"(#{1,6}[ \t]*)?(\*\*)?[ \t]*(background context|current session summary|topics discussed"
    r"|decisions made|pending|timeline|files and artifacts)"
    r"[ \t]*(:?)[ \t]*(\*\*)?[ \t]*(:?)(.*)$",
    re.IGNORECASE)
# What was left out to fit the summary budget: one HTML comment line inside the block.
_DROPPED_RE = re.compile(r"<!-- rollchat: dropped (\d+) topics?, (\d+) artifacts? to fit the "
                         r"summary budget -->")
# The user edited the summary (``summary edit``): one HTML comment line inside the block.
_EDITED_RE = re.compile(r"<!-- rollchat: edited by the user at ([0-9T:.+\-]{10,40}) -->")
_NONE_WORDS = frozenset({"none", "none.", "n/a", "-"})


def _section(line: str) -> tuple[str, str] | None:
    m = _SECTION_RE.match(line)
    if m is None or not (m[1] or m[2] or m[4] or m[6]):
        return None
    name = next(s for s in _SECTIONS if s.lower() == m[3].lower())
    return name, m[7].strip(" \t")


def _needs_summary(s: str) -> bool:
    """What files before 25.4 escaped in summary text (the unescaper's rule)."""
    return (needs_turn(s) or s[:1] in (" ", "\t", ":") or s.lower() in _NONE_WORDS
            or s.startswith("```") or _section(s) is not None)


def _forges_summary(s: str) -> bool:
    """A summary line that would be read as structure: a section, a note, a marker, a fence,
    a bare None, an indented line (a bullet's continuation), or a turn's structure."""
    return (forges_turn(s) or s.startswith("<!--") or s[:1] in (" ", "\t", ":")
            or s.lower() in _NONE_WORDS or s.startswith("```") or _section(s) is not None)


def _forges_item(s: str) -> bool:
    """The first line of a bullet item (after "- ") is read as structure only when indented
    (the dash's spaces would take it) or a bare None: "- Pending: x" is no section."""
    return s[:1] in (" ", "\t") or s.lower() in _NONE_WORDS


_esc_sum, _unesc_sum = make_escaper(_needs_summary, _forges_summary)
_esc_item, _ = make_escaper(_needs_summary, _forges_item)


def _protect(line: str) -> str:
    return line + "\\" if line == "" or line[-1] in " \t\r\\" else line


def _unprotect(line: str) -> str:
    return line[:-1] if line.endswith("\\") else line


def _sum_line(line: str) -> str:
    return _protect(_esc_sum(line))


def _sum_unline(line: str) -> str:
    return _unesc_sum(_unprotect(line))


# ---------------------------------------------------------------- rendering


def _bullets(items: Sequence[str]) -> list[str]:
    if not items:
        return ["- None"]
    out: list[str] = []
    for item in items:
        first, *rest = item.split("\n")
        out.append("- " + _protect(_esc_item(first)))
        out += ["  " + _sum_line(x) for x in rest]
    return out


def dropped_note(topics: int, artifacts: int) -> str:
    """The comment line recording how many items were left out to fit the budget."""
    return (f"<!-- rollchat: dropped {topics} topic{'' if topics == 1 else 's'}, {artifacts} "
            f"artifact{'' if artifacts == 1 else 's'} to fit the summary budget -->")


def edited_note(when: str) -> str:
    """The comment line saying the user edited the summary (``when``: ISO 8601)."""
    return f"<!-- rollchat: edited by the user at {when} -->"


def render_summary_block(s: Summary) -> str:
    """The summary block, markers included, ending with a newline."""
    first, *rest = s.background.split("\n")
    lines = [SUMMARY_START]
    if s.edited and _EDITED_RE.fullmatch(edited_note(s.edited)):
        lines += [edited_note(s.edited), ""]
    if s.fallback:
        lines += [FALLBACK_NOTE, ""]
    if s.dropped_topics or s.dropped_artifacts:
        lines += [dropped_note(s.dropped_topics, s.dropped_artifacts), ""]
    lines += ["**Background Context:** " + _sum_line(first), *[_sum_line(x) for x in rest], "",
              "**Current Session Summary:**", "**Topics Discussed:**", *_bullets(s.topics), "",
              "**Decisions Made:**", *_bullets(s.decisions), "",
              "**Pending:**", *_bullets(s.pending)]
    if s.timeline:  # like the artifacts: written only when there is one
        lines += ["", f"**{TIMELINE}:**", *_bullets(s.timeline)]
    if s.artifacts:  # written only when there are some: older readers never see it empty
        lines += ["", f"**{ARTIFACTS}:**", *_bullets(s.artifacts)]
    lines += [SUMMARY_END, ""]
    return "\n".join(lines)


# ---------------------------------------------------------------- parsing


def _split_sections(lines: list[str]) -> dict[str, list[str]]:
    sections: dict[str, list[str]] = {}
    current: list[str] | None = None
    fallback = False
    dropped: list[str] = []
    edited = ""
    for raw in lines:
        line = raw.rstrip(" \t\r")
        if line in (SUMMARY_START, SUMMARY_END):
            raise TranscriptError("summary body contains a summary marker line")
        if line == FALLBACK_NOTE:
            fallback = True
            continue
        when = _EDITED_RE.fullmatch(line)
        if when is not None:
            edited = when[1]
            continue
        counts = _DROPPED_RE.fullmatch(line)
        if counts is not None:
            dropped = [counts[1], counts[2]]
            continue
        sec = _section(line)
        if sec is not None:
            if sec[0] in sections:
                raise TranscriptError(f"summary section '{sec[0]}' appears twice")
            current = sections[sec[0]] = [sec[1]] if sec[1] else []
        elif current is not None and line and not line.startswith("```"):
            current.append(line)
    sections["\0fallback"] = ["yes"] if fallback else []
    sections["\0dropped"] = dropped
    sections["\0edited"] = [edited] if edited else []
    return sections


def unplaced_lines(text: str) -> list[str]:
    """The lines of a summary body (as a user edits it) that no section keeps, so that
    ``parse_summary_body`` would drop them: text above the first section, and text under
    ``Current Session Summary`` (a heading only)."""
    out: list[str] = []
    current: str | None = None
    for raw in text.split("\n"):
        line = raw.rstrip(" \t\r")
        if (not line.strip() or line == FALLBACK_NOTE or _EDITED_RE.fullmatch(line)
                or _DROPPED_RE.fullmatch(line)):
            continue
        sec = _section(line)
        if sec is not None:
            current = sec[0]
            if current == "Current Session Summary" and sec[1]:
                out.append(sec[1])
        elif current in (None, "Current Session Summary") and not line.startswith("```"):
            out.append(line.strip())
    return out


def _parse_bullets(name: str, lines: list[str]) -> tuple[str, ...]:
    items: list[list[str]] = []
    for line in lines:
        m = re.match(r"[-*+•](?:[ \t]+|$)", line)
        if m is not None:
            items.append([line[m.end():]])
        elif line[:1] in (" ", "\t") and items:
            items[-1].append(line.lstrip(" \t"))
        else:
            items.append([line.lstrip(" \t")])
    if not items:
        raise TranscriptError(f"summary section '{name}' is empty (write '- None' if so)")
    if len(items) == 1 and len(items[0]) == 1 and items[0][0].lower() in _NONE_WORDS:
        return ()
    return tuple("\n".join(_sum_unline(x) for x in item) for item in items)


def parse_summary_body(text: str) -> Summary:
    """Parse the text between the summary markers (as a model writes it)."""
    sections = _split_sections(text.split("\n"))
    missing = [s for s in _SECTIONS if s not in sections and s not in _OPTIONAL]
    if missing:
        raise TranscriptError(f"summary is missing the section(s): {', '.join(missing)}")
    background = sections["Background Context"]
    dropped = sections["\0dropped"]
    if not background:
        raise TranscriptError("summary section 'Background Context' is empty")
    return Summary(background="\n".join(_sum_unline(x) for x in background),
                   topics=_parse_bullets("Topics Discussed", sections["Topics Discussed"]),
                   decisions=_parse_bullets("Decisions Made", sections["Decisions Made"]),
                   pending=_parse_bullets("Pending", sections["Pending"]),
                   fallback=bool(sections["\0fallback"]),
                   artifacts=(_parse_bullets(ARTIFACTS, sections[ARTIFACTS])
                              if ARTIFACTS in sections else ()),
                   timeline=(_parse_bullets(TIMELINE, sections[TIMELINE])
                             if TIMELINE in sections else ()),
                   dropped_topics=int(dropped[0]) if dropped else 0,
                   dropped_artifacts=int(dropped[1]) if dropped else 0,
                   edited=sections["\0edited"][0] if sections["\0edited"] else "")
