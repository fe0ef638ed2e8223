"""rollchat's own error types: every failure a user can cause or meet ends up as one of these."""

from __future__ import annotations


class RollchatError(Exception):
    """Base class: its message is shown to the user as is, on one line where possible."""


class ConfigError(RollchatError):
    """A configuration problem (file, key, value, flag). The CLI exits 2 on it."""


class UsageError(RollchatError):
    """A command-line or in-chat usage mistake."""


class TranscriptError(RollchatError):
    """A session file that cannot be parsed."""


class StoreError(RollchatError):
    """The sessions directory cannot be read or written (missing, read-only, disk full ...)."""
