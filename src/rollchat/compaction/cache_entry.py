"""One entry of the compact cache read back and checked, and the keys entries are filed under:
light (no dataclasses, no pathlib) so ``compact ID --json`` answers from it as quickly as a
process can (cli/compact_cached.py); compaction.cache writes the entries."""

from __future__ import annotations

import hashlib
import json
import os

from rollchat.config.recall import read_regular
from rollchat.errors import RollchatError

CACHE_DIR_PARTS = (".cache", "compact")  # inside the sessions directory (listing skips dot names)
CACHE_VERSION = 1  # part of every key: a change of format makes old entries unreachable
CACHE_ENTRY_MAX_BYTES = 1024 * 1024  # a larger entry is not read (it is not one of ours)
MIN_WORDS = 20  # the smallest --max-words accepted
# the largest --max-words and --focus accepted, from the command line and over MCP alike (a
# summary is a page, not a book; a focus is a phrase, not a document)
MAX_WORDS = 10_000
MAX_FOCUS_CHARS = 2_000


def arguments(focus: str | None, max_words: int | None) -> tuple[str | None, int | None]:
    """A summary's ``focus`` (cleaned, as the cache key holds it) and ``max_words``, checked;
    RollchatError saying what is wrong with either."""
    if focus is not None:
        if len(focus) > MAX_FOCUS_CHARS:
            raise RollchatError(f"the focus is too long: {len(focus):,} characters, at most "
                                f"{MAX_FOCUS_CHARS:,} (a few words on what to dwell on)")
        from rollchat.text.normalize import clean

        focus = clean(focus).strip()
        if not focus:
            raise RollchatError("the focus is empty: give some text, or leave it out")
    if max_words is not None and max_words < MIN_WORDS:
        raise RollchatError(f"max words must be at least {MIN_WORDS} (got {max_words})")
    if max_words is not None and max_words > MAX_WORDS:
        raise RollchatError(f"max words must be at most {MAX_WORDS:,} (got {max_words:,})")
    return focus, max_words


def entry_key(data: bytes, block: str | None, focus: str | None, max_words: int | None,
              model: str) -> str:
    """The key of a summary of the session file ``data``: with the parent's summary block it
    carries, the focus, the size in words and the model."""
    parts = [CACHE_VERSION, hashlib.sha256(data).hexdigest(), block, focus, max_words, model]
    return hashlib.sha256(json.dumps(parts, ensure_ascii=True).encode()).hexdigest()


def file_key(data: bytes, counter: str) -> str:
    """The cache key of a session file's own summary block as ``compact`` answers it: its
    tokens are counted with the tokenizer of ``counter``, the model, which is slow to load."""
    return entry_key(data, None, None, None, f"file {counter}")


def read_result(directory: str, key: str) -> dict[str, object] | None:
    """The result of the entry for ``key`` in ``directory`` as it was written
    (``Compacted.as_json``), checked; None when there is no valid entry for ``key``."""
    raw = read_regular(os.path.join(directory, f"{key}.json"), CACHE_ENTRY_MAX_BYTES)
    if raw is None:
        return None
    try:
        return _checked(json.loads(raw.decode("utf-8")), key)
    except (ValueError, TypeError, KeyError):
        return None


def strings(value: object) -> tuple[str, ...]:
    """``value`` as a tuple of strings; TypeError when it is not a list of them."""
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise TypeError("not a list of strings")
    return tuple(value)


def _optional(value: object, kind: type) -> None:
    if value is not None and not isinstance(value, kind):
        raise TypeError(f"not a {kind.__name__}")


def _checked(entry: object, key: str) -> dict[str, object]:
    """A cache entry's result, checked; TypeError/KeyError/ValueError if it is not valid."""
    if not isinstance(entry, dict) or entry.get("version") != CACHE_VERSION or \
            entry.get("key") != key or not isinstance(entry.get("result"), dict):
        raise ValueError("not a cache entry of this version and key")
    r: dict[str, object] = entry["result"]
    if not isinstance(r["session"], str) or not isinstance(r["summary"], str) or \
            not isinstance(r["background"], str) or type(r["tokens"]) is not int or \
            r["method"] not in ("model", "extractive", "file") or r["cached"] is not (
                r["method"] == "file") or r["notes"] != []:
        raise TypeError("bad field")
    for name in ("topics", "decisions", "pending", "files"):
        strings(r[name])
    for name, kind in (("title", str), ("model", str), ("focus", str), ("max_words", int),
                       ("parent", str), ("fallback_reason", str)):
        _optional(r[name], kind)
    return r
