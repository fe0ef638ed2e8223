"""A turn as plain text (domain.plain_turn), one piece of code for the turns handed over to
another agent (session/handoff.py) and the archive tool's pages (tools/archive.py): each
output pinned byte for byte (a handoff's text becomes the start of the other agent's chat)."""

from __future__ import annotations

from datetime import datetime, timezone

from rollchat.domain import Text, ToolCall, ToolResult, ToolUse, Turn
from rollchat.session.handoff import turn_text
from rollchat.tools.archive import _block

WHEN = datetime(2026, 3, 4, 5, 6, 7, tzinfo=timezone.utc)
BLOCKS = (Text("Checking."), ToolUse(ToolCall("c1", "read", {"path": "a.txt"})),
          ToolResult("c1", "alpha\nbeta"), ToolUse(ToolCall("c2", "ls", {})),
          ToolResult("c2", "x", is_error=True), Text("Both read."))
TURN = Turn("query", 3, WHEN, "what is in a.txt?", BLOCKS, status="error", error="cut off",
            context="handed by Bob")


def test_a_handed_turn_names_its_tools_and_leaves_out_context_and_error() -> None:
    assert turn_text(TURN, "Ada") == (
        "[Query 3]\nUser: what is in a.txt?\n(tools called: read, ls)\n"
        "Ada: Checking.\n\nBoth read.")
    empty = Turn("carried", 1, WHEN, "", ())
    assert turn_text(empty, "Ada") == "[Carried over 1]\nUser: "  # as it was always handed


def test_an_archive_page_writes_each_call_its_context_and_its_error() -> None:
    assert _block(2, TURN) == (
        "[offset 2] Query 3 (2026-03-04 05:06:07) [error]\nContext: handed by Bob\n"
        "You: what is in a.txt?\n"
        'Tool call: read {"path": "a.txt"} -> alpha beta\n'
        "Tool call: ls {} -> x\n"
        "Assistant: Checking.\n\nBoth read.\nError: cut off")
    quiet = Turn("restored", 0, WHEN, "", (Text("Restored."),))
    assert _block(0, quiet) == "[offset 0] Session restored (2026-03-04 05:06:07)\n" \
                               "Assistant: Restored."
