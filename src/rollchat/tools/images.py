"""What a tool's ``run`` may give back beside text: image bytes, an Image, or text and images
(ToolReturn); the bytes are checked (and scaled down to fit) as storage/images.py does every
image."""

from __future__ import annotations

from dataclasses import dataclass

from rollchat.domain import Image
from rollchat.storage.images import fitted_image, sniff


@dataclass(frozen=True)
class ToolReturn:
    """What a tool may return beside plain text: its text and the images it made."""

    text: str = ""
    images: tuple[Image, ...] = ()


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
        made, note = fitted_image(data)
        return (made, ()) if isinstance(made, str) else (f"[image {note}]" if note else "",
                                                         (made,))
    return str(result), ()
