"""The restoration prompt that hands a parent session's summary to the agent in a new child
session, and that summary read back from the child's own first entry (whose file keeps it)."""

from __future__ import annotations

from datetime import datetime

from rollchat.domain import Summary, Transcript
from rollchat.errors import TranscriptError
from rollchat.storage.transcript import SUMMARY_END, SUMMARY_START, parse_summary_body
from rollchat.storage.transcript.restored import PROMPT_VERSION, PROMPTS, Restoration
from rollchat.text.wording import plural
from rollchat.tools import ARCHIVE_TOOL_NAME


def build_restoration_prompt(
    *,
    session_id: str,
    date: datetime,
    queries: int,
    tokens: int,
    parent_of_parent: str | None,
    file_name: str,
    summary: Summary,
    archive_tool: bool = False,
) -> str:
    """The message that restores a session's context: which session, its size, its own
    parent, the summary block, and the task (a 2-6 sentence acknowledgment). Its wording is
    the session file's (storage/transcript/restored.py), which rebuilds it from a child's file."""
    facts = Restoration(
        session_id=session_id, file_name=file_name, date=date.strftime("%Y-%m-%d %H:%M"),
        queries=plural(queries, "query"), tokens=f"{tokens:,}",
        grandparent=parent_of_parent, tool=ARCHIVE_TOOL_NAME if archive_tool else None,
        summary=summary)
    return PROMPTS[PROMPT_VERSION](facts)


SIGNED_IN_PLACE = ("(The summary is the provider's compaction block just before this "
                   "message; it is not repeated here.)")


def summary_once(prompt: str) -> str:
    """The restoration ``prompt`` as sent after the provider's signed compaction block, which
    holds the same summary: the summary block replaced by a line saying where it is, so the
    model reads it once (the session file keeps the whole prompt)."""
    start = prompt.find(SUMMARY_START)
    end = prompt.find(SUMMARY_END, start)
    if start < 0 or end < 0:
        return prompt
    return prompt[:start] + SIGNED_IN_PLACE + prompt[end + len(SUMMARY_END):]


def restored_summary(transcript: Transcript) -> Summary | None:
    """The parent's summary a session was started from, read from its own file: its first
    entry records the restoration prompt (so a child loses no context when its parent's file
    is pruned). None when there is none or it cannot be read."""
    first = transcript.turns[0] if transcript.turns else None
    if first is None or first.kind != "restored":
        return None
    lines = first.user.split("\n")
    try:
        start = lines.index(SUMMARY_START)
        end = lines.index(SUMMARY_END, start)
        return parse_summary_body("\n".join(lines[start + 1:end]))
    except (ValueError, TranscriptError):
        return None
