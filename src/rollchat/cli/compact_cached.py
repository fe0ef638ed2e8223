"""``rollchat compact SESSION --json [--focus F] [--max-words N]`` answered from its cache before
typer is imported: what scripts call often, as quick as a process can be (bench/bench_cli.py):
the config recalled when unchanged (config.recall), a number or a part of an id resolved through
the sessions index. Anything else, or no entry, goes the ordinary way (cli/compact.py)."""

from __future__ import annotations

import json
import os
import re
import stat
import sys

TYPE_CHECKING = False  # (typing itself is not imported: ``--json`` is timed to the ms)
if TYPE_CHECKING:
    from pathlib import Path

    from rollchat.storage.index import SessionIndex
    from rollchat.storage.listing import SessionInfo

# a session's whole id (read without the index), else a number or a part of one (the index)
_SESSION_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
_VALUED = ("--sessions-dir", "--config")  # where the configuration and sessions are
_ASKED = ("--focus", "--max-words")  # what the summary is asked for (part of its key)
RECORD = "config-record"  # beside the entries (not *.json: the cache's pruning leaves it)
# the recalled values a focused or sized summary's key needs besides the model's name
_KEYED = ("summary_key", "max_words")


class Asked:
    """A command line answered here: the session as given, the options naming the config and
    sessions directory, and what the summary is asked for (None: the file's own summary)."""

    __slots__ = ("focus", "given", "max_words", "ref")

    def __init__(self, ref: str, given: dict[str, str], focus: str | None,
                 max_words: int | None) -> None:
        self.ref, self.given, self.focus, self.max_words = ref, given, focus, max_words


def answered(args: list[str]) -> bool:
    """Whether the command line (after ``compact``) was answered from the cache: only
    ``SESSION --json`` with ``--sessions-dir`` / ``--config`` / ``--focus`` / ``--max-words``,
    a config with nothing to warn about, and an entry for the file as it is now."""
    asked = _parsed(args)
    if asked is None:
        return False
    from rollchat.errors import RollchatError

    try:
        text = _cached(asked)
    except (RollchatError, OSError, ValueError):
        return False  # the ordinary way says what is wrong
    if text is None:
        return False
    sys.stdout.write(text)
    return True


def _parsed(args: list[str]) -> Asked | None:
    """The command line as asked, or None for any other command line."""
    given: dict[str, str] = {}
    words: list[str] = []
    json_flag = False
    index = 0
    while index < len(args):
        word = args[index]
        name, eq, value = word.partition("=")
        if word == "--json":
            json_flag = True
        elif name in (*_VALUED, *_ASKED) and eq:
            given[name] = value
        elif word in (*_VALUED, *_ASKED) and index + 1 < len(args):
            given[word] = args[index + 1]
            index += 1
        elif word.startswith("-"):
            return None
        else:
            words.append(word)
        index += 1
    size = given.pop("--max-words", None)
    if not json_flag or len(words) != 1 or not _SESSION_ID.fullmatch(words[0]) or (
            size is not None and not (size.isascii() and size.isdigit())):
        return None
    return Asked(words[0], given, given.pop("--focus", None),
                 None if size is None else int(size))


def _cached(asked: Asked) -> str | None:
    """What ``compact --json`` prints for ``ref`` when its cache holds the answer, else None:
    with the configuration recalled when nothing it was resolved from changed (no loader, no
    dataclasses, no platformdirs), else loaded."""
    from rollchat.config.recall import recall

    # where the record is when the sessions directory is not set in a config file (a guess:
    # a record is used only when its fingerprint and files match, wherever it was found)
    given = asked.given
    guess = os.path.join(os.getcwd(), os.path.expanduser(
        given.get("--sessions-dir") or os.environ.get("ROLLCHAT_SESSIONS_DIR") or "sessions"))
    values = recall(_record(guess), given)
    if values is not None and {"sessions_dir", "model", *_KEYED} <= values.keys():
        return _answer(values, asked)
    return _loaded(asked)


def _record(sessions_dir: str) -> str:
    from rollchat.compaction.cache_entry import CACHE_DIR_PARTS

    return os.path.join(sessions_dir, *CACHE_DIR_PARTS, RECORD)


def _loaded(asked: Asked) -> str | None:
    """``_cached`` with the configuration loaded; the record written when it answered."""
    from rollchat.compaction.choice import summary_names
    from rollchat.config.recall import load_recordable, remember

    cfg, files = load_recordable(asked.given)
    if cfg.warnings:  # a warning to show: the ordinary way shows it
        return None
    provider, model = summary_names(cfg, os.environ)
    values = {"sessions_dir": str(cfg.session.dir), "model": model,
              "summary_key": f"{provider}:{model}", "max_words": str(cfg.summary.max_words)}
    text = _answer(values, asked)
    if text is not None and files is not None:
        remember(_record(str(cfg.session.dir)), asked.given, files, values)
    return text


def _answer(values: dict[str, str], asked: Asked) -> str | None:
    """The cached answer to ``asked`` in the recalled or loaded ``values``, printed as the
    ordinary way prints it (``Compacted.as_json``, from the entry as it was written): no
    summary is rebuilt, no transcript parsed. None when the cache does not hold it."""
    from rollchat.compaction.cache_entry import CACHE_DIR_PARTS, file_key, read_result

    sessions_dir, cache = values["sessions_dir"], os.path.join(values["sessions_dir"],
                                                               *CACHE_DIR_PARTS)
    own = asked.focus is None and asked.max_words is None  # the file's own summary
    if own and not asked.ref.isdigit():  # a whole id, else (no such file) through the index
        data = _read_if_there(os.path.join(sessions_dir, f"{asked.ref}.md"))
        if data is not None:
            return _printed(read_result(cache, file_key(data, values["model"])), asked.ref,
                            "file")
    from rollchat.storage.index import SessionIndex

    index = SessionIndex(_path(sessions_dir))
    info = index.resolve(asked.ref)  # StoreError: the ordinary way says why
    data = _read(os.path.join(sessions_dir, info.file_name))
    if own:
        return _printed(read_result(cache, file_key(data, values["model"])), info.session_id,
                        "file")
    from rollchat.compaction.cache_entry import arguments, entry_key

    focus, max_words = arguments(asked.focus, asked.max_words)
    block = None
    if info.resumed_from is not None:
        block = _parent_block(index, info)
        if block is None:  # a missing or unreadable parent: the ordinary way notes it
            return None
    words = max_words if max_words is not None else int(values["max_words"])
    key = entry_key(data, block, focus, words, values["summary_key"])
    return _printed(read_result(cache, key), info.session_id, "model",
                    title=info.title or None)


def _printed(hit: dict[str, object] | None, session: str, method: str,
             **shown: object) -> str | None:
    """An entry's result as ``compact --json`` prints it: a model's summary marked ``cached``
    with the session's title now (as compaction.saved.compact answers from its cache)."""
    if hit is None or hit["session"] != session or hit["method"] != method:
        return None
    if method == "model":
        hit.update(shown, cached=True, notes=[])
    return json.dumps(hit, indent=2, ensure_ascii=False) + "\n"


def _parent_block(index: SessionIndex, info: SessionInfo) -> str | None:
    """The summary block of the session ``info`` continues, as the cache key holds it; None
    when it is missing, unreadable or has no summary."""
    from rollchat.errors import StoreError, TranscriptError
    from rollchat.storage.transcript import render_summary_block, tail_summary

    parent = next((s for s in index.lineage([info]) if s.session_id == info.resumed_from),
                  None)
    if parent is None:
        return None
    try:  # (its tail only, as the store reads a summary)
        fd = _open(os.path.join(str(index.root), parent.file_name))
    except (OSError, ValueError):
        return None
    try:
        summary = tail_summary(lambda at, n: os.pread(fd, n, at), os.fstat(fd).st_size)
    except (StoreError, TranscriptError, OSError):
        return None
    finally:
        os.close(fd)
    return render_summary_block(summary) if summary is not None else None


def _path(directory: str) -> Path:
    from pathlib import Path

    return Path(directory)


def _read_if_there(path: str) -> bytes | None:
    """``_read``, or None when there is no such file (then the index resolves the id)."""
    try:
        return _read(path)
    except FileNotFoundError:
        return None


def _read(path: str) -> bytes:
    """A regular file's bytes, its last component not followed (as the store reads it)."""
    with os.fdopen(_open(path), "rb") as f:
        return f.read()


def _open(path: str) -> int:
    """A regular file opened for reading, its last component not followed; ValueError for
    anything else (a FIFO must not block: it is refused), OSError when it cannot be opened."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
                 | getattr(os, "O_NONBLOCK", 0))
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise ValueError(f"{path} is not a regular file")
    return fd
