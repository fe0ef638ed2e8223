"""The one sanitizer for text on its way to the terminal: anything from a file, a config, a
server or the model passes ``harmless`` before it is drawn, so it cannot move the cursor,
clear the screen, set the window title or the clipboard, or reorder what a line shows.

It changes only what is drawn, never what is stored (that is ``rollchat.text.normalize``).
"""

from __future__ import annotations

import re

# C0 controls except tab and newline, DEL, C1 controls (0x9b is a CSI on some terminals),
# the bidirectional embeddings, overrides, isolates and marks (LRM, RLM, ALM: a "Trojan
# Source" line reads in an order other than the one it is stored in), and lone surrogates
# (unprintable in UTF-8).
_UNSAFE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e"
                     r"\u2066-\u2069\ud800-\udfff]")
_CARRIAGE_RETURN = re.compile(r"\r\n?")
_SURROGATES = (0xD800, 0xDFFF)
_DRAWN_AS_IS = b"\t\n" + bytes(range(0x20, 0x7F))  # the ASCII neither pattern matches


def _visible(match: re.Match[str]) -> str:
    code = ord(match[0])
    if code < 0x20 or code == 0x7F:
        return f"^{chr((code + 64) % 128)}"  # caret notation: ESC is ^[, DEL is ^?
    if code <= 0x9F:
        return f"\\x{code:02x}"
    if _SURROGATES[0] <= code <= _SURROGATES[1]:
        return "\ufffd"
    return f"<U+{code:04X}>"


def harmless(text: str) -> str:
    """Make control characters visible instead of letting the terminal interpret them.

    Line ends from other systems (``\\r\\n``, a lone ``\\r``) become plain newlines first.
    """
    if text.isascii() and not text.encode("ascii").translate(None, _DRAWN_AS_IS):
        return text  # nothing to change, checked at C speed (35 MB of a tool: 0.19 s of regex)
    return _UNSAFE.sub(_visible, _CARRIAGE_RETURN.sub("\n", text))


def one_line(text: str) -> str:
    """``harmless`` for a value shown inside a line (a file name, an id, a header field): a
    newline in it is shown as ``\\n`` instead of breaking the line."""
    return harmless(text).replace("\n", "\\n")
