"""The providers' limits on an image, and an image scaled down (with Pillow) to fit them when it
does not: only an image that cannot be read, or cannot be made to fit, is refused."""

# The limits, per provider, and where they come from:
# - Anthropic (docs.anthropic.com, "Vision": image size limits; the API's own check): the
#   base64 text of one image at most 5 MB (the file's bytes grow by 4/3 in base64, so a 4.5 MB
#   PNG is refused: anthropics/claude-code constants/apiLimits.ts,
#   ``API_IMAGE_MAX_BASE64_SIZE = 5 * 1024 * 1024``, "This is the base64 length, NOT raw
#   bytes"); at most 8000x8000 px; when a request holds more than 20 images, at most
#   2000x2000 px each ("At least one of the image dimensions exceed max allowed size for
#   many-image requests: 2000 pixels", anomalyco/opencode#12068, coder/mux#1699); at most 100
#   images per request.
# - OpenAI (platform.openai.com/docs/guides/images-vision, "Image input requirements"): PNG,
#   JPEG, WEBP, non-animated GIF; up to 50 MB total payload per request and up to 500 images
#   per request; the model scales larger images down itself (fit in 2048x2048, then 768 px on
#   the short side), so nothing larger is worth sending. The per-image limits below are
#   Anthropic's, the stricter: an image saved once is sent to whichever model comes next.

from __future__ import annotations

import io
import math
from dataclasses import dataclass
from typing import Any

MAX_BASE64_BYTES = 5 * 1024 * 1024  # Anthropic: the base64 text of one image
MAX_SIDE = 8000  # Anthropic: pixels on either side
MANY_IMAGES = 20  # Anthropic: above this many images in a request ...
MANY_SIDE = 2000  # ... each at most this many pixels on either side
MAX_IMAGES = {"anthropic": 100, "openai": 500}  # images per request
MAX_SOURCE_BYTES = 64 * 1024 * 1024  # the largest file read to be scaled down
_FORMATS = {"image/png": "PNG", "image/jpeg": "JPEG", "image/gif": "PNG", "image/webp": "WEBP"}
_OPTIONS: dict[str, dict[str, Any]] = {"JPEG": {"quality": 85, "optimize": True},
                                       "PNG": {"optimize": True}, "WEBP": {"quality": 85}}
_TRIES = 8  # scale-downs before giving up on a size (each aims under the limit)


def base64_size(size: int) -> int:
    """The length of the base64 text of ``size`` bytes (padded)."""
    return 4 * math.ceil(size / 3)


@dataclass(frozen=True)
class Fitted:
    """An image that fits: its bytes, its kind and the one line saying it was scaled ("" when
    it was sent as it came)."""

    data: bytes
    media_type: str
    note: str = ""


def fits(size: int, width: int, height: int, max_side: int = MAX_SIDE) -> bool:
    return base64_size(size) <= MAX_BASE64_BYTES and max(width, height) <= max_side


def fit(data: bytes, media_type: str, max_side: int = MAX_SIDE) -> Fitted | str:
    """``data`` (an image of ``media_type``) within the limits: as it is when it fits, else
    scaled down (same kind; a GIF becomes a PNG of its first frame) until its base64 text and
    its sides fit. The reason, as text, when it cannot be read or made to fit."""
    from PIL import Image as Pillow  # ~30 ms: only when an image comes
    from PIL import UnidentifiedImageError

    try:
        with Pillow.open(io.BytesIO(data)) as opened:
            width, height = opened.size
            if fits(len(data), width, height, max_side):
                return Fitted(data, media_type)
            opened.load()
            picture = opened.copy()
    except Pillow.DecompressionBombError:
        return "too many pixels to read safely"
    except (UnidentifiedImageError, OSError, ValueError, SyntaxError):
        # Pillow refuses what viewers and the providers read (a bad checksum in an ancillary
        # chunk, as in the MCP reference server's tiny PNG): sent as it came when its size
        # fits, refused only when it would need scaling
        if base64_size(len(data)) <= MAX_BASE64_BYTES:
            return Fitted(data, media_type)
        return "cannot be read as an image (damaged, or not what its first bytes say)"
    kind = "image/png" if media_type == "image/gif" else media_type
    scale = min(1.0, max_side / max(width, height))
    for _ in range(_TRIES):
        size = (max(1, int(width * scale)), max(1, int(height * scale)))
        out = _encode(picture.resize(size, Pillow.Resampling.LANCZOS), kind)
        if fits(len(out), *size, max_side):
            return Fitted(out, kind, f"scaled from {width}x{height} ({_mb(len(data))}) to "
                                     f"{size[0]}x{size[1]} ({_mb(len(out))}) to fit the "
                                     "model's image limits")
        scale *= 0.9 * math.sqrt(MAX_BASE64_BYTES / base64_size(len(out)))
    return f"cannot be scaled under the {MAX_BASE64_BYTES // 2**20} MB a model takes"


def _encode(picture: object, media_type: str) -> bytes:
    from PIL import Image as Pillow

    assert isinstance(picture, Pillow.Image)
    fmt = _FORMATS.get(media_type, "PNG")
    if fmt == "JPEG" and picture.mode not in ("RGB", "L"):
        picture = picture.convert("RGB")
    buffer = io.BytesIO()
    options: dict[str, Any] = _OPTIONS[fmt]
    picture.save(buffer, format=fmt, **options)
    return buffer.getvalue()


def _mb(size: int) -> str:
    return f"{size / 2**20:.1f} MB"
