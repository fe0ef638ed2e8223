"""An agent framework's state kept beside a summary block: one HTML comment line after
SESSION_SUMMARY_END (and after the signed block's line), the framework's name and its state as
JSON, bounded in size; read back with the summary, so ``resume`` gives it to the framework.
A turn that changed the state keeps it too (``*Framework state:*``, turn_block.py)."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import replace

from rollchat.domain import FrameworkState, Summary

STATE_MARK = "<!-- rollchat: framework state"  # how the line starts, whatever follows
_OPEN = (STATE_MARK + " besides the conversation, given back to the agent framework at "
         "resume: ")
_CLOSE = " -->"
# A larger state is not kept (one line says so): the file's tail, read in bounded windows
# (scan.TAIL_MAX_BYTES), holds the summary block, the signed block's line and this line.
STATE_MAX_CHARS = 64 * 1024
_NAME = re.compile(r"[a-z][a-z0-9_.-]{0,39}")


def _canonical(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def freeze(framework: str, state: Mapping[str, object]) -> tuple[FrameworkState | None, str]:
    """``state`` as the file keeps it, or None and why not ("" when it is empty): a state
    that is not JSON (an object, a connection) or longer than STATE_MAX_CHARS is not kept."""
    if not state:
        return None, ""
    try:
        data = _canonical(dict(state))
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
    text = json.dumps({"framework": state.framework, "state": json.loads(state.data)},
                      ensure_ascii=True, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e")


def state_line(state: FrameworkState) -> str:
    """The comment line keeping ``state`` after a summary block."""
    return _OPEN + state_json(state) + _CLOSE


def read_state(summary: Summary, line: str) -> Summary:
    """``summary`` with the state ``line`` keeps (from :func:`state_line`); one that cannot be
    read is left out, ``state_problem`` saying why."""
    if not line:
        return summary
    try:
        state = _read(line)
    except (ValueError, TypeError, KeyError, RecursionError) as e:
        return replace(summary, state_problem=f"unreadable framework state ({e})")
    return replace(summary, framework_state=state)


def _read(line: str) -> FrameworkState:
    if len(line) > STATE_MAX_CHARS:
        raise ValueError(f"longer than {STATE_MAX_CHARS:,} characters")
    if not (line.startswith(_OPEN) and line.endswith(_CLOSE)):
        raise ValueError("not the line rollchat writes")
    return from_json(line[len(_OPEN):-len(_CLOSE)])


def from_json(text: str) -> FrameworkState:
    """The state :func:`state_json` wrote (ValueError, TypeError, KeyError when it is not)."""
    facts = json.loads(text)
    if not isinstance(facts, dict):
        raise TypeError("not a JSON object")
    framework, state = facts["framework"], facts["state"]
    if not isinstance(framework, str) or not _NAME.fullmatch(framework):
        raise ValueError("bad 'framework'")
    if not isinstance(state, dict):
        raise TypeError("the state is not a JSON object")
    return FrameworkState(framework, _canonical(state))
