"""Files the user attaches to a message (``attach PATH``): an image is sent as an image (the
rules of storage/images.py: a kind the providers read, scaled down to their limits), a text
file as its text after the message, in a fence that names it; anything else is refused with
the reason."""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from rollchat.domain import Image
from rollchat.errors import UsageError
from rollchat.providers.image_fit import MAX_SOURCE_BYTES
from rollchat.storage.images import fitted_image, sniff

MAX_TEXT_CHARS = 200_000  # a text attachment's most characters (about 50k tokens)


@dataclass(frozen=True)
class Attachment:
    """One attached file: ``name`` as the user gave it, and its image or its text."""

    name: str
    image: Image | None = None
    text: str | None = None
    note: str = ""  # an image scaled down to fit: says so

    def describe(self) -> str:
        if self.image is not None:
            scaled = f"; {self.note}" if self.note else ""
            return f"{self.name} ({self.image.media_type}, {self.image.size:,} bytes{scaled})"
        return f"{self.name} ({len(self.text or ''):,} characters of text)"


def read_attachment(name: str, cwd: Path) -> Attachment:
    """The file ``name`` (relative to ``cwd``, ``~`` expanded) as an attachment; UsageError,
    saying why, when it cannot be one."""
    path = (cwd / Path(name).expanduser()).resolve()
    if path.is_dir():
        raise UsageError(f"attach: {name} is a folder; attach a file")
    limit = max(MAX_SOURCE_BYTES, MAX_TEXT_CHARS * 4) + 1
    try:
        with open(path, "rb") as f:
            data = f.read(limit)
    except FileNotFoundError:
        raise UsageError(f"attach: no such file: {name}") from None
    except OSError as e:
        raise UsageError(f"attach: cannot read {name}: {e.strerror or e}") from None
    if sniff(data) is not None:
        if len(data) > MAX_SOURCE_BYTES:
            raise UsageError(f"attach: {name} is an image of {os.path.getsize(path):,} bytes, "
                             f"over the {MAX_SOURCE_BYTES // 2**20} MB rollchat scales down")
        made, note = fitted_image(data)
        if isinstance(made, str):
            raise UsageError(f"attach: {name}: {made.strip('[]')}")
        return Attachment(name, image=made, note=note)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise UsageError(f"attach: {name} is neither UTF-8 text nor an image the model reads "
                         "(png, jpeg, gif, webp)") from None
    if len(data) == limit or len(text) > MAX_TEXT_CHARS:
        size = os.path.getsize(path)
        raise UsageError(f"attach: {name} is {size:,} bytes of text, over the "
                         f"{MAX_TEXT_CHARS:,} characters an attachment may hold; attach a part")
    return Attachment(name, text=text)


def message_with(text: str, attachments: Sequence[Attachment]) -> tuple[str, tuple[Image, ...]]:
    """The message to send: ``text`` followed by each attached text file in a fence that names
    it (longer than any backtick run inside), and the attached images."""
    parts = [text] if text else []
    for a in attachments:
        if a.text is None:
            continue
        longest = max((len(run) for run in re.findall("`+", a.text)), default=0)
        fence = "`" * max(3, longest + 1)
        parts.append(f"[attached file {a.name}]\n{fence}\n{a.text.rstrip(chr(10))}\n{fence}")
    images = tuple(a.image for a in attachments if a.image is not None)
    return "\n\n".join(parts), images

