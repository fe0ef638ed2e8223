"""Notes: a small agent that keeps notes in ./notes.json (run: rollchat examples/notes_agent/agent.py).

Every public function listed in `tools` is a tool. rollchat reads each one's signature and
docstring: parameter types, defaults, Literal choices and the per-parameter descriptions
become the JSON schema the model sees (Anthropic and OpenAI formats alike), and the model's
arguments are checked against it before the function runs.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Literal

name = "Notes"
system_prompt = (
    "You keep the user's notes. Save what they ask you to remember with add_note, look "
    "things up with find_notes before answering from memory, and say which notes you used."
)
approval = "ask"            # writing and deleting ask first...
allow = ["find_notes"]      # ...reading does not
max_tool_rounds = 10
skills = "skills"           # skills/NAME/SKILL.md, loaded by the model when needed

NOTES = Path("notes.json")


def _load() -> list[dict[str, object]]:
    if not NOTES.exists():
        return []
    data = json.loads(NOTES.read_text(encoding="utf-8"))
    return data if isinstance(data, list) else []


def _save(notes: list[dict[str, object]]) -> None:
    NOTES.write_text(json.dumps(notes, indent=2, ensure_ascii=False), encoding="utf-8")


def add_note(text: str, tags: list[str] | None = None) -> str:
    """Save a note.

    Args:
        text: What to remember, in one or two sentences.
        tags: Short labels to find it by later.
    """
    notes = _load()
    number = max((int(str(n["id"])) for n in notes), default=0) + 1
    notes.append({"id": number, "text": text, "tags": tags or [],
                  "saved": datetime.now(timezone.utc).isoformat(timespec="seconds")})
    _save(notes)
    return f"saved note {number}"


def find_notes(query: str, limit: int = 5,
               order: Literal["newest", "oldest"] = "newest") -> str:
    """Find notes whose text or tags contain every word of the query.

    Args:
        query: Words to look for (case does not matter).
        limit: At most this many notes.
        order: Which notes come first.
    """
    words = query.lower().split()
    found = [n for n in _load()
             if all(w in (str(n["text"]) + " " + " ".join(map(str, n["tags"]))).lower()
                    for w in words)]
    if order == "newest":
        found.reverse()
    if not found:
        return f"no notes match {query!r}"
    return "\n".join(f"#{n['id']} {n['text']}" for n in found[:limit])


def delete_note(note_id: int) -> str:
    """Delete a note by its number.

    Args:
        note_id: The note's number (as find_notes shows it, without the #).
    """
    notes = _load()
    kept = [n for n in notes if n["id"] != note_id]
    if len(kept) == len(notes):
        raise ValueError(f"there is no note {note_id}")
    _save(kept)
    return f"deleted note {note_id}"


tools = [add_note, find_notes, delete_note]
