"""Text normalized once where it enters rollchat (stdin, the prompt, model replies, tool results,
session files): valid Unicode that a file stores as it is. What a terminal is *shown* is
ui.sanitize's job; engine.hygiene fixes the message list, not its text."""

# - Bytes are decoded as UTF-8; invalid sequences become U+FFFD (``clean_bytes``).
# - A lone surrogate (``surrogateescape`` residue, a half pair in JSON) becomes U+FFFD; a high and
#   a low surrogate standing next to each other are joined into the character they encode.
# - C0 controls other than tab and newline, and DEL, become their Unicode control pictures
#   (U+2400-U+2421: NUL is "␀", ESC is "␛"): visible, one character each, never structure in
#   the markdown file, and never a terminal command. A CR right before a newline is dropped
#   (``\r\n`` is a line end); a lone CR becomes "␍".
# ``clean`` keeps the line structure (it never adds or removes a newline), so it is safe on a
# rendered session file too, and it is idempotent.

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

REPLACEMENT = "\ufffd"
_DEL_PICTURE = "\u2421"
# Everything clean changes: a CR (before a newline or not), other C0 controls except tab and
# newline, DEL, and surrogates.
_ODD = re.compile(r"\r\n?|[\x00-\x08\x0b-\x0c\x0e-\x1f\x7f]|[\ud800-\udfff]+")
_SURROGATE = re.compile(r"[\ud800-\udfff]")
# The UTF-8 bytes clean never changes: all but the C0 controls (tab and newline excepted) and DEL.
_PLAIN_BYTES = b"\t\n" + bytes(range(0x20, 0x7F)) + bytes(range(0x80, 0x100))
# From this length on, ``clean`` checks at C speed (encoded, control bytes deleted) whether
# there is anything to change before it runs the regex over the text
_CHECKED_CHARS = 4096


def _picture(char: str) -> str:
    code = ord(char)
    return _DEL_PICTURE if code == 0x7F else chr(0x2400 + code)


def _fix(match: re.Match[str]) -> str:
    odd = match[0]
    if odd == "\r\n":
        return "\n"
    if not _SURROGATE.match(odd):
        return _picture(odd)
    # A run of surrogates: join the valid pairs, replace the rest (one U+FFFD each).
    return odd.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


# What ``_fix`` makes of each control character (a CR before a newline aside)
_PICTURES = {code: _picture(chr(code)) for code in [*range(0x09), 0x0B, *range(0x0C, 0x20), 0x7F]}


def clean(text: str) -> str:
    """``text`` normalized (see the top of this module); unchanged when already clean."""
    if len(text) >= _CHECKED_CHARS:  # a tool's 35 MB of output: 0.85 s of regex, 0.05 s here
        try:
            if not text.encode("utf-8").translate(None, _PLAIN_BYTES):
                return text  # no control byte, no surrogate: nothing to change
        except UnicodeEncodeError:  # a surrogate: the regex joins or replaces it
            return _ODD.sub(_fix, text)
        # controls but no surrogate: the regex's changes at C speed (an import of 1 MB of
        # control bytes called _fix two million times: 5 s; this takes 0.04 s)
        return text.replace("\r\n", "\n").translate(_PICTURES)
    return _ODD.sub(_fix, text)


def clean_bytes(data: bytes) -> str:
    """Bytes from outside (piped stdin, a file) as clean text; nothing raises."""
    return clean(data.decode("utf-8", "replace"))


def encode(text: str) -> bytes:
    """``text`` as a session file stores it: clean, UTF-8. Whatever a caller passes (a header
    field from an environment variable, say), a file never holds a NUL or invalid UTF-8."""
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError:  # a surrogate
        return clean(text).encode("utf-8")
    if data.translate(None, _PLAIN_BYTES):  # a control byte (checked at C speed: a rewrite
        return clean(text).encode("utf-8")  # of a 64 MB file costs no regex pass)
    return data


def clean_value(value: Any) -> Any:
    """A JSON-like value (a tool call's arguments) with every string in it cleaned, keys too."""
    if isinstance(value, str):
        return clean(value)
    if isinstance(value, Mapping):
        return {clean(str(k)): clean_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [clean_value(v) for v in value]
    return value


class StreamCleaner:
    """``clean`` for text that arrives in pieces: a CR or a high surrogate ending a piece is
    held back until the next piece says what it is (part of ``\\r\\n``, half of a pair)."""

    def __init__(self) -> None:
        self._held = ""

    def feed(self, piece: str) -> str:
        text = self._held + piece
        self._held = ""
        if text and (text[-1] == "\r" or "\ud800" <= text[-1] <= "\udbff"):
            text, self._held = text[:-1], text[-1]
        return clean(text)

    def flush(self) -> str:
        """What is held back, cleaned as a lone character (the stream ended)."""
        held, self._held = self._held, ""
        return clean(held)
