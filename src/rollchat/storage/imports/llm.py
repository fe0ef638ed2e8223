"""Simon Willison's ``llm`` logs as ``llm logs --json`` writes them: one turn per prompt, the
tool calls of a response and the results sent back with the next one in order."""

# The file is a JSON array of responses, oldest first: ``{"id", "model", "prompt", "system",
# "response", "conversation_id", "conversation_name", "datetime_utc", "reasoning"?,
# "tool_calls": [{"name", "arguments", "tool_call_id"}], "tool_results": [{"name", "output",
# "tool_call_id", "exception"}], ...}``. A response to tool results has an empty prompt: it
# continues the turn. Several conversations in one file follow each other, each marked by a
# note where it starts; a system prompt is a note too (it is not a prompt the user typed).

from __future__ import annotations

from typing import Any

from rollchat.storage.imports.builder import Builder
from rollchat.storage.imports.common import MAX_NOTE, Imported, as_text, cleaned, cut
from rollchat.text.normalize import clean


def is_llm_logs(value: Any) -> bool:
    """Whether a decoded file is ``llm logs --json`` output."""
    return (isinstance(value, list) and bool(value) and isinstance(value[0], dict)
            and "prompt" in value[0] and "response" in value[0]
            and ("conversation_id" in value[0] or "datetime_utc" in value[0]))


def read(entries: list[Any], out: Imported) -> None:
    """Fill ``out`` from the decoded entries."""
    build = Builder(out)
    conversation: str | None = None
    system: str | None = None
    rows = [(n, e) for n, e in enumerate(entries, 1) if isinstance(e, dict)]
    out.skipped += [(n, "entry that is not a JSON object (skipped)")
                    for n, e in enumerate(entries, 1) if not isinstance(e, dict)]
    many = len({_conversation(e) for _, e in rows}) > 1
    for _, entry in sorted(rows, key=lambda r: str(r[1].get("datetime_utc") or "")):
        build.when(entry.get("datetime_utc"))
        prompt = cleaned(entry.get("prompt"))
        if prompt.strip():
            build.prompt(prompt)
        if _conversation(entry) != conversation:
            if many:
                name = cleaned(entry.get("conversation_name"), 200)
                build.note("conversation", f"llm conversation {_conversation(entry)}"
                           + (f": {name}" if name else ""), "conversation start")
            conversation = _conversation(entry)
        said = cleaned(entry.get("system"), MAX_NOTE)
        if said and said != system:
            build.note("system", f"system prompt: {said}", "system prompt")
        system = said or system
        _exchange(build, out, entry)
    build.finish()


def _exchange(build: Builder, out: Imported, entry: dict[str, Any]) -> None:
    for result in _dicts(entry.get("tool_results")):
        failed = result.get("exception") not in (None, "")
        text = as_text(result.get("output"))
        if failed:
            text = cut(f"{text}\n{clean(str(result['exception']))}".strip())
        build.result(str(result.get("tool_call_id") or ""), text, failed)
    if isinstance(entry.get("reasoning"), str) and entry["reasoning"].strip():
        build.leave_out("thinking block")
    if isinstance(entry.get("model"), str):
        out.model = clean(entry["model"])[:100]
    build.text(cleaned(entry.get("response")))
    for call in _dicts(entry.get("tool_calls")):
        build.call(str(call.get("tool_call_id") or ""), str(call.get("name", "")),
                   call.get("arguments", {}))


def _conversation(entry: dict[str, Any]) -> str:
    value = entry.get("conversation_id")
    return cleaned(value, 200) if isinstance(value, str) else ""


def _dicts(value: Any) -> list[dict[str, Any]]:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []
