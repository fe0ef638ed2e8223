"""``rollchat compact ID --json`` answered from its cache before typer is imported: what
scripts call often, as quick as a process can be (bench/bench_cli.py): the config recalled when
unchanged (config.recall). Anything else, or no entry, goes the ordinary way (cli/compact.py)."""

from __future__ import annotations

import json
import os
import re
import stat
import sys

# a session's whole id (a number or an id prefix needs the index: the ordinary way)
_SESSION_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
_VALUED = ("--sessions-dir", "--config")
RECORD = "config-record"  # beside the entries (not *.json: the cache's pruning leaves it)


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
    """What ``compact --json`` prints for ``ref`` when its cache holds the answer, else None:
    with the configuration recalled when nothing it was resolved from changed (no loader, no
    dataclasses, no platformdirs), else loaded."""
    from rollchat.config.recall import recall

    # where the record is when the sessions directory is not set in a config file (a guess:
    # a record is used only when its fingerprint and files match, wherever it was found)
    guess = os.path.join(os.getcwd(), os.path.expanduser(
        given.get("--sessions-dir") or os.environ.get("ROLLCHAT_SESSIONS_DIR") or "sessions"))
    values = recall(_record(guess), given)
    if values is not None and {"sessions_dir", "model"} <= values.keys():
        return _answer(values["sessions_dir"], values["model"], ref)
    return _loaded(ref, given)


def _record(sessions_dir: str) -> str:
    from rollchat.compaction.cache_entry import CACHE_DIR_PARTS

    return os.path.join(sessions_dir, *CACHE_DIR_PARTS, RECORD)


def _loaded(ref: str, given: dict[str, str]) -> str | None:
    """``_cached`` with the configuration loaded; the record written when it answered."""
    from pathlib import Path

    from rollchat.compaction.choice import summary_names
    from rollchat.config.load import load_config
    from rollchat.config.settings import Config, ConfigOverrides, default_user_config_dir

    sessions_dir, config = given.get("--sessions-dir"), given.get("--config")
    config_path, cwd, user_dir = Path(config) if config else None, Path.cwd(), \
        default_user_config_dir()
    overrides = ConfigOverrides(sessions_dir=Path(sessions_dir) if sessions_dir else None)

    def load() -> Config:
        return load_config(config_path=config_path, env=os.environ, cwd=cwd,
                           overrides=overrides, user_config_dir=user_dir)

    cfg = load()
    if cfg.warnings:  # a warning to show: the ordinary way shows it
        return None
    _, model = summary_names(cfg, os.environ)
    text = _answer(str(cfg.session.dir), model, ref)
    if text is None:
        return None
    from rollchat.config.load import looked_at
    from rollchat.config.recall import file_states, remember

    paths = looked_at(cfg, config_path=config_path, env=os.environ, cwd=cwd,
                      user_config_dir=user_dir)
    if paths is not None:
        files = file_states([str(p) for p in paths])
        # loaded again between two looks at the files: the record holds what this load read
        if load() == cfg and file_states(list(files)) == files:
            remember(_record(str(cfg.session.dir)), given, files,
                     {"sessions_dir": str(cfg.session.dir), "model": model})
    return text


def _answer(sessions_dir: str, model: str, ref: str) -> str | None:
    """The cached answer for session ``ref`` in ``sessions_dir`` (its tokens counted for
    ``model``), printed as it was written (``Compacted.as_json``): no summary is rebuilt."""
    from rollchat.compaction.cache_entry import CACHE_DIR_PARTS, file_key, read_result

    data = _read(os.path.join(sessions_dir, f"{ref}.md"))
    hit = read_result(os.path.join(sessions_dir, *CACHE_DIR_PARTS), file_key(data, model))
    if hit is None or hit["session"] != ref or hit["method"] != "file":
        return None
    return json.dumps(hit, indent=2, ensure_ascii=False) + "\n"


def _read(path: str) -> bytes:
    """A regular file's bytes, its last component not followed (as the store reads it)."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
                 | getattr(os, "O_NONBLOCK", 0))  # (a FIFO must not block: it is refused)
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
            raise ValueError(f"{path} is not a regular file")
        return f.read()
