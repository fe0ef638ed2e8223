"""``rollchat memory edit``: the facts file in $EDITOR, checked on save and merged by id with
what other processes wrote meanwhile. No terminal here: the caller runs the editor."""

# ``rollchat memory edit``: the facts file in $EDITOR, checked on save, and merged by id with
# what other processes wrote meanwhile (a fact they changed that you did not keeps their change;
# a line you delete is forgotten, so it is not extracted again, unless it holds a secret: that
# line goes). A fact that looks like a secret is refused on save. No terminal here: the caller
# runs the editor and asks what to do about a file that does not check out.

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from rollchat.memory.layers import local_now
from rollchat.memory.records import Stored, check_facts_file, fact_line, parse_fact
from rollchat.memory.sensitive import secret_in
from rollchat.memory.store import MemoryStore, MemoryStoreError


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
        for ident, (line, stored) in edited.items():
            if ident in before and before[ident][1] == stored and ident in current:
                lines.append(current[ident][0])  # untouched here: theirs, as it is now
            elif ident not in before and ident in current:
                raise MemoryStoreError(f"fact id {ident} was added by another process while "
                                       "you edited; give yours another id")
            else:
                lines.append(line)
        forgotten = removed = 0
        for ident in before:
            if ident not in edited and ident in current:
                old = current[ident][1]
                if secret_in(old.fact.text) is not None:  # a tombstone would keep it
                    removed += 1
                    continue
                lines.append(fact_line(old if old.forgotten else
                                       replace(old, forgotten=local_now().replace(microsecond=0))))
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
