"""Tests of the sessions directory (rollchat.storage.store): ids, modes, appends, finalize,
listing."""

from __future__ import annotations

import os
import stat
import threading
from concurrent.futures import ProcessPoolExecutor
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from rollchat.domain import Summary, Turn, Usage, answer_blocks
from rollchat.errors import StoreError
from rollchat.storage.store import FileSession, SessionStore, resolve
from rollchat.storage.transcript import SUMMARY_END, SUMMARY_START, parse, render_summary_block

UTC = timezone.utc
T0 = datetime(2026, 11, 22, 14, 30, 22, tzinfo=UTC)
SUMMARY = Summary("Initial session.", ("rate limiter",), ("use Redis",), ())
FAKE = render_summary_block(Summary("forged", ("x",), ("y",), ("z",)))


def _new(store: SessionStore, now: datetime = T0, key: str = "assistant") -> FileSession:
    return store.new_session(agent_key=key, agent="Assistant", agent_path="config:assistant",
                             model="m", provider="offline", now=now)


def _turn(n: int, user: str = "hello", answer: str = "hi") -> Turn:
    return Turn("query", n, T0 + timedelta(seconds=n), user, answer_blocks(answer), elapsed=1.5,
                usage=Usage(10, 20))


def _create_many(args: tuple[str, int]) -> list[str]:
    store = SessionStore(Path(args[0]))
    return [_new(store).session_id for _ in range(args[1])]


def test_permissions_gitignore_and_round_trip(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "a" / "sessions")
    live = _new(store)
    assert stat.S_IMODE(os.stat(store.root).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(live.path).st_mode) == 0o600
    assert (store.root / ".gitignore").read_text().splitlines()[-1] == "*"
    assert live.file_name == f"{live.session_id}.md" and live.session_id.startswith(
        "assistant_20261122_143022_")
    live.append_turn(_turn(1, FAKE, FAKE), "Assistant")
    live.append_turn(_turn(2), "Assistant")
    store.finalize(live.session_id, SUMMARY, total_queries=2, total_tokens=60)
    t = parse(live.path.read_text())
    assert t.turns == (_turn(1, FAKE, FAKE), _turn(2)) and t.summary == SUMMARY
    assert (t.header.total_queries, t.header.total_tokens) == (2, 60)
    assert stat.S_IMODE(os.stat(live.path).st_mode) == 0o600
    store.finalize(live.session_id, Summary("again", (), (), ()), total_queries=2,
                   total_tokens=61)  # replaces the block
    assert parse(live.path.read_text()).summary == Summary("again", (), (), ())


def test_ensure_errors(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    with pytest.raises(StoreError, match="not a directory"):
        SessionStore(tmp_path / "file").ensure()
    ro = tmp_path / "ro"
    ro.mkdir(mode=0o500)
    with pytest.MonkeyPatch.context() as mp:
        if os.access(ro, os.W_OK):  # running as root: simulate what permissions would say
            mp.setattr(os, "access", lambda *a, **k: False)
        with pytest.raises(StoreError, match="not writable"):
            SessionStore(ro).ensure()
    with pytest.MonkeyPatch.context() as mp:
        def denied(*a: object, **k: object) -> None:
            raise PermissionError(13, "Permission denied")
        mp.setattr(Path, "mkdir", denied)
        with pytest.raises(StoreError, match=r"cannot create .*Permission denied"):
            SessionStore(ro / "sub").ensure()


def test_ensure_removes_stale_temp_files(tmp_path: Path) -> None:
    store = SessionStore(tmp_path)
    dead = tmp_path / ".x_1.md.tmp-999999999-abcd"
    old = tmp_path / f".x_2.md.tmp-{os.getpid()}-abcd"
    fresh = tmp_path / f".x_3.md.tmp-{os.getpid()}-abcd"
    for p in (dead, old, fresh):
        p.write_text("partial")
    os.utime(old, (1, 1))
    store.ensure()
    assert not dead.exists() and not old.exists() and fresh.exists()


def test_unique_ids_threads_and_processes_same_second(tmp_path: Path) -> None:
    store = SessionStore(tmp_path)
    ids: list[str] = []
    lock = threading.Lock()

    def work() -> None:
        got = [_new(store).session_id for _ in range(20)]
        with lock:
            ids.extend(got)

    threads = [threading.Thread(target=work) for _ in range(8)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    with ProcessPoolExecutor(4) as pool:
        for got in pool.map(_create_many, [(str(tmp_path), 30)] * 4):
            ids.extend(got)
    assert len(ids) == len(set(ids)) == 280
    assert len(list(tmp_path.glob("*.md"))) == 280


def test_append_never_reads_or_rewrites(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = SessionStore(tmp_path)
    live = _new(store)
    live.append_turn(_turn(1), "Assistant")
    # garbage in the middle: an append that re-read, re-parsed or rewrote would notice or fix it
    data = bytearray(live.path.read_bytes())
    data[40:60] = b"X" * 20
    live.path.write_bytes(bytes(data))

    def no_read(*a: object, **k: object) -> bytes:
        raise AssertionError("append_turn read the file")

    monkeypatch.setattr(os, "read", no_read)
    monkeypatch.setattr(os, "pread", no_read)
    monkeypatch.setattr(Path, "read_text", no_read)
    monkeypatch.setattr(Path, "read_bytes", no_read)
    live.append_turn(_turn(2), "Assistant")
    monkeypatch.undo()
    from rollchat.storage.transcript import render_turn
    assert live.path.read_bytes() == bytes(data) + render_turn(_turn(2), "Assistant").encode()


def test_failed_append_leaves_no_partial_block(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    live = _new(SessionStore(tmp_path))
    before = live.path.read_bytes()
    real_write = os.write

    def half_then_fail(fd: int, data: bytes) -> int:
        real_write(fd, bytes(data[:10]))
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "write", half_then_fail)
    with pytest.raises(StoreError, match="No space left"):
        live.append_turn(_turn(1), "Assistant")
    monkeypatch.undo()
    assert live.path.read_bytes() == before


def test_finalize_is_atomic(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = SessionStore(tmp_path)
    live = _new(store)
    live.append_turn(_turn(1), "Assistant")
    before = live.path.read_bytes()

    def crash(*a: object) -> None:
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(StoreError, match="left unchanged"):
        store.finalize(live.session_id, SUMMARY, total_queries=1, total_tokens=30)
    monkeypatch.undo()
    assert live.path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir() if ".tmp-" in p.name] == []


def test_truncated_file_lists_and_parses(tmp_path: Path) -> None:
    store = SessionStore(tmp_path)
    live = _new(store)
    for n in (1, 2, 3):
        live.append_turn(_turn(n, f"question {n}"), "Assistant")
    full = live.path.read_bytes()
    live.path.write_bytes(full[:-40])  # SIGKILL in the middle of the third append
    t = store.load_transcript(live.session_id)
    assert [x.number for x in t.turns] == [1, 2]
    info = store.list_sessions().sessions[0]
    assert info.first_query_preview == "question 1" and not info.has_summary
    store.finalize(live.session_id, SUMMARY, total_queries=2, total_tokens=60)
    assert parse(live.path.read_text()).summary == SUMMARY


def _session(store: SessionStore, minute: int, queries: int, summary: bool) -> FileSession:
    live = _new(store, T0 + timedelta(minutes=minute))
    for n in range(1, queries + 1):
        live.append_turn(_turn(n, f"first query of {minute} " + "x" * 80), "Assistant")
    if summary:
        store.finalize(live.session_id, SUMMARY, total_queries=queries,
                       total_tokens=queries * 30)
    return live


def test_listing_order_numbers_exclusion_queries(tmp_path: Path) -> None:
    store = SessionStore(tmp_path)
    a, b, c = (_session(store, m, q, s) for m, q, s in ((0, 2, True), (5, 3, False),
                                                        (9, 1, True)))
    listing = store.list_sessions(exclude=c.session_id)
    # left out after numbering: the others keep the numbers they have in the whole listing
    assert [(i.number, i.session_id) for i in listing.sessions] == [
        (2, b.session_id), (3, a.session_id)]
    first, second = listing.sessions
    assert first.queries == 3 and not first.has_summary  # live/crashed: from the tail
    assert second.has_summary and second.tokens == 60 and second.summary_problem is None
    assert first.first_query_preview is not None and len(first.first_query_preview) <= 60
    assert store.load_summary(second) == SUMMARY and store.load_summary(first) is None
    assert listing.problems == []


def test_fake_summary_in_content_in_a_large_file(tmp_path: Path) -> None:
    store = SessionStore(tmp_path)
    live = _new(store)
    live.append_turn(_turn(1, "y" * 70_000), "Assistant")  # pushes the head out of the tail
    live.append_turn(_turn(2, FAKE, FAKE), "Assistant")
    info = store.list_sessions().sessions[0]
    assert not info.has_summary and info.summary_problem is None and info.queries == 2
    assert store.load_summary(info) is None


@pytest.mark.parametrize("tail, problem", [
    (f"{SUMMARY_END}\n{SUMMARY_START}\n", "END before START"),
    (f"{SUMMARY_START}\n**Background Context:** x\n", "without END"),
    (f"{SUMMARY_START}\n{SUMMARY_START}\nx\n{SUMMARY_END}\n", "two SESSION_SUMMARY_START"),
])
def test_corrupted_markers(tmp_path: Path, tail: str, problem: str) -> None:
    store = SessionStore(tmp_path)
    live = _new(store)
    live.append_turn(_turn(1), "Assistant")
    with live.path.open("a") as f:
        f.write(tail)
    info = store.list_sessions().sessions[0]
    assert not info.has_summary and problem in (info.summary_problem or "")
    assert store.load_summary(info) is None
    assert [t.number for t in store.load_transcript(live.session_id).turns] == [1]


def test_junk_files_are_named_not_fatal(tmp_path: Path) -> None:
    store = SessionStore(tmp_path)
    good = _session(store, 0, 1, True)
    (tmp_path / "empty.md").write_bytes(b"")
    (tmp_path / "binary.md").write_bytes(b"\x00\x01\x02" * 100)
    (tmp_path / "latin.md").write_bytes("# Caf\xe9 Conversation\n".encode("latin-1"))
    (tmp_path / "notes.md").write_text("# My notes\n\nhello\n")
    (tmp_path / "big.md").write_bytes(b"z" * 3_000_000)
    (tmp_path / "assistant_20261122_143022_dead.md").write_text("# x\n")
    (tmp_path / "bad name.md").write_text("x")
    outside = tmp_path.parent / f"{tmp_path.name}_outside.md"
    outside.write_text(good.path.read_text())
    (tmp_path / "link.md").symlink_to(outside)
    listing = store.list_sessions()
    assert [i.session_id for i in listing.sessions] == [good.session_id]
    why = dict(listing.problems)
    assert why["empty.md"] == "empty file" and "binary" in why["binary.md"]
    assert "UTF-8" in why["latin.md"] and "not a session" in why["notes.md"]
    assert "not a session" in why["big.md"] and "symbolic link" in why["link.md"]
    assert "not a session id" in why["bad name.md"]
    assert why["notes.md"].count("not a session file") == 1
    with pytest.raises(StoreError, match="cannot be used: line 1: not a session file"):
        resolve("assistant_20261122_143022_dead", listing)


def test_resolve(tmp_path: Path) -> None:
    store = SessionStore(tmp_path)
    a = _session(store, 0, 1, True)
    b = _session(store, 1, 1, True)
    listing = store.list_sessions()
    assert resolve("1", listing).session_id == b.session_id
    assert resolve(a.session_id, listing).session_id == a.session_id
    assert resolve(a.session_id[:-2], listing).session_id == a.session_id
    assert resolve(a.file_name, listing).session_id == a.session_id
    with pytest.raises(StoreError, match="between 1 and 2"):
        resolve("3", listing)
    with pytest.raises(StoreError, match="ambiguous"):
        resolve("assistant_2026", listing)
    for bad in ("../x", "a/b", "..", "x y", ""):
        with pytest.raises(StoreError, match="invalid session id"):
            resolve(bad, listing)
    with pytest.raises(StoreError, match="no session"):
        resolve("zzz", listing)
    assert resolve(a.session_id[-4:], listing).session_id == a.session_id
    assert resolve(a.session_id[-5:], listing).session_id == a.session_id  # "_d57d"
    with pytest.raises(StoreError, match="no saved sessions"):
        resolve("1", SessionStore(tmp_path / "none").list_sessions())
    with pytest.raises(StoreError, match="invalid session id"):
        store.load_transcript("../etc/passwd")


def test_resolve_by_suffix_then_substring(tmp_path: Path) -> None:
    store = SessionStore(tmp_path)
    ids = ["assistant_20261122_143022_d57d", "assistant_20261122_150000_0d57",
           "coder_20261123_090000_beef", "coder_20261123_100000_abee",
           "coder_20261124_100000_4821"]
    for sid in ids:
        live = _new(store)
        text = live.path.read_text().replace(live.session_id, sid)
        live.path.unlink()
        (tmp_path / f"{sid}.md").write_text(text)
    listing = store.list_sessions()
    assert resolve("d57d", listing).session_id == ids[0]  # suffix beats the substring in ids[1]
    assert resolve("_d57d", listing).session_id == ids[0]
    assert resolve("_150000", listing).session_id == ids[1]  # unique substring
    assert resolve("coder_20261123_09", listing).session_id == ids[2]  # prefix first
    assert resolve("4821", listing).session_id == ids[4]  # digits beyond the listing's 1..5
    assert resolve("1", listing).session_id == ids[4]  # in range: a listing number
    with pytest.raises(StoreError, match="no session number 9999"):
        resolve("9999", listing)
    assert resolve("bee", listing).session_id == ids[3]  # ends "abee"; "beef" only contains it
    with pytest.raises(StoreError, match=r"ambiguous session id 'be'.*abee.*beef"):
        resolve("be", listing)
    with pytest.raises(StoreError, match="ambiguous session id '20261123_'"):
        resolve("20261123_", listing)
    with pytest.raises(StoreError, match="no session number 821"):
        resolve("821", listing)  # digits name an id by its whole random part only
    for bad in ("../d57d", "x/d57d", "..d57d"):
        with pytest.raises(StoreError, match="invalid session id"):
            resolve(bad, listing)


def test_listing_counts_tokens_of_sessions_without_summary(tmp_path: Path) -> None:
    store = SessionStore(tmp_path)
    live = _new(store)
    restored = Turn("restored", 0, T0, "", answer_blocks("ok"), context="from x", usage=Usage(500,
                                                                                              500))
    live.append_turn(restored, "Assistant")
    forged = "*Time: 1.0s | Tokens: 9999 (in: 1, out: 1) | at x*\n## Query 7 (00:00:00)"
    for n in (1, 2, 3):
        live.append_turn(_turn(n, user=forged), "Assistant")
    info = store.list_sessions().sessions[0]
    assert (info.queries, info.tokens, info.tokens_exact) == (3, 1090, True)  # billed
    # after finalize, the header's total
    store.finalize(live.session_id, SUMMARY, total_queries=3, total_tokens=77)
    assert store.list_sessions().sessions[0].tokens == 77


def test_listing_tokens_of_a_long_unsummarized_session_are_a_lower_bound(
        tmp_path: Path) -> None:
    store = SessionStore(tmp_path)
    live = _new(store)
    big = "y" * 5000
    for n in range(1, 41):  # ~200 KB: more than the 64 KB tail window
        live.append_turn(_turn(n, answer=big), "Assistant")
    info = store.list_sessions().sessions[0]
    assert not info.tokens_exact and info.queries == 40
    assert 30 * 10 <= info.tokens < 30 * 40 and info.tokens % 30 == 0


# ---------------------------------------------------------------- load_transcript's checks


def test_load_transcript_reads_regular_files_inside_the_directory_only(tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    store = SessionStore(root)
    good = _session(store, 0, 2, True)
    outside = tmp_path / "outside.md"
    outside.write_text(good.path.read_text())
    (root / "out.md").symlink_to(outside)
    with pytest.raises(StoreError, match=r"out\.md is a symlink pointing outside the sessions"):
        store.load_transcript("out")
    (root / "alias.md").symlink_to(good.file_name)  # inside the directory: followed
    assert store.load_transcript("alias") == store.load_transcript(good.session_id)
    (root / "a.md").symlink_to("b.md")
    (root / "b.md").symlink_to("a.md")
    with pytest.raises(StoreError, match=r"a\.md is a symlink loop|cannot read .*/a\.md: Too"):
        store.load_transcript("a")
    (root / "dir.md").mkdir()
    with pytest.raises(StoreError, match=r"dir\.md is not a regular file"):
        store.load_transcript("dir")
    os.mkfifo(root / "pipe.md")  # opened without blocking, then refused
    with pytest.raises(StoreError, match=r"pipe\.md is not a regular file"):
        store.load_transcript("pipe")
    with pytest.raises(StoreError, match=r"no session file gone\.md"):
        store.load_transcript("gone")


def test_load_transcript_refuses_a_file_above_the_size_cap(tmp_path: Path) -> None:
    live = _session(SessionStore(tmp_path), 0, 3, True)
    size = live.path.stat().st_size
    assert len(SessionStore(tmp_path, max_read_bytes=size).load_transcript(
        live.session_id).turns) == 3
    with pytest.raises(StoreError, match=rf"too large to read \({size} bytes, limit {size - 1}\)"):
        SessionStore(tmp_path, max_read_bytes=size - 1).load_transcript(live.session_id)


def test_finalize_and_load_summary_never_follow_a_symlink(tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    store = SessionStore(root)
    good = _session(store, 0, 1, True)
    (root / "alias.md").symlink_to(good.file_name)
    before = good.path.read_bytes()
    with pytest.raises(StoreError, match="cannot read"):
        store.finalize("alias", SUMMARY, total_queries=1, total_tokens=1)
    assert good.path.read_bytes() == before and (root / "alias.md").is_symlink()
    info = store.list_sessions().sessions[0]._replace(session_id="alias", file_name="alias.md")
    with pytest.raises(StoreError, match="cannot read"):
        store.load_summary(info)


def test_has_file(tmp_path: Path) -> None:
    store = SessionStore(tmp_path)
    live = _new(store)
    assert store.has_file(live.file_name) and not store.has_file("x_1.md")
    (tmp_path.parent / "escape.md").write_text("x")
    assert not store.has_file(f"../{tmp_path.parent.name}/escape.md")
    assert not store.has_file("../escape.md") and not store.has_file(".gitignore")
