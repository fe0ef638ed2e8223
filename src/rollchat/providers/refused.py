"""Parameters a server refused for a model ("unsupported parameter"), remembered per server and
model in the user data directory beside the learned windows (``refused_params.json``), so a
later run does not pay the refused request again (providers/fitting.py sends without them)."""

# What a run reads from the file is read once per server and model, at its first request: a
# refusal another rollchat process learns meanwhile never changes this run's requests (their
# parameters stay as they began until this run is refused itself). The file is small JSON,
# rewritten through a temporary file and a rename under a lock file, as windows.json is.

from __future__ import annotations

import contextlib
import json
import logging
import os
import tempfile
import threading
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path

from rollchat.text.wording import redact_url

log = logging.getLogger(__name__)
FILE_NAME = "refused_params.json"
VERSION = 1


def default_path() -> Path:
    """``<user data dir>/rollchat/refused_params.json`` (where windows.json is)."""
    import platformdirs

    return Path(platformdirs.user_data_dir("rollchat")) / FILE_NAME


def _key(server: str | None, model: str) -> str:
    """One entry per server and model; credentials in the URL never reach the file."""
    return f"{redact_url(server) if server else 'default'} {model}"


class Refused:
    """The parameters refused per server and model: those of the file (read once per key) and
    those refused in this run. ``where`` gives the file (None: kept in memory only); it is asked
    at each read and write, so a test's own data directory is the one used."""

    def __init__(self, where: Callable[[], Path | None] = default_path) -> None:
        self._where = where
        self._lock = threading.Lock()
        self._by_key: dict[str, set[str]] = {}

    def of(self, model: str, server: str | None = None) -> frozenset[str]:
        """What ``model`` at ``server`` refused: the file's at the first ask, this run's since."""
        key = _key(server, model)
        with self._lock:
            if key not in self._by_key:
                self._by_key[key] = set(self._entries().get(key, {}).get("params", ()))
            return frozenset(self._by_key[key])

    def add(self, model: str, name: str, server: str | None = None) -> None:
        """Remember that ``model`` at ``server`` refused ``name``: for this run, and in the file
        (a file that cannot be written only costs the next run one refused request)."""
        self.of(model, server)
        key = _key(server, model)
        with self._lock:
            self._by_key[key].add(name)
            params = sorted(self._by_key[key])
        try:
            self._save(key, model, server, params)
        except OSError as exc:
            log.warning("could not remember that %s refused %r: %s", model, name, exc)

    def clear(self) -> None:
        """Forget what this run knows (the file stays): the next ask reads it again."""
        with self._lock:
            self._by_key.clear()

    def _entries(self) -> dict[str, dict[str, list[str]]]:
        path = self._where()
        if path is None:
            return {}
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}  # missing or unreadable: nothing remembered (it is rewritten whole)
        models = data.get("models") if isinstance(data, dict) else None
        if not isinstance(models, dict):
            return {}
        return {k: {"params": [p for p in v["params"] if isinstance(p, str)]}
                for k, v in models.items()
                if isinstance(v, dict) and isinstance(v.get("params"), list)}

    def _save(self, key: str, model: str, server: str | None, params: list[str]) -> None:
        path = self._where()
        if path is None:
            return
        from filelock import FileLock, Timeout

        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        try:
            with FileLock(f"{path}.lock", timeout=10, mode=0o600):
                _write(path, key, model, server, params)
        except Timeout:
            raise OSError(f"{path} is locked by another process") from None


def _write(path: Path, key: str, model: str, server: str | None, params: list[str]) -> None:
    """The file with ``key``'s entry set to ``params`` (what another process added to that
    entry meanwhile is kept too), written atomically."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        data = {}
    models = data.get("models") if isinstance(data, dict) else None
    models = models if isinstance(models, dict) else {}
    known = models.get(key, {}).get("params", []) if isinstance(models.get(key), dict) else []
    models[key] = {"model": model, "base_url": redact_url(server) if server else None,
                   "params": sorted({*params, *(p for p in known if isinstance(p, str))}),
                   "learned": datetime.now(timezone.utc).isoformat(timespec="seconds")}
    text = json.dumps({"version": VERSION, "models": models}, indent=1, sort_keys=True)
    fd, temp = tempfile.mkstemp(prefix=".refused-", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text + "\n")
            out.flush()
            os.fsync(out.fileno())
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise


REFUSED = Refused()  # shared by every provider object of the process
