"""Retention that never deletes silently: ``rollchat prune --older-than 30d`` lists the sessions
not written for that long and deletes them only when the user says yes (or ``-y``)."""

# A session's age is the time since its file was last written (its mtime: a session resumed
# yesterday is young, whenever it began; a copy that did not keep the times is young too).
# Sessions open in another process and files that are not sessions are never touched. A child
# keeps its parent's summary in its own file, so pruning a parent loses no context.

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

from rollchat.errors import StoreError, UsageError
from rollchat.storage.listing import SessionInfo
from rollchat.storage.locks import SessionBusyError
from rollchat.storage.store import SessionStore

_DURATION = re.compile(r"([0-9]{1,5})([hdw])")
_UNITS = {"h": ("hour", timedelta(hours=1)), "d": ("day", timedelta(days=1)),
          "w": ("week", timedelta(weeks=1))}


def parse_duration(text: str) -> tuple[timedelta, str]:
    """``30d``, ``12h``, ``2w`` -> (the duration, "30 days"); UsageError for anything else."""
    m = _DURATION.fullmatch(text.strip().lower())
    if m is None or int(m[1]) == 0:
        raise UsageError(f"--older-than {text[:40]!r} is not an age: write a whole number "
                         "above 0 and a unit, h (hours), d (days) or w (weeks), e.g. 30d")
    n, (unit, step) = int(m[1]), _UNITS[m[2]]
    return n * step, f"{n} {unit}{'' if n == 1 else 's'}"


@dataclass(frozen=True)
class OldSession:
    """A session old enough to go."""

    info: SessionInfo
    written: datetime  # when its file was last written
    written_ns: int  # the same, exactly: a file written since the listing is kept
    size: int  # bytes
    busy: bool  # open in another rollchat process: never deleted
    children: tuple[str, ...]  # sessions that stay and continue it (they keep its summary)


def old_sessions(store: SessionStore, older_than: timedelta,
               now: datetime | None = None) -> list[OldSession]:
    """The sessions last written ``older_than`` ago or earlier, oldest first."""
    now = now or datetime.now(timezone.utc)
    listing = store.list_sessions()
    old: list[tuple[SessionInfo, datetime, int, int]] = []
    for info in listing.sessions:
        try:
            st = os.stat(store.path_for(info.session_id), follow_symlinks=False)
        except OSError:
            continue  # gone meanwhile
        written = datetime.fromtimestamp(st.st_mtime, timezone.utc).astimezone()
        if now - written >= older_than:
            old.append((info, written, st.st_mtime_ns, st.st_size))
    going = {info.session_id for info, *_ in old}
    out = []
    for info, written, written_ns, size in sorted(old, key=lambda c: (c[1], c[0].session_id)):
        children = tuple(s.session_id for s in listing.sessions
                         if s.resumed_from == info.session_id and s.session_id not in going)
        out.append(OldSession(info, written, written_ns, size,
                             store.open_elsewhere(info.session_id), children))
    return out


@dataclass(frozen=True)
class Pruned:
    deleted: list[OldSession]
    skipped: list[tuple[OldSession, str]]  # (session, why it was kept)


def prune(store: SessionStore, going: list[OldSession]) -> Pruned:
    """Delete the sessions ``going`` (the busy ones are kept), each with its lock file."""
    deleted: list[OldSession] = []
    skipped: list[tuple[OldSession, str]] = []
    for c in going:
        if c.busy:
            skipped.append((c, "open in another rollchat process"))
            continue
        try:
            store.delete(c.info.session_id, written_ns=c.written_ns)
        except SessionBusyError:
            skipped.append((c, "open in another rollchat process"))
        except StoreError as exc:
            skipped.append((c, str(exc)))
        else:
            deleted.append(c)
    return Pruned(deleted, skipped)
