"""What the sessions index keeps of each file: file names as row keys, rows <-> SessionInfo,
the parts of a session that full-text search reads, and FTS5 snippets as marked parts."""

from __future__ import annotations

import contextlib
import json
import os
import re
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from rollchat.errors import TranscriptError
from rollchat.storage.listing import NOFOLLOW, SessionInfo

TEXT_MAX_BYTES = 4 * 1024 * 1024  # of a file's text indexed for search (its summary always)
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)

def row_key(name: str) -> str | bytes:
    """A file name as the index keeps it: the name, or its bytes when it is not UTF-8 (such a
    name, decoded with surrogates, cannot be SQLite text)."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return os.fsencode(name)
    return name


def row_name(key: str | bytes) -> str:
    """The file name a ``row_key`` stands for."""
    return os.fsdecode(key) if isinstance(key, bytes) else key


def micros(date: datetime) -> int:
    return (date - _EPOCH) // timedelta(microseconds=1)


def encode_info(info: SessionInfo) -> str:
    data = info._asdict()
    del data["number"], data["path"]
    data["date"] = info.date.isoformat()
    return json.dumps(data, ensure_ascii=False)


def decode_info(root: Path, number: int, text: str) -> SessionInfo:
    data: dict[str, Any] = json.loads(text)
    data["date"] = datetime.fromisoformat(data["date"])
    data["continued_in"] = tuple(data["continued_in"])
    if data["tools"] is not None:
        data["tools"] = tuple(data["tools"])
    return SessionInfo(number=number, path=root / data["file_name"], **data)


_MARK = re.compile("\x02([^\x02\x03]*)\x03")


def snippet_parts(marked: str) -> tuple[tuple[str, bool], ...]:
    """FTS5's snippet with \\x02 and \\x03 around each match, as (text, matched) parts; the
    markdown's own ``**`` (bold in a transcript) left out: a snippet is plain text."""
    parts: list[tuple[str, bool]] = []
    at = 0
    for match in _MARK.finditer(marked):
        parts += [(marked[at:match.start()], False), (match[1], True)]
        at = match.end()
    parts.append((marked[at:], False))
    plain = ((text.replace("\x02", "").replace("\x03", "").replace("**", ""), matched)
             for text, matched in parts)
    return tuple((text, matched) for text, matched in plain if text)



def search_parts(path: str, info: SessionInfo) -> list[tuple[str, str]]:
    """(part, text) pairs for the full-text index: the title, the summary, one per turn (its
    user and assistant text). At most TEXT_MAX_BYTES of the turns; a file whose turns do
    not parse is indexed as its raw text."""
    from rollchat.storage.transcript import decode, parse_lenient, tail_summary

    parts = [("title", info.title)] if info.title else []
    try:
        fd = os.open(path, os.O_RDONLY | NOFOLLOW)
    except OSError:
        return parts
    try:
        size = os.fstat(fd).st_size
        data = os.pread(fd, min(size, TEXT_MAX_BYTES), 0)
        summary = None
        if info.has_summary:
            with contextlib.suppress(TranscriptError):
                summary = tail_summary(lambda at, n: os.pread(fd, n, at), size)
    except OSError:
        return parts
    finally:
        os.close(fd)
    if len(data) < size:  # cut after the last whole block
        data = data[:data.rfind(b"\n---\n") + 5]
    try:
        text = decode(data, binary_check=False)
    except TranscriptError:
        text = data.decode("utf-8", "replace")
    if summary is not None:
        items = (summary.background, *summary.topics, *summary.decisions, *summary.pending,
                 *summary.artifacts, *summary.timeline)
        parts.append(("summary", "\n".join(items)))
    try:
        turns = parse_lenient(text).turns
    except TranscriptError:
        body = text.split("\n---\n", 1)[-1]
        return [*parts, ("raw", body)]
    for turn in turns:
        words = "\n".join(x for x in (turn.user, turn.context, turn.assistant) if x)
        parts.append((f"{turn.kind}:{turn.number}:{len(parts)}", words))
    return parts
