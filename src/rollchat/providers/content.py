"""What a message carries beside its text, for the wire: images as base64, and the text an
image becomes where it cannot be sent (no bytes in memory, or a provider without images)."""

from __future__ import annotations

import base64
from collections.abc import Sequence
from dataclasses import replace

from rollchat.domain import Image, Message


def b64(image: Image) -> str:
    """The image's bytes as base64 (``image.data`` must be set: see ``sendable``)."""
    return base64.b64encode(image.data or b"").decode("ascii")


def standin(media_type: str, size: int, why: str) -> str:
    """The text an image is replaced by where it cannot be shown."""
    return f"[image: {media_type}, {size:,} bytes, not shown: {why}]"


def sendable(message: Message, images: bool) -> Message:
    """``message`` with the images that cannot be sent turned into text lines after its
    content: all of them when the provider takes no images (``images`` False), else those
    whose bytes are not in memory. Deterministic, so a request rebuilt is the same."""
    if not message.images:
        return message
    keep = tuple(i for i in message.images if images and i.data is not None)
    if len(keep) == len(message.images):
        return message
    why = "its file could not be read" if images else "this model does not take images"
    lines = [standin(i.media_type, i.size, why) for i in message.images
             if not (images and i.data is not None)]
    content = "\n".join([message.content, *lines] if message.content else lines)
    return replace(message, content=content, images=keep)


def all_sendable(messages: Sequence[Message], images: bool) -> list[Message]:
    return [sendable(m, images) for m in messages]
