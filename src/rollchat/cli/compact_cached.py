"""``rollchat compact ID --json`` answered from its cache before typer is imported: what
scripts call often, as quick as a process can be (bench/bench_cli.py). Anything else, or no
cache entry, goes the ordinary way (cli/compact.py), which says what is wrong and fills it."""

from __future__ import annotations

import json
import os
import re
import stat
import sys
from pathlib import Path

# a session's whole id (a number or an id prefix needs the index: the ordinary way)
_SESSION_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
_VALUED = ("--sessions-dir", "--config")


def answered(args: list[str]) -> bool:
    """Whether the command line (after ``compact``) was answered from the cache: only
    ``ID --json`` with ``--sessions-dir`` / ``--config``, a whole session id, a config with
    nothing to warn about, and an entry for the file as it is now."""
    parsed = _parsed(args)
    if parsed is None:
        return False
    ref, given = parsed
    from rollchat.errors import RollchatError

    try:
        text = _cached(ref, given)
    except (RollchatError, OSError, ValueError):
        return False  # the ordinary way says what is wrong
    if text is None:
        return False
    sys.stdout.write(text)
    return True


def _parsed(args: list[str]) -> tuple[str, dict[str, str]] | None:
    """(the session id, the valued options given), or None for any other command line."""
    given: dict[str, str] = {}
    words: list[str] = []
    json_flag = False
    index = 0
    while index < len(args):
        word = args[index]
        name, eq, value = word.partition("=")
        if word == "--json":
            json_flag = True
        elif name in _VALUED and eq:
            given[name] = value
        elif word in _VALUED and index + 1 < len(args):
            given[word] = args[index + 1]
            index += 1
        elif word.startswith("-"):
            return None
        else:
            words.append(word)
        index += 1
    if not json_flag or len(words) != 1 or not _SESSION_ID.fullmatch(words[0]) \
            or words[0].isdigit():
        return None
    return words[0], given


def _cached(ref: str, given: dict[str, str]) -> str | None:
    """What ``compact --json`` prints for ``ref`` when its cache holds the answer, else None."""
    from rollchat.compaction.cache import CompactCache, file_key
    from rollchat.compaction.choice import summary_names
    from rollchat.config.load import load_config
    from rollchat.config.settings import ConfigOverrides

    sessions_dir = given.get("--sessions-dir")
    config = given.get("--config")
    cfg = load_config(config_path=Path(config) if config else None, env=os.environ,
                      cwd=Path.cwd(), overrides=ConfigOverrides(
                          sessions_dir=Path(sessions_dir) if sessions_dir else None))
    if cfg.trust_notice:  # a warning to show: the ordinary way shows it
        return None
    _, model = summary_names(cfg, os.environ)
    data = _read(cfg.session.dir / f"{ref}.md")
    # the answer as it was written (``Compacted.as_json``), checked: no summary is rebuilt
    hit = CompactCache(cfg.session.dir).result(file_key(data, model))
    if hit is None or hit["session"] != ref or hit["method"] != "file":
        return None
    return json.dumps(hit, indent=2, ensure_ascii=False) + "\n"


def _read(path: Path) -> bytes:
    """A regular file's bytes, its last component not followed (as the store reads it)."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0))
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
            raise ValueError(f"{path} is not a regular file")
        return f.read()
