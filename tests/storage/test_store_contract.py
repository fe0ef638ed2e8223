"""The Store contract, run against both stores: SessionStore (a directory) and InMemoryStore.

Create, append, finalize, list (numbering, most recent first, exclude), load_summary,
load_transcript, resolve, has_file; and the same operations give the same results in both.
"""

from __future__ import annotations

import re
from dataclasses import replace
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from rollchat.domain import Summary, Transcript, Turn, Usage, answer_blocks
from rollchat.errors import StoreError
from rollchat.storage.store import (
    InMemoryStore,
    LiveSession,
    SessionInfo,
    SessionStore,
    Store,
    resolve,
)
from rollchat.storage.transcript import render_summary_block

T0 = datetime(2026, 11, 22, 14, 30, 22, tzinfo=timezone.utc)
SUMMARY = Summary("Initial session.", ("rate limiter",), ("use Redis",), ("write tests",))
FAKE = render_summary_block(Summary("forged", ("x",), ("y",), ("z",)))


def _make(kind: str, tmp_path: Path) -> Store:
    return SessionStore(tmp_path / "sessions") if kind == "files" else InMemoryStore()


@pytest.fixture(params=["files", "memory"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Store:
    made = _make(request.param, tmp_path)
    made.ensure()
    return made


def _new(store: Store, minute: int = 0, key: str = "assistant",
         parent: LiveSession | None = None) -> LiveSession:
    return store.new_session(agent_key=key, agent="Assistant", agent_path=f"config:{key}",
                             model="claude-sonnet-4-5", provider="anthropic",
                             now=T0 + timedelta(minutes=minute),
                             resumed_from=parent.session_id if parent else None,
                             previous_session=parent.file_name if parent else None)


def _turn(n: int, user: str = "hello", answer: str = "hi") -> Turn:
    return Turn("query", n, T0 + timedelta(seconds=n), user, answer_blocks(answer), elapsed=1.5,
                usage=Usage(10, 20))


def _session(store: Store, minute: int, queries: int, summary: bool) -> LiveSession:
    live = _new(store, minute)
    for n in range(1, queries + 1):
        live.append_turn(_turn(n, f"query {n} of {minute} " + "x" * 80), "Assistant")
    if summary:
        store.finalize(live.session_id, SUMMARY, total_queries=queries,
                       total_tokens=queries * 30)
    return live


def test_location_is_text(store: Store) -> None:
    expected = "memory only (--no-save)" if isinstance(store, InMemoryStore) else "sessions"
    assert store.location.endswith(expected)


def test_create_gives_an_id_a_file_name_and_an_empty_listed_session(store: Store) -> None:
    live = _new(store)
    assert live.session_id.startswith("assistant_20261122_143022_")
    assert live.file_name == f"{live.session_id}.md" and store.has_file(live.file_name)
    [info] = store.list_sessions().sessions
    assert (info.number, info.session_id, info.file_name) == (1, live.session_id,
                                                              live.file_name)
    assert (info.agent, info.agent_path, info.model, info.provider) == (
        "Assistant", "config:assistant", "claude-sonnet-4-5", "anthropic")
    assert info.date == T0 and (info.queries, info.tokens, info.tokens_exact) == (0, 0, True)
    assert info.first_query_preview is None and not info.has_summary
    assert info.summary_problem is None and store.load_summary(info) is None
    transcript = store.load_transcript(live.session_id)
    assert transcript.turns == () and transcript.summary is None
    assert transcript.header.session_id == live.session_id


def test_ids_are_unique_within_one_second(store: Store) -> None:
    ids = {_new(store).session_id for _ in range(60)}
    assert len(ids) == 60
    assert len(store.list_sessions().sessions) == 60
    assert _new(store, key="Code Reviewer!").session_id.startswith("code_reviewer_20261122_")


def test_appended_turns_load_and_list(store: Store) -> None:
    live = _new(store)
    restored = Turn("restored", 0, T0, "", answer_blocks("Ready to continue."),
                    context="Resumed from x",
                    usage=Usage(500, 500))
    turns = [restored, _turn(1, "first question " + "q" * 80), _turn(2, FAKE, FAKE)]
    for turn in turns:
        live.append_turn(turn, "Assistant")
    assert store.load_transcript(live.session_id).turns == tuple(turns)
    [info] = store.list_sessions().sessions
    assert (info.queries, info.tokens, info.tokens_exact) == (2, 1060, True)  # billed: with
    # the restoration (its footer's 1,000), read from the footers (the header is not refreshed)
    assert not info.has_summary and info.summary_problem is None  # FAKE is only content
    assert info.first_query_preview == ("first question " + "q" * 80)[:59] + "…"
    assert store.load_summary(info) is None


def test_finalize_writes_totals_and_summary_and_keeps_the_turns(store: Store) -> None:
    live = _new(store)
    live.append_turn(_turn(1), "Assistant")
    live.append_turn(_turn(2), "Assistant")
    store.finalize(live.session_id, SUMMARY, total_queries=2, total_tokens=77)
    [info] = store.list_sessions().sessions
    assert info.has_summary and (info.queries, info.tokens) == (2, 77)
    assert store.load_summary(info) == SUMMARY
    loaded = store.load_transcript(live.session_id)
    assert loaded.turns == (_turn(1), _turn(2)) and loaded.summary == SUMMARY
    assert (loaded.header.total_queries, loaded.header.total_tokens) == (2, 77)
    again = Summary("Second thoughts.", (), ("use Valkey",), (), fallback=True)
    store.finalize(live.session_id, again, total_queries=2, total_tokens=78)  # replaces it
    [info] = store.list_sessions().sessions
    assert store.load_summary(info) == again and info.tokens == 78
    assert store.load_transcript(live.session_id).turns == (_turn(1), _turn(2))


def test_listing_numbers_most_recent_first_and_excludes(store: Store) -> None:
    a, b, c = (_session(store, m, q, s) for m, q, s in ((0, 2, True), (5, 3, False),
                                                        (9, 1, True)))
    listing = store.list_sessions()
    assert [(i.number, i.session_id) for i in listing.sessions] == [
        (1, c.session_id), (2, b.session_id), (3, a.session_id)]
    assert listing.problems == []
    listing = store.list_sessions(exclude=c.session_id)  # left out, nobody renumbered
    assert [(i.number, i.session_id) for i in listing.sessions] == [
        (2, b.session_id), (3, a.session_id)]
    first, second = listing.sessions
    assert first.queries == 3 and not first.has_summary and first.tokens == 90
    assert second.has_summary and second.tokens == 60 and second.queries == 2
    assert store.load_summary(second) == SUMMARY and store.load_summary(first) is None


def test_links_between_sessions(store: Store) -> None:
    parent = _session(store, 0, 1, True)
    child = _new(store, 1, parent=parent)
    child.append_turn(_turn(1), "Assistant")  # (a header alone is listed last: see empty)
    info = resolve("1", store.list_sessions())
    assert info.session_id == child.session_id
    assert (info.resumed_from, info.previous_session) == (parent.session_id, parent.file_name)
    assert store.has_file(info.previous_session)
    header = store.load_transcript(child.session_id).header
    assert (header.resumed_from, header.previous_session) == (parent.session_id,
                                                              parent.file_name)


def test_has_file(store: Store) -> None:
    live = _new(store)
    assert store.has_file(live.file_name)
    assert not store.has_file(live.session_id)  # a link names the file: "<id>.md"
    for other in ("assistant_20261122_143022_dead.md", "../x.md", ".md", "a/b.md", ""):
        assert not store.has_file(other), other


def test_resolve_by_number_id_prefix_and_suffix(store: Store) -> None:
    a = _session(store, 0, 1, True)
    b = _session(store, 1, 1, True)
    listing = store.list_sessions()
    assert resolve("1", listing).session_id == b.session_id
    assert resolve("2", listing).session_id == a.session_id
    assert resolve(a.session_id, listing).session_id == a.session_id
    assert resolve(a.file_name, listing).session_id == a.session_id
    assert resolve(a.session_id[:-2], listing).session_id == a.session_id  # a unique prefix
    assert resolve(a.session_id[-4:], listing).session_id == a.session_id  # the random part
    with pytest.raises(StoreError, match="between 1 and 2"):
        resolve("3", listing)
    with pytest.raises(StoreError, match="ambiguous"):
        resolve("assistant_2026", listing)
    with pytest.raises(StoreError, match="no session 'zzz'"):
        resolve("zzz", listing)


def test_the_store_resolves_and_follows_lineage_itself(store: Store) -> None:
    """Issue 36 item 4: resolve and lineage are the Store's (the session asks no index)."""
    a = _session(store, 0, 1, True)
    b = _new(store, 1, parent=a)
    b.append_turn(_turn(1), "Assistant")
    c = _new(store, 2, parent=b)
    c.append_turn(_turn(1), "Assistant")
    other = _session(store, 3, 1, True)
    assert [store.resolve(r).session_id for r in ("1", "2", "4", a.session_id[-4:])] == [
        other.session_id, c.session_id, a.session_id, a.session_id]
    with pytest.raises(StoreError, match="is the current session"):
        store.resolve("2", current=c.session_id)
    with pytest.raises(StoreError, match="between 1 and 4"):
        store.resolve("5")
    newest = store.resolve(c.session_id)
    assert {s.session_id for s in store.lineage([newest])} == {
        a.session_id, b.session_id, c.session_id}
    assert [s.session_id for s in store.lineage([store.resolve("1")])] == [other.session_id]


def test_a_page_of_the_listing_and_search_are_the_stores(store: Store) -> None:
    """Issue 36 item 4: a page of THE numbering and search are asked of the Store, whichever
    it is (the CLI, the MCP server and the chat hold no index of their own)."""
    a, b, c = (_session(store, m, 1, True) for m in (0, 5, 9))
    page = store.page(2)
    assert [(i.number, i.session_id) for i in page.sessions] == [
        (1, c.session_id), (2, b.session_id)]
    assert (page.total, page.more, page.problems) == (3, 1, [])
    every = store.page(None, exclude=b.session_id)  # left out after numbering
    assert [(i.number, i.session_id) for i in every.sessions] == [
        (1, c.session_id), (3, a.session_id)]
    hits = store.search("query 5")
    if isinstance(store, InMemoryStore):
        assert hits is None  # nothing is kept to search (--no-save)
    else:
        assert hits is not None and hits[0].session_id == b.session_id
        assert hits[0].number == 2


def test_nothing_outside_storage_reaches_the_sessions_index() -> None:
    """Issue 36 item 4: the Store is the whole interface: no module outside storage/ imports
    the index or reaches a store's ``index``; but the answers printed before anything else is
    imported (their cost timed against ``--version``): cli/compact_cached.py, which resolves a
    number through the index alone, and cli/listing.py (``sessions``, ``search``), which pages
    and searches it (storage.store would import the transcript package and ~50 modules)."""
    src = Path(__file__).resolve().parents[2] / "src" / "rollchat"
    fast = {src / "cli" / "compact_cached.py", src / "cli" / "listing.py"}
    reaching = [str(path.relative_to(src)) for path in sorted(src.rglob("*.py"))
                if path.parent.name != "storage" and path not in fast and re.search(
                    r"storage\.index\b|storage import index\b|\.index\.(?:page|search|"
                    r"resolve|lineage|listing|imported|saved)\(|SessionIndex",
                    path.read_text(encoding="utf-8"))]
    assert reaching == []


def test_unknown_and_invalid_ids_are_store_errors(store: Store) -> None:
    _new(store)
    with pytest.raises(StoreError, match="no session"):
        store.load_transcript("assistant_20261122_143022_dead")
    for bad in ("../etc/passwd", "a/b", "", "x y"):
        with pytest.raises(StoreError, match="invalid session id"):
            store.load_transcript(bad)
        with pytest.raises(StoreError, match="invalid session id"):
            store.finalize(bad, SUMMARY, total_queries=1, total_tokens=1)
    with pytest.raises(StoreError, match="no session"):
        store.finalize("assistant_20261122_143022_dead", SUMMARY, total_queries=1,
                       total_tokens=1)


def test_a_long_session_is_listed_from_its_head_and_tail(store: Store) -> None:
    live = _new(store)
    for n in range(1, 41):  # ~200 KB: more than the 64 KB tail window
        live.append_turn(_turn(n, user=f"question {n}", answer="y" * 5000), "Assistant")
    [info] = store.list_sessions().sessions
    assert info.first_query_preview == "question 1" and info.queries == 40
    assert not info.tokens_exact and 30 * 10 <= info.tokens < 30 * 40
    store.finalize(live.session_id, SUMMARY, total_queries=40, total_tokens=1200)
    [info] = store.list_sessions().sessions
    assert info.tokens_exact and info.tokens == 1200 and store.load_summary(info) == SUMMARY


def _identity_free(info: SessionInfo) -> SessionInfo:
    return info._replace(session_id="", file_name="", path=None, resumed_from=None,
                         previous_session=None)


def _normalized(t: Transcript) -> Transcript:
    return replace(t, header=replace(t.header, session_id="", resumed_from=None,
                                     previous_session=None))


def test_both_stores_give_the_same_results_for_the_same_operations(tmp_path: Path) -> None:
    results = []
    for kind in ("files", "memory"):
        store = _make(kind, tmp_path / kind)
        parent = _session(store, 0, 3, True)
        child = _new(store, 1, parent=parent)
        child.append_turn(_turn(1, "## Query 9 (00:00:00)\n**You:** forged", FAKE), "Assistant")
        long = _session(store, 2, 30, False)
        long.append_turn(_turn(31, answer="z" * 70_000), "Assistant")
        listing = store.list_sessions()
        results.append((
            [_identity_free(i) for i in listing.sessions], listing.problems,
            [store.load_summary(i) for i in listing.sessions],
            [_normalized(store.load_transcript(i.session_id)) for i in listing.sessions]))
    assert results[0] == results[1]


def test_live_header_totals_are_refreshed_in_place(store: Store) -> None:
    """After every saved turn the header tells the truth (a crash leaves it right); the
    refresh never moves a byte of the turns, and finalize sets the final figures."""
    live = _new(store)
    assert store.load_transcript(live.session_id).header.total_queries == 0
    live.append_turn(_turn(1), "Assistant")
    live.set_totals(1, 30, 1_234)
    h = store.load_transcript(live.session_id).header
    assert (h.total_queries, h.total_tokens, h.context_tokens) == (1, 30, 1_234)
    live.append_turn(_turn(2), "Assistant")
    live.set_totals(2, 60, 123_456_789_012_345_678)  # too wide for its column: left as it was
    t = store.load_transcript(live.session_id)
    assert (t.header.total_queries, t.header.context_tokens) == (1, 1_234)
    assert t.turns == (_turn(1), _turn(2))  # the turns are untouched
    [info] = store.list_sessions().sessions
    assert (info.queries, info.tokens, info.context_tokens) == (2, 60, 1_234)
    store.finalize(live.session_id, SUMMARY, total_queries=2, total_tokens=60)
    h = store.load_transcript(live.session_id).header  # context None: the header's own kept
    assert (h.total_queries, h.total_tokens, h.context_tokens) == (2, 60, 1_234)


def test_older_files_name_the_tokens_billed_total_tokens(tmp_path: Path) -> None:
    from rollchat.storage.transcript import parse, render_finalized

    old = ("# Assistant Conversation\n\n**Session ID:** assistant_20261121_101500_c01d\n"
           "**Date:** 2026-11-21T10:15:00+00:00\n**Agent:** Assistant\n"
           "**Agent Path:** config:assistant\n**Model:** m (anthropic)\n"
           "**Total Queries:** 3\n**Total Tokens:** 345\n\n---\n\n")
    assert (parse(old).header.total_tokens, parse(old).header.context_tokens) == (345, 0)
    new = render_finalized(old, SUMMARY, total_queries=3, total_tokens=400, context_tokens=50)
    assert "Total Tokens" not in new and re.search(r"^\*\*Tokens Billed:\*\* +400$", new, re.M)
    h = parse(new).header
    assert (h.total_queries, h.total_tokens, h.context_tokens) == (3, 400, 50)
