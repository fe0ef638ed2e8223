"""Images: the bytes checked for a kind both providers read and bounded in size (else the text
line that stands in for them), and kept beside a session file: each image of a turn (a tool's,
an attached or an imported one) is saved once as ``<session id>.files/<sha256>.<ext>``,
owner-only, and the transcript refers to it; reading one back checks its name, size and
digest, so a hostile session file cannot point anywhere else."""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import secrets
import shutil
from dataclasses import replace
from pathlib import Path

from rollchat.domain import Image, ToolResult, Turn
from rollchat.errors import StoreError
from rollchat.providers.content import standin
from rollchat.providers.image_fit import MAX_SOURCE_BYTES, fit

# The largest image file read back from beside a session (images are saved fitted, within
# providers/image_fit.py's limits; sessions written before that kept files up to 5 MB)
MAX_IMAGE_BYTES = 5 * 1024 * 1024
# The kinds both providers accept, by the first bytes of the file.
_MAGIC = ((b"\x89PNG\r\n\x1a\n", "image/png"), (b"\xff\xd8\xff", "image/jpeg"),
          (b"GIF87a", "image/gif"), (b"GIF89a", "image/gif"))
MEDIA_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})
_EXT = {"image/png": "png", "image/jpeg": "jpg", "image/gif": "gif", "image/webp": "webp"}
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
_SAVED = re.compile(r"[A-Za-z0-9_.-]{1,200}\.files/([0-9a-f]{64})\.(png|jpg|gif|webp)")


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
    """An Image of ``data`` (scaled down to the providers' limits where it exceeds them), or
    the one-line text it is replaced by when it cannot be shown (see ``fitted_image``)."""
    return fitted_image(data, media_type)[0]


def fitted_image(data: bytes, media_type: str | None = None) -> tuple[Image | str, str]:
    """(an Image of ``data``, the line saying it was scaled down or "") or (the one-line text
    it is replaced by, ""): when it is not a kind the providers accept, cannot be read, or
    cannot be made to fit (providers/image_fit.py). The kind is read from the bytes; a declared
    ``media_type`` that disagrees is not trusted."""
    kind = sniff(data)
    if kind is None:
        return standin(media_type or "unknown", len(data), "not an image kind the model reads "
                       "(png, jpeg, gif, webp)"), ""
    if len(data) > MAX_SOURCE_BYTES:
        return standin(kind, len(data), f"over {MAX_SOURCE_BYTES // 2**20} MB"), ""
    made = fit(data, kind)
    if isinstance(made, str):
        return standin(kind, len(data), made), ""
    return Image(made.media_type, len(made.data), hashlib.sha256(made.data).hexdigest(),
                 data=made.data), made.note


def files_dir(root: Path, session_id: str) -> Path:
    return root / f"{session_id}.files"


def save_images(turn: Turn, root: Path, session_id: str) -> Turn:
    """``turn`` with each image whose bytes are in memory saved beside the session and its
    ``path`` set (an image already saved is written once). StoreError when one cannot be."""
    if not turn.attached and not any(isinstance(b, ToolResult) and b.images
                                     for b in turn.blocks):
        return turn

    def saved(images: tuple[Image, ...]) -> tuple[Image, ...]:
        return tuple(_save(i, root, session_id) if not i.path and i.data is not None else i
                     for i in images)

    blocks = tuple(replace(b, images=saved(b.images)) if isinstance(b, ToolResult) and b.images
                   else b for b in turn.blocks)
    return replace(turn, attached=saved(turn.attached), blocks=blocks)


def _save(image: Image, root: Path, session_id: str) -> Image:
    folder = files_dir(root, session_id)
    name = f"{image.digest}.{_EXT.get(image.media_type, 'bin')}"
    target = folder / name
    try:
        folder.mkdir(mode=0o700, exist_ok=True)
        if not target.is_file() or target.stat().st_size != image.size:
            tmp = folder / f".{name}.{secrets.token_hex(4)}.tmp"
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW, 0o600)
            try:
                view = memoryview(image.data or b"")
                while view:
                    view = view[os.write(fd, view):]
                os.fsync(fd)
            finally:
                os.close(fd)
            os.replace(tmp, target)
    except OSError as e:
        with contextlib.suppress(OSError, UnboundLocalError):
            os.unlink(tmp)
        raise StoreError(f"cannot save an image beside the session in {folder}: "
                         f"{e.strerror}") from None
    return replace(image, path=f"{folder.name}/{name}")


def load_image(root: Path, image: Image) -> Image:
    """``image`` with its bytes read back from its file beside the session; as it is (no
    bytes) when the file is missing, too large, not where images are kept, or not the image
    the transcript names (its digest differs)."""
    m = _SAVED.fullmatch(image.path)
    if image.data is not None or m is None or m[1] != image.digest:
        return image
    try:
        fd = os.open(root / image.path, os.O_RDONLY | _NOFOLLOW)
    except OSError:
        return image
    with os.fdopen(fd, "rb") as f:
        data = f.read(MAX_IMAGE_BYTES + 1)
    if len(data) > MAX_IMAGE_BYTES or hashlib.sha256(data).hexdigest() != image.digest:
        return image
    return replace(image, data=data)


def delete_images(root: Path, session_id: str) -> None:
    """Remove the images saved beside a session (it is being deleted)."""
    folder = files_dir(root, session_id)
    if folder.is_dir() and not folder.is_symlink():
        shutil.rmtree(folder, ignore_errors=True)


def with_image_data(turn: Turn, root: Path) -> Turn:
    """``turn`` (read from a session file in ``root``) with its images' bytes read back, so
    the messages rebuilt from it send them as they were sent (see ``load_image``)."""
    def loaded(images: tuple[Image, ...]) -> tuple[Image, ...]:
        return tuple(load_image(root, i) for i in images)

    blocks = tuple(replace(b, images=loaded(b.images)) if isinstance(b, ToolResult) and b.images
                   else b for b in turn.blocks)
    return replace(turn, attached=loaded(turn.attached), blocks=blocks)
