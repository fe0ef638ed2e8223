"""Images a tool returns: what a tool's ``run`` may give back (text, image bytes, or both), the
bytes checked for a kind both providers accept and bounded in size, and the stand-in text an
image that cannot be shown becomes."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from rollchat.domain import Image
from rollchat.providers.content import standin
from rollchat.storage.images import MAX_IMAGE_BYTES

# The kinds both providers accept, by the first bytes of the file.
_MAGIC = ((b"\x89PNG\r\n\x1a\n", "image/png"), (b"\xff\xd8\xff", "image/jpeg"),
          (b"GIF87a", "image/gif"), (b"GIF89a", "image/gif"))
MEDIA_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})


@dataclass(frozen=True)
class ToolReturn:
    """What a tool may return beside plain text: its text and the images it made."""

    text: str = ""
    images: tuple[Image, ...] = ()


def sniff(data: bytes) -> str | None:
    """The media type of image ``data`` by its first bytes, None when not one of
    ``MEDIA_TYPES``."""
    for magic, kind in _MAGIC:
        if data.startswith(magic):
            return kind
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return None


def image(data: bytes, media_type: str | None = None) -> Image | str:
    """An Image of ``data``, or the one-line text it is replaced by when it cannot be shown
    (not a kind the providers accept, or over ``MAX_IMAGE_BYTES``). The kind is read from
    the bytes; a declared ``media_type`` that disagrees is not trusted."""
    kind = sniff(data)
    if kind is None:
        return standin(media_type or "unknown", len(data), "not an image kind the model reads "
                       "(png, jpeg, gif, webp)")
    if len(data) > MAX_IMAGE_BYTES:
        return standin(kind, len(data), f"over {MAX_IMAGE_BYTES // (1024 * 1024)} MB")
    return Image(kind, len(data), hashlib.sha256(data).hexdigest(), data=data)


def returned(result: object) -> tuple[str, tuple[Image, ...]]:
    """A tool's return value as (text, images): text, image bytes, an Image, a ToolReturn;
    anything else as its ``str``. Bytes that are not an image are read as UTF-8."""
    if isinstance(result, str):
        return result, ()
    if isinstance(result, ToolReturn):
        return result.text, result.images
    if isinstance(result, Image):
        return "", (result,)
    if isinstance(result, (bytes, bytearray)):
        data = bytes(result)
        if sniff(data) is None:
            return data.decode("utf-8", errors="replace"), ()
        made = image(data)
        return (made, ()) if isinstance(made, str) else ("", (made,))
    return str(result), ()
