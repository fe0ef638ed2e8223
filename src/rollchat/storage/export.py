"""A session and its lineage as one document: ``rollchat export`` (markdown: the files
themselves; JSON: the parsed transcript) and what ``rollchat show`` draws."""

# The lineage follows each session's parent link (Resumed From, or Forked From) back to the
# root, oldest first. A parent that is missing or unreadable, or a link back into the chain (a
# cycle), ends it there: the chain is what could be read, and ``broken`` says why it stops.

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rollchat.domain import (
    Image,
    Note,
    SessionHeader,
    Summary,
    Text,
    Thinking,
    ToolResult,
    ToolUse,
    Transcript,
    Turn,
)
from rollchat.errors import StoreError, TranscriptError
from rollchat.storage.store import SessionStore
from rollchat.storage.transcript import SUMMARY_START, parse_lenient


@dataclass(frozen=True)
class Document:
    """One session file: its text as stored, and parsed."""

    session_id: str
    text: str
    transcript: Transcript

    @property
    def summary_dropped(self) -> bool:
        """The file has a summary block that could not be read (the transcript has none)."""
        return self.transcript.summary is None and f"\n{SUMMARY_START}" in self.text


@dataclass(frozen=True)
class Lineage:
    """Sessions oldest first, ending with the one asked for; ``broken``: why the chain stops
    before its root (None: it reaches a session with no parent)."""

    documents: list[Document]
    broken: str | None = None


def read_document(store: SessionStore, session_id: str) -> Document:
    """The session's file, read and parsed (StoreError, TranscriptError)."""
    text = store.read_text(session_id)
    try:
        transcript = parse_lenient(text)
    except TranscriptError as e:
        raise TranscriptError(f"{session_id}.md: {e}") from None
    return Document(session_id, text, transcript)


def lineage(store: SessionStore, session_id: str) -> Lineage:
    """The session and its ancestors, oldest first. Only the session itself must be readable:
    an ancestor that is not ends the chain (``broken`` says which and why)."""
    chain = [read_document(store, session_id)]
    seen = {session_id}
    broken = None
    while True:
        child = chain[-1].transcript.header
        parent = child.resumed_from
        if parent is None:
            break
        if parent in seen:
            broken = (f"{child.session_id} names {parent} as its parent, which is already in "
                      "the chain (a cycle): stopped there")
            break
        try:
            chain.append(read_document(store, parent))
        except (StoreError, TranscriptError) as e:
            broken = (f"the chain is broken: {child.session_id}'s parent {parent} cannot be "
                      f"read ({e})")
            break
        seen.add(parent)
    return Lineage(chain[::-1], broken)


# ------------------------------------------------------------------ JSON


def header_json(h: SessionHeader) -> dict[str, Any]:
    return {"id": h.session_id, "date": h.date.isoformat(), "agent": h.agent,
            "agent_path": h.agent_path, "model": h.model, "provider": h.provider,
            "parent": h.resumed_from, "forked": h.forked, "previous_session": h.previous_session,
            "continued_in": list(h.continued_in), "total_queries": h.total_queries,
            "tokens_billed": h.total_tokens, "context_tokens": h.context_tokens,
            "tools": list(h.tools) if h.tools is not None else None}


def image_json(image: Image) -> dict[str, Any]:
    return {"media_type": image.media_type, "bytes": image.size, "sha256": image.digest,
            "file": image.path or None}


def blocks_json(t: Turn) -> list[dict[str, Any]]:
    """A turn's answer as typed blocks in the order they happened."""
    out: list[dict[str, Any]] = []
    for b in t.blocks:
        if isinstance(b, Text):
            out.append({"type": "text", "text": b.text})
        elif isinstance(b, ToolUse):
            out.append({"type": "tool_call", "id": b.call.id, "name": b.call.name,
                        "arguments": dict(b.call.arguments)})
        elif isinstance(b, ToolResult):
            out.append({"type": "tool_result", "call_id": b.call_id, "text": b.content,
                        "is_error": b.is_error, "images": [image_json(i) for i in b.images],
                        "sent": ("whole" if b.sent_keep is None else "omitted"
                                 if b.sent_keep < 0 else f"cut to {b.sent_keep} chars")})
        elif isinstance(b, Note):
            out.append({"type": "note", "kind": b.kind, "text": b.text})
        elif isinstance(b, Thinking):
            out.append({"type": "thinking", "text": b.text})
        else:
            out.append({"type": "provider", "provider": b.provider, "block_type": b.type,
                        "data": b.data})
    return out


def turn_json(t: Turn) -> dict[str, Any]:
    """A turn: its messages in order (the user's, or the restored context; then the answer's
    texts, tool calls with their results, and notes, as they happened), the same as typed
    ``blocks``, its tokens and status."""
    messages: list[dict[str, Any]] = []
    if t.kind == "restored":
        messages.append({"role": "context", "text": t.context})
    else:
        messages.append({"role": "user", "text": t.user,
                         **({"typed": t.typed} if t.typed else {}),
                         **({"images": [image_json(i) for i in t.attached]}
                            if t.attached else {})})
    calls = {b.call.id: b.call for b in t.blocks if isinstance(b, ToolUse)}
    for b in t.blocks:
        if isinstance(b, Text):
            messages.append({"role": "assistant", "text": b.text})
        elif isinstance(b, ToolResult):
            call = calls.get(b.call_id)
            messages.append({"role": "tool", "name": call.name if call else "",
                             "call_id": b.call_id,
                             "arguments": dict(call.arguments) if call else {},
                             "text": b.content, "is_error": b.is_error})
        elif isinstance(b, Note):
            messages.append({"role": "note", "kind": b.kind, "text": b.text})
    if not any(isinstance(b, Text) for b in t.blocks):
        messages.append({"role": "assistant", "text": ""})
    u = t.usage
    return {"kind": t.kind, "number": t.number, "started": t.started.isoformat(),
            "status": t.status, "error": t.error, "elapsed": t.elapsed,
            "previous_session": t.previous_session, "messages": messages,
            "blocks": blocks_json(t),
            "tokens": {"input": u.input_tokens, "output": u.output_tokens,
                       "cache_read": u.cache_read_tokens, "cache_write": u.cache_write_tokens,
                       "total": u.total}}


def summary_json(s: Summary | None) -> dict[str, Any] | None:
    if s is None:
        return None
    return {"background": s.background, "topics": list(s.topics),
            "decisions": list(s.decisions), "pending": list(s.pending),
            "artifacts": list(s.artifacts), "timeline": list(s.timeline),
            "fallback": s.fallback,
            "dropped_topics": s.dropped_topics, "dropped_artifacts": s.dropped_artifacts}


def session_json(t: Transcript) -> dict[str, Any]:
    return {"session": header_json(t.header), "turns": [turn_json(x) for x in t.turns],
            "summary": summary_json(t.summary)}


def chain_json(found: Lineage) -> dict[str, Any]:
    return {"sessions": [session_json(d.transcript) for d in found.documents],
            "broken": found.broken}


# ------------------------------------------------------------------ markdown


def file_markdown(doc: Document) -> str:
    """The session's file as exported: its text, ending with exactly one newline (a file saved
    without one, or with blank lines after it, would run into what follows it)."""
    return doc.text.rstrip("\n") + "\n"


def chain_markdown(found: Lineage) -> str:
    """The files of the lineage, oldest first, each after a comment line naming it (and the
    break, when the chain does not reach its root)."""
    parts: list[str] = []
    if found.broken is not None:
        parts.append(f"<!-- rollchat export: {_comment(found.broken)} -->\n\n")
    total = len(found.documents)
    for n, doc in enumerate(found.documents, 1):
        parts.append(f"<!-- rollchat export: session {n} of {total}: {doc.session_id}.md -->\n\n")
        parts.append(file_markdown(doc))
        if n < total:
            parts.append("\n")
    return "".join(parts)


def _comment(text: str) -> str:
    return text.replace("--", "- -").replace("\n", " ")
