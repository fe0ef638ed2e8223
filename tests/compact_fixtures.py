"""Saved sessions for the compact and MCP server tests: a summarized parent and its child
(resumed from it, not summarized yet), written through the store as the chat writes them."""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path

from rollchat.domain import Summary, Turn, Usage, answer_blocks
from rollchat.storage.store import SessionStore

T0 = datetime(2026, 11, 22, 14, 30, 0, tzinfo=timezone.utc)
PARENT_SUMMARY = Summary(
    "Initial session.", ("Rate limiter design",),
    ("Use a token bucket in Redis for the rate limiter",),
    ("Write integration tests for the auth service",),
    artifacts=("src/limiter.py",))
OFFLINE_CONFIG = "ui:\n  offline_word_delay: 0\nretry:\n  max_retries: 0\n"


@dataclass(frozen=True)
class Sessions:
    root: Path
    parent: str
    child: str


def turn(n: int, user: str, answer: str, at: datetime, kind: str = "query") -> Turn:
    return Turn(kind, n, at + timedelta(seconds=n), user, answer_blocks(answer),  # type: ignore[arg-type]
                elapsed=1.0, usage=Usage(40, 60))


def make_sessions(root: Path) -> Sessions:
    store = SessionStore(root)
    parent = store.new_session(agent_key="assistant", agent="Assistant",
                               agent_path="config:assistant", model="offline",
                               provider="offline", now=T0)
    parent.append_turn(turn(1, "Let's design the rate limiter for the gateway.",
                            "We decided to use a token bucket in Redis.", T0), "Assistant")
    parent.append_turn(turn(2, "TODO: write integration tests for the auth service.",
                            "Noted; they are still to do.", T0), "Assistant")
    parent.close()
    store.finalize(parent.session_id, PARENT_SUMMARY, total_queries=2, total_tokens=200)
    later = T0 + timedelta(hours=1)
    child = store.new_session(agent_key="assistant", agent="Assistant",
                              agent_path="config:assistant", model="offline",
                              provider="offline", now=later,
                              resumed_from=parent.session_id,
                              previous_session=parent.file_name)
    restored = Turn("restored", 0, later, "", answer_blocks("I've reviewed the rate limiter work."),
                    context=f"Resumed from {parent.session_id}",
                    previous_session=parent.file_name)
    child.append_turn(restored, "Assistant")
    child.append_turn(turn(1, "The gateway listens on port 8443 behind the load balancer.",
                           "Port 8443 it is; the limiter sits before the router.", later),
                      "Assistant")
    child.append_turn(turn(2, "We decided to log rejected requests to syslog.",
                           "Agreed: rejected requests go to syslog.", later), "Assistant")
    child.close()
    return Sessions(root, parent.session_id, child.session_id)


def snapshot(root: Path) -> dict[str, tuple[bytes, int]]:
    """Every file of the sessions directory but the caches (``.cache/``, the sessions index):
    bytes and mtime."""
    found: dict[str, tuple[bytes, int]] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d != ".cache"]
        for name in filenames:
            if name.startswith(".index.sqlite"):
                continue
            path = Path(dirpath) / name
            found[str(path.relative_to(root))] = (path.read_bytes(), path.stat().st_mtime_ns)
    return found
