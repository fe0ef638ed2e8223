"""Session files for the tests of ``rollchat show`` on long sessions: turns of prose, some that
rich draws, written a turn at a time (a large file is never held whole)."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from rollchat.domain import (
    SessionHeader,
    Summary,
    ToolCall,
    ToolExchange,
    Turn,
    Usage,
    answer_blocks,
)
from rollchat.storage.transcript import render_header, render_summary_block, render_turn


def write_session(path: Path, header: SessionHeader, count: int, *, paragraphs: int,
                  drawn: tuple[int, int], summary: Summary | None = None) -> Path:
    """``count`` turns of prose from ``header.date`` a second apart, each answer
    ``paragraphs`` sentences long; ``drawn`` (every, first): turn ``first`` (from 0) and every
    ``every``-th after it is one that rich draws (a list, a tool call and its result); then
    ``summary``'s block when there is one."""
    drawn_every, drawn_at = drawn
    with open(path, "w", encoding="utf-8") as f:
        f.write(render_header(header))
        for i in range(count):
            reply = " ".join(f"We decided to keep the parser number {i} as it is, and "
                             f"update cache {n}." for n in range(paragraphs))
            tools: tuple[ToolExchange, ...] = ()
            if i % drawn_every == drawn_at:
                reply = f"Two things:\n\n- **first** {reply}\n- `second`"
                tools = (ToolExchange(ToolCall(f"c{i}", "read", {"p": f"m{i}.py"}), "a\nb"),)
            turn = Turn("query", i + 1, header.date + timedelta(seconds=i),
                        f"please make the reader {i} work with the writer again.",
                        answer_blocks(reply, tools), elapsed=1.5, usage=Usage(100, 40))
            f.write(render_turn(turn, "Assistant"))
        if summary is not None:
            f.write(render_summary_block(summary))
    return path
