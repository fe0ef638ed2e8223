"""What every reader of another tool's transcript shares: the result of a read (``Imported``),
the limits, and the untrusted value helpers (cut, cleaned, bounded, decoded JSON lines)."""

from __future__ import annotations

import base64
import json
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from rollchat.domain import Image, Turn
from rollchat.storage.images import image
from rollchat.text.normalize import clean

MAX_TEXT = 1_000_000  # characters kept of one message or tool result
MAX_DEPTH = 32  # nesting kept of a tool call's arguments
MAX_NOTE = 2_000  # characters kept of a tool's own output in a note (the output of /mcp, say)
CUT_MARK = "\n[…cut at import]"
# control characters inside strings allowed: the file is not cleaned as a whole, its strings are
DECODER = json.JSONDecoder(strict=False)


@dataclass
class Imported:
    """What a file held: its format, its turns, the model named in it, the title it gives
    (the tool's own summary line, else the first typed prompt), the lines skipped
    (``(line number, why)``), the tool's own lines folded into notes by kind (``folded``),
    what was left out by kind (``left_out``: thinking, sub-agent lines, images), and for a
    side-chain file the agent it belongs to."""

    format: str
    turns: list[Turn] = field(default_factory=list)
    model: str | None = None
    title: str | None = None
    skipped: list[tuple[int, str]] = field(default_factory=list)
    folded: Counter[str] = field(default_factory=Counter)
    left_out: Counter[str] = field(default_factory=Counter)
    side_chain: str | None = None


def cut(text: str, limit: int = MAX_TEXT) -> str:
    return text if len(text) <= limit else text[:limit] + CUT_MARK


def cleaned(value: Any, limit: int = MAX_TEXT) -> str:
    """A string from the file, cleaned and cut; "" for anything else."""
    return cut(clean(value), limit) if isinstance(value, str) else ""


def block_texts(value: Any) -> list[str]:
    """The texts of a string or of a list of content blocks (``text``, ``input_text``,
    ``output_text``), in order; other blocks are left out."""
    if isinstance(value, str):
        return [value]
    if not isinstance(value, list):
        return []
    return [b["text"] for b in value if isinstance(b, dict) and isinstance(b.get("text"), str)
            and b.get("type") in ("text", "input_text", "output_text")]


def joined_text(value: Any) -> str:
    """The texts of a string or of a list of content blocks, joined, cleaned and cut."""
    return cut(clean("\n\n".join(block_texts(value))))


def bounded(value: Any, depth: int = 0) -> Any:
    """A JSON value with every string cleaned and cut and the nesting bounded."""
    if depth >= MAX_DEPTH:
        return "[…nested too deeply]"
    if isinstance(value, dict):
        return {clean(str(k))[:200]: bounded(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list):
        return [bounded(v, depth + 1) for v in value]
    if isinstance(value, str):
        return cut(clean(value))
    return value if isinstance(value, (int, float, bool)) or value is None else str(value)


def arguments(raw: Any) -> dict[str, Any]:
    """A tool call's arguments as an object: a JSON string decoded, anything else wrapped."""
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except (ValueError, RecursionError):
            return {"arguments": cut(clean(raw))}
    value = bounded(raw)
    return value if isinstance(value, dict) else {"arguments": value}


def as_text(value: Any) -> str:
    """A tool result as text: a string as it is, the texts of a list of content blocks (its
    images are the caller's to count), other JSON as JSON."""
    if isinstance(value, (str, list)):
        return joined_text(value)
    if value is None:
        return ""
    return cut(clean(json.dumps(bounded(value), ensure_ascii=False)))


def timestamp(raw: Any) -> datetime | None:
    """An ISO 8601 time from the file (naive ones taken as UTC); None when it is not one."""
    if not isinstance(raw, str):
        return None
    try:
        stamp = datetime.fromisoformat(raw.replace("Z", "+00:00"))
    except ValueError:
        return None
    return stamp if stamp.tzinfo is not None else stamp.replace(tzinfo=timezone.utc)


@dataclass(frozen=True)
class Bad:
    """A line that is not JSON, and why."""

    why: str


def json_lines(data: bytes) -> Iterator[tuple[int, Any]]:
    """(line number, decoded JSON value) of each non-empty line of ``data``, one at a time; a
    line that is not JSON is yielded as a ``Bad``."""
    start, number, size = 0, 0, len(data)
    while start < size:
        end = data.find(b"\n", start)
        end = size if end < 0 else end
        line, start, number = data[start:end], end + 1, number + 1
        if not line.strip():
            continue
        try:
            yield number, DECODER.decode(line.decode("utf-8", errors="replace"))
        except RecursionError:
            yield number, Bad("JSON nested too deeply")
        except ValueError:
            yield number, Bad("not JSON")


def objects(lines: Iterable[tuple[int, Any]],
            out: Imported) -> Iterator[tuple[int, dict[str, Any]]]:
    """The lines that are JSON objects, with their numbers; the others are recorded in
    ``out.skipped`` with the reason."""
    for number, value in lines:
        if isinstance(value, Bad):
            out.skipped.append((number, f"{value.why} (skipped)"))
        elif not isinstance(value, dict):
            out.skipped.append((number, "not a JSON object (skipped)"))
        else:
            yield number, value


def first_line(text: str, limit: int = 200) -> str:
    """The first non-blank line of ``text``, trimmed and cut to ``limit`` characters."""
    line = next((s.strip() for s in text.split("\n") if s.strip()), "")
    return line if len(line) <= limit else line[:limit - 1] + "…"


def image_block(block: Any) -> Image | None:
    """The image of an image content block, as Claude Code writes it (``source``: base64
    ``data`` and ``media_type``) or Codex (``input_image`` with a ``data:`` URL in
    ``image_url``); None when it holds none the model could be shown (no bytes, a URL only,
    not an image kind, over the size bound: the caller counts it as left out)."""
    if not isinstance(block, dict):
        return None
    source, url = block.get("source"), block.get("image_url")
    if isinstance(source, dict) and source.get("type") == "base64":
        data = source.get("data")
    elif isinstance(url, str) and url.startswith("data:") and ";base64," in url[:80]:
        data = url.split(",", 1)[1]
    else:
        return None
    if not isinstance(data, str):
        return None
    try:
        made = image(base64.b64decode(data, validate=True))
    except ValueError:
        return None
    return made if isinstance(made, Image) else None
