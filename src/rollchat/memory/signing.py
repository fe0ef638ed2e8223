"""The mark of rollchat's own writes to a facts file: an HMAC-SHA256 of each record under a key
kept owner-only in the user's memory directory. A line without it (or with a wrong one) was
added outside rollchat: listed, and never sent to the model until the user reviews it."""

# The signature covers the record's fields (sorted JSON, the signature left out) and the kind of
# store it was written to ("project" or "user"), so a project fact copied by hand into the user's
# file (which goes into every request's profile) is caught too. Someone who can read the key can
# sign: the key guards against files that arrive with a checkout, a download or a sync of a
# facts file, not against a process running as the user.

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
from pathlib import Path

from rollchat.memory.records import Stored, record_data
from rollchat.storage.session_file import NOFOLLOW

KEY_FILE = "signing.key"
KEY_BYTES = 32
SIG_HEX = 32  # characters of the hex digest kept in a line


class SigningError(OSError):
    """The key cannot be read or made."""


class Signer:
    """Signs and checks fact records with the key in ``directory`` (made there, owner-only,
    at the first signature when there is none)."""

    def __init__(self, directory: Path) -> None:
        self.path = directory / KEY_FILE
        self._key: bytes | None = None

    def _load(self, create: bool) -> bytes | None:
        if self._key is not None:
            return self._key
        try:
            fd = os.open(self.path, os.O_RDONLY | NOFOLLOW)
        except FileNotFoundError:
            if not create:
                return None
            return self._make()
        with os.fdopen(fd, "rb") as f:
            key = f.read(KEY_BYTES + 1)
        if len(key) != KEY_BYTES:
            raise SigningError(f"{self.path} is not a memory key ({len(key)} bytes): delete it "
                               "and review the facts it signed")
        self._key = key
        return key

    def _make(self) -> bytes:
        private_dirs(self.path.parent)
        key = secrets.token_bytes(KEY_BYTES)
        try:
            fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | NOFOLLOW, 0o600)
        except FileExistsError:  # another process made it first: theirs
            self._key = None
            found = self._load(False)
            assert found is not None
            return found
        try:
            os.write(fd, key)
            os.fsync(fd)
        finally:
            os.close(fd)
        self._key = key
        return key

    def sign(self, stored: Stored, scope: str) -> str:
        """The signature of ``stored`` written to a store of kind ``scope``."""
        key = self._load(True)
        assert key is not None
        return _digest(key, stored, scope)

    def signed(self, stored: Stored, scope: str) -> Stored:
        from dataclasses import replace

        return replace(stored, sig=self.sign(stored, scope))

    def verify(self, stored: Stored, scope: str) -> bool:
        """Whether rollchat wrote ``stored`` into a store of kind ``scope``."""
        if stored.sig is None:
            return False
        try:
            key = self._load(False)
        except OSError:
            return False
        return key is not None and hmac.compare_digest(stored.sig, _digest(key, stored, scope))


def private_dirs(folder: Path) -> None:
    """Make ``folder`` and every missing folder above it readable by the owner only (mkdir's
    ``parents`` would give those above the default mode: other users could list the names of
    the projects)."""
    missing = [f for f in (folder, *folder.parents) if not f.exists()]
    for level in reversed(missing):
        level.mkdir(mode=0o700, exist_ok=True)


def _digest(key: bytes, stored: Stored, scope: str) -> str:
    payload = json.dumps([scope, record_data(stored)], sort_keys=True, ensure_ascii=False)
    return hmac.new(key, payload.encode("utf-8"), hashlib.sha256).hexdigest()[:SIG_HEX]
