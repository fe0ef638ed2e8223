"""What a message carries beside its text, for the wire: images as base64, and the text an
image becomes where it cannot be sent (no bytes in memory, or a provider without images)."""

from __future__ import annotations

import base64
import functools
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


def all_sendable(messages: Sequence[Message], images: bool,
                 provider: str = "") -> list[Message]:
    """Each message ``sendable``, then within ``provider``'s limits per request (see
    providers/image_fit.py): beyond its count the oldest images become text lines; with more
    than MANY_IMAGES (Anthropic), each is scaled to MANY_SIDE pixels at most."""
    out = [sendable(m, images) for m in messages]
    total = sum(len(m.images) for m in out)
    if not total:
        return out
    from rollchat.providers.image_fit import MANY_IMAGES, MANY_SIDE, MAX_IMAGES

    over = total - MAX_IMAGES.get(provider, total)
    many = provider == "anthropic" and total - max(over, 0) > MANY_IMAGES
    if over <= 0 and not many:
        return out
    fitted: list[Message] = []
    for message in out:
        keep, lines = [], []
        for i in message.images:
            if over > 0:
                over -= 1
                lines.append(standin(i.media_type, i.size, "over the "
                                     f"{MAX_IMAGES[provider]} images a request may hold"))
            else:
                keep.append(_within(i, MANY_SIDE) if many else i)
        parts = [message.content, *lines] if message.content else lines
        content = "\n".join(parts) if lines else message.content
        fitted.append(replace(message, images=tuple(keep), content=content))
    return fitted


@functools.lru_cache(maxsize=256)
def _within(image: Image, side: int) -> Image:
    """``image`` at most ``side`` pixels on either side (the same image when it is)."""
    from rollchat.providers.image_fit import fit

    made = fit(image.data or b"", image.media_type, max_side=side)
    if isinstance(made, str) or made.data == image.data:
        return image
    return replace(image, media_type=made.media_type, size=len(made.data), data=made.data)
