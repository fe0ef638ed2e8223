"""Durability where a user meets it, with the ``os`` module of rollchat.storage.store replaced by a
recorder: a turn is fsynced before the user is told it is done; every rewrite (summary, forward
link) fsyncs its temporary file, renames it, then fsyncs the directory; a new file is linked,
then the directory fsynced; and an id collision never truncates the session already there,
with or without hard links."""

from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import Any

import pytest

import rollchat.storage.session_file
import rollchat.storage.store
from rollchat.domain import Summary, Turn, Usage, answer_blocks
from rollchat.events import Event, TurnFinished
from rollchat.storage.store import SessionStore
from rollchat.storage.transcript import parse
from tests.drive import drain
from tests.session.test_session import make


class RecordingOS:
    """``os`` as rollchat.storage.store sees it, logging (what, file name) for writes, fsyncs,
    links and
    renames, in order. ``links``: False makes every hard link fail as on a filesystem without
    them (EPERM)."""

    def __init__(self) -> None:
        self.log: list[tuple[str, str]] = []
        self.links = True
        self._names: dict[int, str] = {}

    def __getattr__(self, name: str) -> Any:
        return getattr(os, name)

    def open(self, path: Any, flags: int, mode: int = 0o777, **kw: Any) -> int:
        fd = os.open(path, flags, mode, **kw)
        self._names[fd] = Path(path).name
        return fd

    def write(self, fd: int, data: Any) -> int:
        self.log.append(("write", self._names.get(fd, "?")))
        return os.write(fd, data)

    def fsync(self, fd: int) -> None:
        self.log.append(("fsync", self._names.get(fd, "?")))
        os.fsync(fd)

    def link(self, src: Any, dst: Any) -> None:
        if not self.links:
            raise PermissionError(errno.EPERM, os.strerror(errno.EPERM))
        self.log.append(("link", f"{Path(src).name} {Path(dst).name}"))
        os.link(src, dst)

    def replace(self, src: Any, dst: Any) -> None:
        self.log.append(("replace", f"{Path(src).name} {Path(dst).name}"))
        os.replace(src, dst)


@pytest.fixture
def rec(monkeypatch: pytest.MonkeyPatch) -> RecordingOS:
    proxy = RecordingOS()
    monkeypatch.setattr(rollchat.storage.store, "os", proxy)
    monkeypatch.setattr(rollchat.storage.session_file, "os", proxy)  # appends and header totals
    return proxy


def test_turns_rewrites_and_new_files_are_fsynced_in_order(tmp_path: Path,
                                                           rec: RecordingOS) -> None:
    root = tmp_path / "sessions"
    core, _, _ = make(store=SessionStore(root))

    def told(event: Event) -> None:
        if isinstance(event, TurnFinished) and event.turn.kind == "query":
            rec.log.append(("told", core.state.live.file_name if core.state.live else "?"))

    drain(core.turn("we decided to use redis for the cache"), told)
    drain(core.turn("TODO: write tests for cache.py"), told)
    parent = core.state.live.file_name if core.state.live else ""
    drain(core.compact(), told)
    drain(core.turn("and what about the port?"), told)  # the child's file; the parent linked
    child = core.state.live.file_name if core.state.live else ""
    drain(core.exit(), told)
    log = rec.log

    # each turn: written to its session file and fsynced, with no write after, before "done"
    # (a file's first turn is in the file as it is made: a temporary file, fsynced, linked)
    tolds = [i for i, e in enumerate(log) if e[0] == "told"]
    assert [log[i][1] for i in tolds] == [parent, parent, child]
    for i in tolds:
        name = log[i][1]
        made = [k for k in range(i) if log[k][0] == "link" and log[k][1].endswith(f" {name}")]
        last_write = max(k for k in range(i) if log[k] == ("write", name) or k in made)
        assert ("fsync", name) in log[last_write:i] or (
            last_write in made and log[last_write + 1] == ("fsync", "sessions"))

    # new files: the complete temporary file is fsynced, hard-linked, then the directory
    links = [i for i, e in enumerate(log) if e[0] == "link"]
    assert [log[i][1].split()[1] for i in links] == [parent, child]
    for i in links:
        tmp = log[i][1].split()[0]
        assert log[i - 1] == ("fsync", tmp) and log[i + 1] == ("fsync", "sessions")

    # rewrites: the parent's summary, its link to the child, the child's summary
    renames = [i for i, e in enumerate(log) if e[0] == "replace"]
    assert [log[i][1].split()[1] for i in renames] == [parent, parent, child]
    for i in renames:
        tmp = log[i][1].split()[0]
        assert tmp.startswith(".") and ".tmp-" in tmp
        assert log[i - 1] == ("fsync", tmp) and log[i + 1] == ("fsync", "sessions")
    files = {p.name: parse(p.read_text()) for p in root.glob("*.md")}
    assert files[parent].header.continued_in == (child.removesuffix(".md"),)
    assert files[child].summary is not None


@pytest.mark.parametrize("links", [False, True], ids=["no-hard-links", "hard-links"])
def test_an_id_collision_never_truncates_the_session_there(
        tmp_path: Path, rec: RecordingOS, monkeypatch: pytest.MonkeyPatch, links: bool) -> None:
    root = tmp_path / "sessions"
    store = SessionStore(root)
    t0 = make()[0].state.started
    old = store.new_session(agent_key="assistant", agent="Assistant",
                            agent_path="config:assistant", model="offline", provider="offline",
                            now=t0)
    old.append_turn(Turn("query", 1, t0, "the old question", answer_blocks("the old answer"),
                         usage=Usage(3, 4)), "Assistant")
    store.finalize(old.session_id, Summary("Initial session.", ("old",), (), ()),
                   total_queries=1, total_tokens=7)
    old.close()
    before = (root / old.file_name).read_bytes()
    fresh = f"{old.session_id[:-4]}beef" if not old.session_id.endswith("beef") else "x_1_2_3"
    # the new session is offered the taken id first
    monkeypatch.setattr(rollchat.storage.store, "new_ids", lambda key, now: [old.session_id, fresh])
    rec.links = links
    core, _, _ = make(store=store)
    drain(core.turn("a new question"))
    assert core.state.session_id == fresh
    assert (root / old.file_name).read_bytes() == before
    assert [t.user for t in parse((root / f"{fresh}.md").read_text()).turns] == ["a new question"]
    assert not [p for p in root.iterdir() if ".tmp-" in p.name]
