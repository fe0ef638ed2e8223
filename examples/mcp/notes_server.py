"""A small MCP server written with the official SDK's ``MCPServer``: a notes list kept in a
JSON file. Run over stdio by rollchat (see examples/mcp/rollchat.yml), or over streamable
HTTP with ``--http PORT`` (on 127.0.0.1).

Tools: add_note, list_notes, clear_notes. With ``--pid-file PATH`` it writes its process id
there (the tests use it to prove the process is gone after rollchat exits).
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

parser = argparse.ArgumentParser(description=__doc__)
parser.add_argument("--notes", default=os.environ.get("NOTES_FILE", "notes.json"),
                    help="the JSON file the notes are kept in (default: $NOTES_FILE, "
                         "else ./notes.json)")
parser.add_argument("--http", type=int, metavar="PORT", help="serve streamable HTTP on "
                    "127.0.0.1:PORT instead of stdio")
parser.add_argument("--pid-file", help="write this process's id to this file")
options = parser.parse_args()
notes_file = Path(options.notes)
server = MCPServer("notes", instructions="A notes list: add, list and clear notes.")


def _load() -> list[str]:
    try:
        notes = json.loads(notes_file.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return []
    return [str(n) for n in notes] if isinstance(notes, list) else []


@server.tool()
def add_note(text: str) -> str:
    """Add a note to the list."""
    if not text.strip():
        raise ToolError("a note needs some text")  # the model sees this message
    notes = [*_load(), text.strip()]
    notes_file.write_text(json.dumps(notes, indent=2), encoding="utf-8")
    return f"Added note {len(notes)}: {text.strip()}"


@server.tool()
def list_notes() -> str:
    """List every note, numbered."""
    notes = _load()
    if not notes:
        return "No notes yet."
    return "\n".join(f"{i}. {note}" for i, note in enumerate(notes, 1))


@server.tool()
def clear_notes() -> str:
    """Delete every note."""
    count = len(_load())
    notes_file.write_text("[]", encoding="utf-8")
    return f"Deleted {count} notes."


@server.tool()
def wait_seconds(seconds: float) -> str:
    """Wait this many seconds, then answer (to try timeouts and Ctrl-C)."""
    time.sleep(seconds)
    return f"Waited {seconds:g} s."


if __name__ == "__main__":
    if options.pid_file:
        Path(options.pid_file).write_text(str(os.getpid()), encoding="utf-8")
    if options.http:
        server.run("streamable-http", host="127.0.0.1", port=options.http)
    else:
        server.run()
