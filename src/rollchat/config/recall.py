"""A resolved configuration recalled without the loader: a record of everything resolving it
read (the whole environment, working directory, options, each file read or looked for) beside
what came out, so ``compact ID --json`` (cli/compact_cached.py), ``sessions`` and ``search``
(cli/listing.py) skip the loader while unchanged; ``load_recordable`` loads it for a record."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import stat

TYPE_CHECKING = False  # (typing itself is not imported on the way to a recalled answer)
if TYPE_CHECKING:
    from rollchat.config.settings import Config

RECORD_VERSION = 1
RECORD_MAX_BYTES = 256 * 1024  # a larger record is not read (it is not one of ours)
FILE_MAX_BYTES = 16 * 1024 * 1024  # past this a file's state is "large", never recorded
NOFOLLOW = getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)


def fingerprint(options: dict[str, str]) -> str:
    """What the loader reads besides files, hashed: rollchat's version, the working directory,
    the user, the command line's options and the whole environment (only its hash is written:
    the API keys in it never are)."""
    from rollchat import __version__

    uid = os.getuid() if hasattr(os, "getuid") else None
    parts = [RECORD_VERSION, __version__, os.getcwd(), uid, sorted(options.items()),
             sorted(os.environ.items())]
    return hashlib.sha256(json.dumps(parts, ensure_ascii=True).encode()).hexdigest()


def file_state(path: str) -> str:
    """A file as the loader would find it: the SHA-256 of its bytes, "absent", "dangling" (a
    link to nothing), or why it cannot be read. Equal states mean the loader reads the same."""
    try:
        with open(path, "rb") as f:
            data = f.read(FILE_MAX_BYTES + 1)
    except FileNotFoundError:
        return "dangling" if os.path.lexists(path) else "absent"
    except OSError as exc:
        return f"unreadable {exc.errno}"
    return "large" if len(data) > FILE_MAX_BYTES else hashlib.sha256(data).hexdigest()


def file_states(paths: list[str]) -> dict[str, str]:
    return {path: file_state(path) for path in paths}


def read_regular(path: str, limit: int) -> bytes | None:
    """The bytes of the regular file at ``path`` (its last component not followed), None when
    there is none, it is something else or it is over ``limit`` bytes. Opened without
    blocking: a FIFO planted in a checkout's sessions directory must not hang a command."""
    try:
        fd = os.open(path, os.O_RDONLY | NOFOLLOW | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return None
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        raw = f.read(limit + 1)
    return raw if len(raw) <= limit else None


def recall(record_path: str, options: dict[str, str]) -> dict[str, str] | None:
    """The values in the record at ``record_path`` when everything they were resolved from is
    as it was (the same fingerprint, every file in the same state); else None."""
    raw = read_regular(record_path, RECORD_MAX_BYTES)
    try:
        record = json.loads(raw) if raw is not None else None
    except ValueError:
        return None
    if not isinstance(record, dict) or record.get("fingerprint") != fingerprint(options):
        return None
    files, values = record.get("files"), record.get("values")
    if not isinstance(files, dict) or not isinstance(values, dict) or \
            not all(isinstance(v, str) for v in (*values.values(), *files.values())):
        return None
    if any(file_state(path) != state for path, state in files.items()):
        return None
    return values


def remember(record_path: str, options: dict[str, str], files: dict[str, str],
             values: dict[str, str]) -> None:
    """Write the record beside the answers it serves (owner-only, atomically: a reader finds
    the old record or the new one); a failure is ignored, as for any cache."""
    record = {"version": RECORD_VERSION, "fingerprint": fingerprint(options), "files": files,
              "values": values}
    data = json.dumps(record, ensure_ascii=True, indent=1).encode()
    tmp = f"{record_path}.tmp-{os.getpid()}"
    with contextlib.suppress(OSError):
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | NOFOLLOW, 0o600)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.replace(tmp, record_path)
        finally:
            with contextlib.suppress(OSError):
                os.unlink(tmp)


def load_recordable(options: dict[str, str]) -> tuple[Config, dict[str, str] | None]:
    """The configuration as a command given ``options`` (``--config``, ``--sessions-dir``)
    loads it, and the states of the files its loading read or looked for (for ``remember``),
    the same before and after a second load (None: not recordable, or something changed
    meanwhile: the record would hold what this load did not read)."""
    from pathlib import Path

    from rollchat.config.load import load_config, looked_at
    from rollchat.config.settings import ConfigOverrides, default_user_config_dir

    config, sessions_dir = options.get("--config"), options.get("--sessions-dir")
    config_path, cwd, user_dir = Path(config) if config else None, Path.cwd(), \
        default_user_config_dir()
    overrides = ConfigOverrides(sessions_dir=Path(sessions_dir) if sessions_dir else None)

    def load() -> Config:
        return load_config(config_path=config_path, env=os.environ, cwd=cwd,
                           overrides=overrides, user_config_dir=user_dir)

    cfg = load()
    if cfg.warnings:
        return cfg, None
    paths = looked_at(cfg, config_path=config_path, env=os.environ, cwd=cwd,
                      user_config_dir=user_dir)
    if paths is None:
        return cfg, None
    files = file_states([str(p) for p in paths])
    # loaded again between two looks at the files: the record holds what this load read
    stable = load() == cfg and file_states(list(files)) == files
    return cfg, files if stable else None
