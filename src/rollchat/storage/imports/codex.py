"""Codex CLI session files (``~/.codex/sessions/**/rollout-*.jsonl``), both generations: one
turn per typed prompt, Codex's own preambles and developer messages folded."""

# Newer files (autumn 2025 on): ``{"timestamp", "type": "session_meta"|"response_item"|
# "event_msg"|"turn_context"|"compacted", "payload": {...}}``. The response items are the
# conversation: ``message`` (role user/assistant/developer, content ``input_text``/
# ``output_text`` blocks), ``reasoning`` (left out, counted), ``function_call`` /
# ``function_call_output`` paired by ``call_id`` (so are ``custom_tool_call`` / ``..._output``,
# the freeform apply_patch, and ``local_shell_call``). ``event_msg`` lines repeat the messages
# (only ``turn_aborted`` is news); ``turn_context`` names the model; ``compacted`` stands for
# the conversation before a compaction.
# Older files (mid 2025): a first line ``{"id", "timestamp", "instructions", "git"}``, then the
# same items one per line without the envelope and without times, and ``{"record_type":
# "state"}`` lines.
# Codex writes its own user messages: ``<user_instructions>`` or ``# AGENTS.md instructions for
# ...`` (the project's AGENTS.md), ``<environment_context>``, ``<permissions instructions>``,
# ``<turn_aborted>``; and developer messages. None opens a turn or gives the title.

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterable
from typing import Any

from rollchat.storage.imports.builder import Builder
from rollchat.storage.imports.common import (
    MAX_NOTE,
    Imported,
    as_text,
    block_texts,
    bounded,
    cut,
    first_line,
    image_block,
    objects,
)
from rollchat.text.normalize import clean

# a tuple, not a set: a line's "type" may be any JSON value, a list too (unhashable)
ENVELOPES = ("session_meta", "response_item", "event_msg", "turn_context", "compacted")
# Codex's own user messages, by how they start, and what each is counted as
_OWN = (("<environment_context>", "environment context"),
        ("<user_instructions>", "AGENTS.md instructions"),
        ("# AGENTS.md instructions for", "AGENTS.md instructions"),
        ("<permissions instructions>", "permissions preamble"),
        ("<permissions", "permissions preamble"))
_CALLS = ("function_call", "custom_tool_call", "local_shell_call")
_RESULTS = ("function_call_output", "custom_tool_call_output")


def is_codex(value: Any) -> bool:
    """Whether a decoded line is one of a Codex file's (either generation)."""
    if not isinstance(value, dict):
        return False
    kind = value.get("type")
    if kind in ENVELOPES and "payload" in value:
        return True
    return "role" in value and "content" in value and kind in (None, "message")


def read(lines: Iterable[tuple[int, Any]], out: Imported) -> None:
    """Fill ``out`` from the decoded lines of a Codex file."""
    build = Builder(out)
    aborted = False  # an abort event was just noted: the <turn_aborted> message repeats it
    for number, value in objects(lines, out):
        build.when(value.get("timestamp"))
        kind = value.get("type")
        item = value.get("payload") if kind in ENVELOPES else value
        if not isinstance(item, dict):
            out.skipped.append((number, "an item that is not a JSON object (skipped)"))
        elif kind == "turn_context":
            if isinstance(item.get("model"), str):
                out.model = clean(item["model"])[:100]
        elif kind == "event_msg":
            if item.get("type") == "turn_aborted":
                build.note("interrupted", "interrupted by the user", "interruption")
                aborted = True
        elif kind == "compacted":
            summary = item.get("message")
            build.note("compaction", f"compacted earlier: {first_line(clean(summary))}"
                       if isinstance(summary, str) and summary.strip() else "compacted earlier",
                       "compaction summary")
        elif kind != "session_meta":
            aborted = _item(build, item, aborted)
    build.finish()


def _item(build: Builder, item: dict[str, Any], aborted: bool) -> bool:
    """Read one response item; whether an abort noted just before is still to be repeated."""
    kind = item.get("type", "message" if "role" in item else None)
    if kind == "message":
        _message(build, item.get("role"), item.get("content"), aborted)
        return aborted and item.get("role") != "user"
    if kind == "reasoning":
        build.leave_out("thinking block")
        return aborted
    if kind in _CALLS:
        build.call(str(item.get("call_id") or item.get("id") or ""), _name(item), _input(item))
    elif kind in _RESULTS:
        output = item.get("output", "")
        if isinstance(output, str) and output.startswith("{"):  # {"output": ..., "metadata"}
            with contextlib.suppress(ValueError, RecursionError):
                output = json.loads(output)
        if isinstance(output, dict) and "output" in output:
            output = output["output"]
        build.result(str(item.get("call_id", "")), as_text(output))
    elif kind == "web_search_call":
        build.call(str(item.get("id") or ""), "web_search", item.get("action", {}))
    return False


def _name(item: dict[str, Any]) -> str:
    return "local_shell" if item.get("type") == "local_shell_call" else str(item.get("name", ""))


def _input(item: dict[str, Any]) -> Any:
    if item.get("type") == "custom_tool_call":  # a freeform tool (apply_patch): its text
        return {"input": bounded(item.get("input", ""))}
    if item.get("type") == "local_shell_call":  # {"action": {"type": "exec", "command": [...]}}
        return item.get("action", {})
    return item.get("arguments", {})


def _message(build: Builder, role: Any, content: Any, aborted: bool) -> None:
    texts = [clean(t) for t in block_texts(content)]
    if role == "assistant":
        build.text(cut("\n\n".join(t for t in texts if t.strip())))
        return
    if role in ("developer", "system"):
        build.fold("developer message")
        return
    if role != "user":
        return
    for block in content if isinstance(content, list) else ():
        if isinstance(block, dict) and block.get("type") == "input_image":
            picture = image_block(block)
            if picture is None:
                build.leave_out("image")
            else:
                build.attach(picture)
    typed: list[str] = []
    for text in texts:
        start = text.lstrip()
        own = next((what for lead, what in _OWN if start.startswith(lead)), None)
        if own is not None:
            build.fold(own)
        elif start.startswith("<turn_aborted>"):  # noted once, from the event if it came
            if not aborted:
                build.note("interrupted", "interrupted by the user", "interruption")
        elif start.startswith("<user_shell_command>"):
            build.note("shell", cut(start, MAX_NOTE), "shell command")
        elif start:
            typed.append(text.strip())
    if typed:
        build.prompt(cut("\n\n".join(typed)))
