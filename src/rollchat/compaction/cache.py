"""The result of ``rollchat compact ID`` / the MCP server's ``compact_session`` (``Compacted``,
its JSON and markdown) and its cache: ``<sessions dir>/.cache/compact/<key>.json``, keyed by
the session file's bytes, the parent's summary, focus, size and model (read: cache_entry)."""

from __future__ import annotations

import contextlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from rollchat.compaction.cache_entry import (
    CACHE_DIR_PARTS,
    CACHE_VERSION,
    entry_key,
    file_key,
    read_result,
    strings,
)
from rollchat.errors import StoreError

if TYPE_CHECKING:  # (imported to build one: an answer printed from the cache needs none)
    from rollchat.domain import Summary

# (storage.session_file, which writes entries, is imported only to write one; an answer from
# the cache reads one file through compaction.cache_entry, and ``compact ID --json`` is timed
# against ``--version``)

Method = Literal["file", "model", "extractive"]
CACHE_DIR = Path(*CACHE_DIR_PARTS)
CACHE_MAX_ENTRIES = 500  # past this, the oldest entries are removed when one is written


@dataclass(frozen=True)
class Compacted:
    """The summary of one session and where it came from: ``method`` "file" (the session's
    own summary block), "model", or "extractive" (the model failed: ``reason`` says why);
    ``cached`` when no summary was written for this answer (the cache, or the file's block).
    ``tokens``: the tokens of ``markdown``, what handing the summary on costs."""

    session_id: str
    title: str | None
    summary: Summary
    markdown: str
    tokens: int
    cached: bool
    method: Method
    model: str | None  # "provider:model" that wrote it; None for the file's own block
    focus: str | None
    max_words: int | None  # the size asked of the model (None: the file's own block)
    parent: str | None
    reason: str | None = None
    notes: tuple[str, ...] = ()  # what did not stop it (an unreadable parent, a cache error)

    def as_json(self) -> dict[str, Any]:
        """What ``compact --json`` prints and ``compact_session`` returns."""
        s = self.summary
        return {"session": self.session_id, "title": self.title, "summary": self.markdown,
                "background": s.background, "topics": list(s.topics),
                "decisions": list(s.decisions), "pending": list(s.pending),
                "files": list(s.artifacts), "timeline": list(s.timeline),
                "tokens": self.tokens, "cached": self.cached,
                "method": self.method, "model": self.model, "focus": self.focus,
                "max_words": self.max_words, "parent": self.parent,
                "fallback_reason": self.reason, "notes": list(self.notes)}


def summary_markdown(s: Summary) -> str:
    """The summary as markdown: the sections of the file's summary block, without its markers
    or its escapes (a consumer reads it, not the parser)."""
    def bullets(items: tuple[str, ...]) -> list[str]:
        return [("- " + item).replace("\n", "\n  ") for item in items] or ["- None"]

    lines = [f"**Background Context:** {s.background}", ""]
    sections = [("Topics Discussed", s.topics), ("Decisions Made", s.decisions),
                ("Pending", s.pending)]
    if s.timeline:
        sections.append(("Timeline", s.timeline))
    if s.artifacts:
        sections.append(("Files and artifacts", s.artifacts))
    for title, items in sections:
        lines += [f"**{title}:**", *bullets(items), ""]
    return "\n".join(lines).rstrip("\n") + "\n"


def cache_key(data: bytes, parent: Summary | None, focus: str | None, max_words: int | None,
              model: str) -> str:
    """The cache key of a summary: the session file's bytes, the parent's summary it carries,
    the focus, the size in words and the model."""
    block = None
    if parent is not None:  # (the transcript package is imported only then)
        from rollchat.storage.transcript import render_summary_block

        block = render_summary_block(parent)
    return entry_key(data, block, focus, max_words, model)


__all__ = ["CACHE_DIR", "CompactCache", "Compacted", "cache_key", "file_key", "summary_markdown"]


class CompactCache:
    """``<sessions dir>/.cache/compact/<key>.json``: one summary per key, written atomically;
    an entry that is not a valid one of ours is ignored (and replaced when recomputed)."""

    def __init__(self, sessions_dir: Path) -> None:
        self.dir = sessions_dir / CACHE_DIR

    def path(self, key: str) -> Path:
        return self.dir / f"{key}.json"

    def get(self, key: str) -> Compacted | None:
        result = self.result(key)
        return _from_result(result) if result is not None else None

    def result(self, key: str) -> dict[str, Any] | None:
        """The entry's result as it was written (``Compacted.as_json``), checked; None when
        there is no valid entry for ``key``."""
        return read_result(str(self.dir), key)

    def put(self, key: str, result: Compacted) -> str | None:
        """Write the entry; None, or why it could not be written (not fatal: it is a cache)."""
        from rollchat.storage.session_file import atomic_write

        entry = {"version": CACHE_VERSION, "key": key, "result": result.as_json()}
        data = json.dumps(entry, ensure_ascii=False, indent=1).encode("utf-8", "surrogatepass")
        try:
            self.dir.mkdir(parents=True, exist_ok=True, mode=0o700)
            atomic_write(self.path(key), data)
        except OSError as e:
            return f"could not cache the summary in {self.dir}: {e.strerror or e}"
        except StoreError as e:
            return f"could not cache the summary: {e}"
        self._prune()
        return None

    def _prune(self) -> None:
        """Keep the newest CACHE_MAX_ENTRIES entries."""
        with contextlib.suppress(OSError):
            entries = [e for e in os.scandir(self.dir) if e.name.endswith(".json")]
            if len(entries) <= CACHE_MAX_ENTRIES:
                return
            entries.sort(key=lambda e: e.stat().st_mtime)
            for entry in entries[:len(entries) - CACHE_MAX_ENTRIES]:
                with contextlib.suppress(OSError):
                    os.unlink(entry.path)


def _from_result(r: dict[str, Any]) -> Compacted:
    """A checked entry's result back as a result (``cached``: it came from the cache)."""
    from rollchat.domain import Summary

    summary = Summary(r["background"], strings(r["topics"]), strings(r["decisions"]),
                      strings(r["pending"]), fallback=r["method"] == "extractive",
                      artifacts=strings(r["files"]),
                      timeline=strings(r.get("timeline", [])))  # (entries before it have none)
    return Compacted(r["session"], r["title"], summary, r["summary"], r["tokens"], True,
                     r["method"], r["model"], r["focus"], r["max_words"], r["parent"],
                     r["fallback_reason"])
