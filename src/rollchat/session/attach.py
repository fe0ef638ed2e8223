"""Files the user attaches to a message (``attach PATH``): an image is sent as an image (the
rules of storage/images.py: a kind the providers read, scaled down to their limits), a text
file as its text after the message, in a fence that names it; anything else is refused with
the reason."""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from rollchat.domain import Image
from rollchat.errors import UsageError
from rollchat.providers.image_fit import MAX_SOURCE_BYTES
from rollchat.storage.images import fitted_image, sniff

MAX_TEXT_CHARS = 200_000  # a text attachment's most characters (about 50k tokens)
MAX_BYTES = 5 * 2**20  # the most a file that is not an image may hold (read before decoding)
_KERNEL = (Path("/proc"), Path("/sys"))  # files the kernel makes up: never sent
# Asked before a file outside the project is read (the resolved path); True: read it.
OutsideCheck = Callable[[Path], bool]


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


def _size(n: int) -> str:
    """``n`` bytes for a person: "3.1 GB", "800 KB", "12 bytes"."""
    for unit, scale in (("GB", 2**30), ("MB", 2**20), ("KB", 2**10)):
        if n >= scale:
            return f"{n / scale:,.1f}".removesuffix(".0") + f" {unit}"
    return f"{n:,} bytes"


def _within(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def _kind(mode: int) -> str | None:
    """What a file that is not a regular file is, or None for a regular file."""
    if stat.S_ISDIR(mode):
        return "a folder; attach a file"
    if stat.S_ISFIFO(mode):
        return "a FIFO (a named pipe), not a file"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device, not a file"
    if stat.S_ISSOCK(mode):
        return "a socket, not a file"
    return None if stat.S_ISREG(mode) else "not a regular file"


def _link_target(named: Path, resolved: Path) -> str:
    """Where a symlink the user named points, as written in the link when it is the file
    itself (``/proc/self/environ``), else the resolved path."""
    try:
        return os.readlink(named) if named.is_symlink() else str(resolved)
    except OSError:
        return str(resolved)


def locate(name: str, project: Path, outside: OutsideCheck | None) -> Path:
    """The real path of the file ``name`` (relative to ``project``, the directory rollchat
    runs in; ``~`` expanded), symlinks resolved; UsageError, naming what the file is, when it
    cannot be attached: a symlink from inside the project to outside it, a /proc or /sys
    file, a folder, device, FIFO or socket, or a path outside the project that ``outside``
    (None: nobody to ask) did not allow."""
    named = Path(os.path.normpath(project.absolute() / Path(name).expanduser()))
    try:
        resolved = named.resolve(strict=True)
        mode = resolved.stat().st_mode
    except FileNotFoundError:
        if named.is_symlink():
            raise UsageError(f"attach: {name} is a symlink to a missing file "
                             f"({_link_target(named, named)})") from None
        raise UsageError(f"attach: no such file: {name}") from None
    except RuntimeError:
        raise UsageError(f"attach: {name} is a symlink loop") from None
    except OSError as e:
        raise UsageError(f"attach: cannot read {name}: {e.strerror or e}") from None
    inside = _within(resolved, project.resolve())
    if _within(named, Path(os.path.normpath(project.absolute()))) and not inside:
        raise UsageError(f"attach: {name} links outside the project to "
                         f"{_link_target(named, resolved)}; attach the file by its own path")
    if any(_within(resolved, k) for k in _KERNEL):
        raise UsageError(f"attach: {name} is a {resolved.parts[1]} file ({resolved}) the "
                         "kernel makes up, not a file to send")
    kind = _kind(mode)
    if kind is not None:
        raise UsageError(f"attach: {name} is {kind}")
    if not inside and (outside is None or not outside(resolved)):
        how = "not attached" if outside is not None else \
            "attaching it is asked in a terminal, never from piped input"
        raise UsageError(f"attach: {name} is outside the project ({resolved}); {how}")
    return resolved


def _read(path: Path, name: str) -> bytes:
    """The regular file ``path``, its size checked before reading: at most MAX_SOURCE_BYTES
    for an image (scaled down later), MAX_BYTES for anything else."""
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0) | \
        getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError as e:
        raise UsageError(f"attach: cannot read {name}: {e.strerror or e}") from None
    with os.fdopen(fd, "rb") as f:
        info = os.fstat(fd)
        kind = _kind(info.st_mode)  # (changed since it was looked at)
        if kind is not None:
            raise UsageError(f"attach: {name} is {kind}")
        picture = sniff(f.read(64)) is not None
        f.seek(0)
        limit = MAX_SOURCE_BYTES if picture else MAX_BYTES
        if info.st_size > limit:
            if picture:
                raise UsageError(f"attach: {name} is an image of {info.st_size:,} bytes, "
                                 f"over the {MAX_SOURCE_BYTES // 2**20} MB rollchat scales down")
            raise UsageError(f"attach: {name} is {_size(info.st_size)}, over the "
                             f"{_size(MAX_BYTES)} an attachment may be; attach a part")
        data = f.read(limit + 1)
    if len(data) > limit:  # (grew while it was read)
        raise UsageError(f"attach: {name} is over the {_size(limit)} an attachment may be; "
                         "attach a part")
    return data


def read_attachment(name: str, project: Path, outside: OutsideCheck | None = None) -> Attachment:
    """The file ``name`` (relative to ``project``, ``~`` expanded) as an attachment; UsageError,
    saying why, when it cannot be one (see ``locate``)."""
    data = _read(locate(name, project, outside), name)
    if sniff(data) is not None:
        made, note = fitted_image(data)
        if isinstance(made, str):
            raise UsageError(f"attach: {name}: {made.strip('[]')}")
        return Attachment(name, image=made, note=note)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise UsageError(f"attach: {name} is neither UTF-8 text nor an image the model reads "
                         "(png, jpeg, gif, webp)") from None
    if len(text) > MAX_TEXT_CHARS:
        raise UsageError(f"attach: {name} is {len(data):,} bytes of text, over the "
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

