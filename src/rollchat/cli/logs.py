"""rollchat's log file: warnings that libraries raise (pydantic, the SDKs, Python itself) and
rollchat's own log records go there, never to the terminal the chat draws on."""

from __future__ import annotations

import logging
import os
from pathlib import Path

FILE_NAME = "rollchat.log"


def default_log_path() -> Path:
    import platformdirs

    return Path(platformdirs.user_log_dir("rollchat")) / FILE_NAME


class _LazyFile(logging.FileHandler):
    """A log file opened at its first record (nothing is created by a run that logs nothing),
    owner-only; a log that cannot be written drops the record instead of printing it."""

    def _open(self):  # type: ignore[no-untyped-def]
        Path(self.baseFilename).parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.baseFilename, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        return open(fd, "a", encoding=self.encoding)

    def handleError(self, record: logging.LogRecord) -> None:
        pass


def log_to_file(path: Path | None = None) -> logging.Handler:
    """Send Python warnings (``logging.captureWarnings``) and the ``rollchat`` logger's
    records to ``path`` (the user log directory by default), and nothing to stderr."""
    handler = _LazyFile(path or default_log_path(), delay=True, encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(asctime)s %(name)s %(levelname)s %(message)s"))
    logging.captureWarnings(True)
    for name in ("py.warnings", "rollchat"):
        logger = logging.getLogger(name)
        logger.addHandler(handler)
        logger.propagate = False  # never the last-resort handler, which writes to stderr
        logger.setLevel(logging.INFO)
    return handler
