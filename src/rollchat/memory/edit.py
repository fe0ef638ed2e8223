"""``rollchat memory edit``: the facts file in $EDITOR, checked on save and merged by id with
what other processes wrote meanwhile, and the sweep of the copies a killed edit or rewrite left
(``sweep``). No terminal here: the caller runs the editor."""

# ``rollchat memory edit``: the facts file in $EDITOR, checked on save, and merged by id with
# what other processes wrote meanwhile (a fact they changed that you did not keeps their change;
# a line you delete is forgotten, so it is not extracted again, unless it holds a secret: that
# line goes). A line you change or add is signed as rollchat's (memory/signing.py): you wrote it;
# one you leave alone keeps its signature, or its lack of one. A fact that looks like a secret
# is refused on save. No terminal here: the caller
# runs the editor and asks what to do about a file that does not check out.

from __future__ import annotations

import os
import re
import time
from collections.abc import Iterable
from dataclasses import dataclass, replace
from pathlib import Path

from rollchat.memory.layers import local_now
from rollchat.memory.records import Stored, check_facts_file, parse_fact
from rollchat.memory.sensitive import secret_in
from rollchat.memory.store import MemoryStore, MemoryStoreError

# The copies memory leaves beside its files while it works, named with the process id: the file
# being edited (``.<stem>-edit-<pid>-<random>.jsonl``, and the editor's own backup of it, e.g.
# ``...jsonl~``, ``..<name>.swp``) and the temporary file of an atomic rewrite
# (``.<name>.tmp-<pid>-<hex>``, storage.session_file). A kill leaves them behind, holding every
# fact, a secret the user was deleting included; the next start removes those whose process is
# gone (a copy without a process id, from an older rollchat, once it is a day old).
_COPY = re.compile(r"\.{1,2}[^/]*?\.(?:facts|episodes)(?:-edit-|\.jsonl\.tmp-)(?:(?P<pid>\d+)-)?")
OLD_COPY_SECONDS = 86_400.0


def edit_prefix(path: Path) -> str:
    """The name the copy of ``path`` being edited starts with (see _COPY)."""
    return f".{path.stem}-edit-{os.getpid()}-"


def _running(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's process: running
        return True
    return True


def sweep(dirs: Iterable[Path]) -> list[Path]:
    """Remove the copies (see _COPY) a killed process left in ``dirs``; the ones removed. A
    directory or a copy that cannot be read or removed is left as it is."""
    removed: list[Path] = []
    for folder in dirs:
        try:
            names = os.listdir(folder)
        except OSError:
            continue
        for name in names:
            match = _COPY.match(name)
            if match is None:
                continue
            path = folder / name
            try:
                stale = (not _running(int(match["pid"])) if match["pid"] else
                         time.time() - path.lstat().st_mtime > OLD_COPY_SECONDS)
                if stale:
                    path.unlink()
                    removed.append(path)
            except OSError:
                continue
    return removed


@dataclass(frozen=True)
class Outcome:
    changed: bool
    forgotten: int = 0  # lines deleted in the editor
    merged: int = 0  # lines other processes added meanwhile
    removed: int = 0  # lines deleted in the editor that held a secret: gone, not forgotten


def _records(text: str, scope: str) -> dict[int, tuple[str, Stored]]:
    out: dict[int, tuple[str, Stored]] = {}
    for line in text.splitlines():
        if line.strip():
            try:
                stored = parse_fact(line, scope)
            except ValueError:
                continue
            out.setdefault(stored.fact.id, (line, stored))
    return out


def check(text: str, scope: str) -> list[str]:
    """The problems of an edited facts file (``line N: what``); [] when it is good. A fact
    (not forgotten) that looks like it holds a secret is one: remembered facts are sent to
    the model in later requests and kept in a plain file."""
    problems = [(_number(p), p) for p in check_facts_file(text, scope)]
    for number, line in enumerate(text.splitlines(), 1):
        try:
            stored = parse_fact(line, scope)
        except ValueError:
            continue
        what = secret_in(stored.fact.text)
        if what is not None and stored.forgotten is None:
            problems.append((number, f"line {number}: fact {stored.fact.id} looks like it "
                                     f"holds {what}; facts are sent to the model in later "
                                     "requests and kept in a plain file: take the secret "
                                     "out (or delete the line)"))
    return [p for _, p in sorted(problems, key=lambda item: item[0])]


def _number(problem: str) -> int:
    head = problem.removeprefix("line ").partition(":")[0]
    return int(head) if head.isdigit() else 0


def save(store: MemoryStore, path: Path, scope: str, base: str, mine: str) -> Outcome:
    """Write the edited text ``mine`` (checked already) of ``path``, which held ``base`` when
    the edit began, merging what changed in the file since. MemoryStoreError on a clash."""
    if mine == base:
        return Outcome(False)
    with store.locked(path):
        try:
            theirs_text = path.read_text(encoding="utf-8") if path.exists() else ""
        except (OSError, UnicodeDecodeError) as e:
            raise MemoryStoreError(f"cannot read {path}: {e}") from None
        before, edited, current = (_records(base, scope), _records(mine, scope),
                                   _records(theirs_text, scope))
        lines: list[str] = []
        for ident, (_, stored) in edited.items():
            if ident in before and before[ident][1] == stored and ident in current:
                lines.append(current[ident][0])  # untouched here: theirs, as it is now
            elif ident not in before and ident in current:
                raise MemoryStoreError(f"fact id {ident} was added by another process while "
                                       "you edited; give yours another id")
            else:  # yours: written by rollchat on your word, so signed
                lines.append(store.line(replace(stored, sig=None), scope))
        forgotten = removed = 0
        for ident in before:
            if ident not in edited and ident in current:
                old = current[ident][1]
                if secret_in(old.fact.text) is not None:  # a tombstone would keep it
                    removed += 1
                    continue
                if not store.signer.verify(old, scope):
                    old = replace(old, fact=replace(old.fact, outside=True))
                lines.append(store.line(old if old.forgotten else
                                        replace(old, forgotten=local_now().replace(
                                            microsecond=0)), scope))
                forgotten += old.forgotten is None
        added = [line for ident, (line, _) in current.items()
                 if ident not in before and ident not in edited]
        base_lines = set(base.splitlines())
        damaged_new = [line for line in theirs_text.splitlines()
                       if line.strip() and line not in base_lines
                       and not any(line == v[0] for v in current.values())]
        lines += added + damaged_new
        data = "".join(line + "\n" for line in lines)
        store.write_text(path, data)
    return Outcome(True, forgotten, len(added), removed)
