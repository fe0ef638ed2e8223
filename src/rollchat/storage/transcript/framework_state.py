"""An agent framework's state kept beside a summary block: one HTML comment line after
SESSION_SUMMARY_END (and after the signed block's line), the framework's name and its state as
JSON, bounded in size; read back with the summary, so ``resume`` gives it to the framework.
A turn that changed the state keeps it too (``*Framework state:*``, turn_block.py)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import replace

from rollchat.domain import FrameworkState, Summary
from rollchat.storage.transcript.comment_line import (
    NAME,
    CommentLine,
    canonical,
    escaped_json,
    json_object,
)

STATE_MARK = "<!-- rollchat: framework state"  # how the line starts, whatever follows
# A larger state is not kept (one line says so): the file's tail, read in bounded windows
# (scan.TAIL_MAX_BYTES), holds the summary block, the signed block's line and this line.
STATE_MAX_CHARS = 64 * 1024
_LINE = CommentLine(STATE_MARK, " besides the conversation, given back to the agent framework "
                    "at resume: ", STATE_MAX_CHARS)


def freeze(framework: str, state: Mapping[str, object]) -> tuple[FrameworkState | None, str]:
    """``state`` as the file keeps it, or None and why not ("" when it is empty): a state
    that is not JSON (an object, a connection) or longer than STATE_MAX_CHARS is not kept."""
    if not state:
        return None, ""
    try:
        data = canonical(dict(state), allow_nan=False)
    except (TypeError, ValueError, RecursionError) as e:
        return None, f"the {framework} state was not saved for resume: it is not JSON ({e})"
    kept = FrameworkState(framework, data)
    size = len(state_line(kept))
    if size > STATE_MAX_CHARS:
        return None, (f"the {framework} state was not saved for resume: {size:,} characters "
                      f"as JSON, more than the {STATE_MAX_CHARS:,} a session file keeps")
    return kept, ""


def thawed(state: FrameworkState) -> dict[str, object]:
    """The state as the framework is given it (a JSON object)."""
    value = json.loads(state.data)
    return value if isinstance(value, dict) else {}


def state_json(state: FrameworkState) -> str:
    """``state`` as one line of plain ASCII JSON, ``<`` and ``>`` escaped (so a comment holding
    it ends only where it should): ``{"framework": ..., "state": {...}}``."""
    return escaped_json(_facts(state))


def state_line(state: FrameworkState) -> str:
    """The comment line keeping ``state`` after a summary block."""
    return _LINE.write(_facts(state))


def _facts(state: FrameworkState) -> dict[str, object]:
    return {"framework": state.framework, "state": json.loads(state.data)}


def read_state(summary: Summary, line: str) -> Summary:
    """``summary`` with the state ``line`` keeps (from :func:`state_line`); one that cannot be
    read is left out, ``state_problem`` saying why."""
    if not line:
        return summary
    try:
        state = _state_of(_LINE.read(line))
    except (ValueError, TypeError, KeyError, RecursionError) as e:
        return replace(summary, state_problem=f"unreadable framework state ({e})")
    return replace(summary, framework_state=state)


def from_json(text: str) -> FrameworkState:
    """The state :func:`state_json` wrote (ValueError, TypeError, KeyError when it is not)."""
    return _state_of(json_object(text))


def _state_of(facts: dict[str, object]) -> FrameworkState:
    framework, state = facts["framework"], facts["state"]
    if not isinstance(framework, str) or not NAME.fullmatch(framework):
        raise ValueError("bad 'framework'")
    if not isinstance(state, dict):
        raise TypeError("the state is not a JSON object")
    return FrameworkState(framework, canonical(state, allow_nan=False))
