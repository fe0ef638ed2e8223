"""The restoration prompt that hands a parent session's summary to the agent in a new child
session, and that summary read back from the child's own first entry (where the prompt is kept)."""

from __future__ import annotations

from datetime import datetime

from rollchat.domain import Summary, Transcript
from rollchat.errors import TranscriptError
from rollchat.storage.transcript import (
    SUMMARY_END,
    SUMMARY_START,
    parse_summary_body,
    render_summary_block,
)
from rollchat.text.wording import human_tokens, plural
from rollchat.tools import ARCHIVE_TOOL_NAME

ARCHIVE_SENTENCE = (
    f"The {ARCHIVE_TOOL_NAME} tool can read the previous session's full transcript if you "
    "need details the summary leaves out."
)


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
    parent, the summary block, and the task (a 2-6 sentence acknowledgment)."""
    lines = [
        f"CONTEXT RESTORATION: You are continuing a previous conversation from "
        f"{date.strftime('%Y-%m-%d %H:%M')}.",
        "",
        f"Previous session summary (Session ID: {session_id}, {plural(queries, 'query')}, "
        f"{human_tokens(tokens)} tokens):",
        "",
    ]
    if parent_of_parent:
        lines.append(f"This session was resumed from: {parent_of_parent}")
    lines += [f"Previous session file: {file_name}", "", render_summary_block(summary), ""]
    if archive_tool:
        lines += [ARCHIVE_SENTENCE, ""]
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
