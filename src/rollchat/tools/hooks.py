"""Running the user's hooks (config.hooks): each matching command in a shell of its own process
group, one JSON object on stdin (Claude Code's field names), killed at its timeout; exit 0
continues (stdout may add context), exit 2 blocks (stderr is the reason), others warn."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rollchat.domain import ToolCall
from rollchat.tools.children import Bounded, run_bounded

if TYPE_CHECKING:  # (config.hooks reads the YAML: a chat without hooks never imports yaml)
    from rollchat.config.hooks import HookConfig

BLOCK = 2  # the exit status that blocks, as in Claude Code
MAX_OUTPUT = 10_000  # characters of a hook's stdout or stderr rollchat uses


@dataclass(frozen=True)
class HookOutcome:
    """What the hooks of one event decided: ``blocked`` (the reason) when one exited 2 (or said
    ``"decision": "block"``), the ``context`` the others printed, and the lines to show."""

    blocked: str | None = None
    context: str = ""
    lines: tuple[str, ...] = ()


def _short(text: str) -> str:
    """At most MAX_OUTPUT characters of ``text`` (stripped), `` [cut]`` after them when cut."""
    text = text.strip()
    return text if len(text) <= MAX_OUTPUT else text[:MAX_OUTPUT] + " [cut]"


def _used(stream: Bounded) -> str:
    """A hook's stream as rollchat holds it: the head (``_short`` cuts it, saying so), the
    count of what was read and not kept, and the tail."""
    return stream.text()


def _decision(stdout: str) -> tuple[str | None, str]:
    """Claude Code's JSON output of an exit-0 hook: (block reason, added context); plain
    text is context as it is."""
    try:
        data = json.loads(stdout)
    except ValueError:
        return None, stdout
    if not isinstance(data, dict):
        return None, stdout
    specific = data.get("hookSpecificOutput")
    specific = specific if isinstance(specific, dict) else {}
    reason = data.get("reason") or specific.get("permissionDecisionReason") or ""
    if data.get("decision") == "block" or specific.get("permissionDecision") == "deny":
        return str(reason) or "blocked by a hook", ""
    return None, str(specific.get("additionalContext") or "")


class Hooks:
    """The hooks of a chat. ``held``: why none runs (an untrusted project file); ``cwd``: where
    they run and what they are told. The session says which session and file it is in."""

    def __init__(self, hooks: Sequence[HookConfig], *, cwd: Path, held: str | None = None,
                 env: Mapping[str, str] | None = None) -> None:
        self.hooks = tuple(hooks)
        self.cwd, self.held = cwd, held
        self.env = dict(os.environ if env is None else env)
        self.session_id, self.transcript_path = "", ""
        self.pending: list[str] = []  # lines from hooks run inside a tool loop, to show later

    def at(self, session_id: str | None, transcript_path: Path | None) -> None:
        """The session the chat is in now (a compaction or resume moves it)."""
        self.session_id = session_id or ""
        self.transcript_path = str(transcript_path) if transcript_path is not None else ""

    def wanted(self, event: str, match: str | None = None) -> list[HookConfig]:
        if self.held is not None:
            return []
        return [h for h in self.hooks if h.event == event and h.matches(match)]

    def run(self, event: str, data: Mapping[str, Any], match: str | None = None) -> HookOutcome:
        """Run ``event``'s hooks matching ``match`` in their order with ``data`` (and the
        common fields) on stdin, until one blocks."""
        payload = json.dumps({"session_id": self.session_id,
                              "transcript_path": self.transcript_path, "cwd": str(self.cwd),
                              "hook_event_name": event, **data})
        context, lines = [], []
        for hook in self.wanted(event, match):
            code, out, err, line = self._one(hook, payload)
            if line:
                lines.append(line)
                continue
            if code == BLOCK:
                return HookOutcome(_short(err) or f"blocked by the {event} hook "
                                   f"{hook.command!r} (it gave no reason)", "", tuple(lines))
            if code != 0:
                lines.append(f"{event} hook {hook.command!r} exited with status {code}; going "
                             "on" + (f": {_short(err)}" if err.strip() else ""))
                continue
            reason, added = _decision(out.strip())
            if reason is not None:
                return HookOutcome(reason, "", tuple(lines))
            if added.strip():
                context.append(_short(added))
        return HookOutcome(None, "\n".join(context), tuple(lines))

    def _one(self, hook: HookConfig, payload: str) -> tuple[int, str, str, str]:
        """(exit status, stdout, stderr, the line that says it failed to run: "" when it ran).
        The output is read bounded (see children.run_bounded): a hook printing without end
        costs no memory; at the timeout everything it started is killed."""
        env = {**self.env, "ROLLCHAT_PROJECT_DIR": str(self.cwd),
               "CLAUDE_PROJECT_DIR": str(self.cwd)}
        try:
            done = run_bounded(hook.command, stdin=payload, timeout=hook.timeout, cwd=self.cwd,
                               env=env, head=MAX_OUTPUT)
        except OSError as exc:
            return 0, "", "", f"{hook.event} hook {hook.command!r} could not start: {exc}"
        if done.returncode is None:
            return 0, "", "", (f"{hook.event} hook {hook.command!r} ({hook.origin}) took "
                               f"longer than {hook.timeout:g}s and was killed; going on")
        return done.returncode, _used(done.out), _used(done.err), ""

    # -------------------------------------------------------------- tool calls (tools.runner)
    def before_tool(self, call: ToolCall) -> str | None:
        """PreToolUse: None when the call may go on, else why not (for the model)."""
        if not self.wanted("PreToolUse", call.name):
            return None
        outcome = self.run("PreToolUse", {"tool_name": call.name, "tool_input": call.arguments,
                                          "tool_use_id": call.id}, call.name)
        self.pending += outcome.lines
        if outcome.blocked is None:
            return None
        return f"refused by a PreToolUse hook: {outcome.blocked}"

    def after_tool(self, call: ToolCall, result: str, status: str) -> str:
        """PostToolUse: what to add to the result (a hook's exit-2 stderr, its context)."""
        if not self.wanted("PostToolUse", call.name):
            return ""
        outcome = self.run("PostToolUse", {
            "tool_name": call.name, "tool_input": call.arguments, "tool_use_id": call.id,
            "tool_response": {"text": result, "status": status}}, call.name)
        self.pending += outcome.lines
        said = outcome.blocked or outcome.context
        return f"\n\n[PostToolUse hook: {said}]" if said else ""

    def take(self) -> list[str]:
        lines, self.pending = self.pending, []
        return lines

