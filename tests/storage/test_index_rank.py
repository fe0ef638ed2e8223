"""Search ranks the matching parts without FTS5's ``ORDER BY rank`` (which sorts every match
with its snippet: storage/index.py ``_ranked``): the same parts in the same order, equal ranks
included, and the same snippets as that query gives."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from rollchat.domain import Summary, Usage, answer_blocks
from rollchat.domain import Turn as T
from rollchat.storage.index import SessionIndex
from rollchat.storage.store import SessionStore

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=timezone.utc)
WORDS = ["redis", "bucket", "limiter", "cache", "queue", "worker"]
RANKED = ("SELECT parts.file, parts.part, docs.rowid, snippet(docs, 0, char(2), char(3), '…', "
          "16) FROM docs JOIN parts ON parts.rowid = docs.rowid WHERE docs MATCH ? ORDER BY "
          "rank LIMIT ?")


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> SessionIndex:
    """40 sessions of a few words each: many parts rank equal (the same words, the same
    length), titles and summaries among them."""
    root = tmp_path_factory.mktemp("rank") / "sessions"
    store = SessionStore(root)
    for n in range(40):
        at = T0 + timedelta(minutes=n)
        words = [WORDS[(n + k) % len(WORDS)] for k in range(n % 4 + 2)]
        live = store.new_session(agent_key="a", agent="A", agent_path="config:a", model="m",
                                 provider="offline", now=at,
                                 title=" ".join(words[:2]) if n % 3 == 0 else None)
        for k in range(1, 3):
            live.append_turn(T("query", k, at, " ".join(words), answer_blocks(
                f"{words[0]} then {' '.join(reversed(words))}."), usage=Usage(1, 1)), "A")
        live.close()
        if n % 2:
            store.finalize(live.session_id, Summary("Initial session.", (words[-1],), (), ()),
                           total_queries=2, total_tokens=4)
    return store.index


@pytest.mark.parametrize("query", ['"redis"', '"bucket" AND "limiter"', '"cache" OR "queue"',
                                   '"worker"', '"nothing"'])
@pytest.mark.parametrize("count", [1, 7, 50, 1000])
def test_the_best_parts_come_in_fts5_s_rank_order_with_its_snippets(
        index: SessionIndex, query: str, count: int) -> None:
    with index._connection() as conn:
        expected = conn.execute(RANKED, (query, count)).fetchall()
        ranks = [r[0] for r in conn.execute(
            "SELECT rank FROM docs WHERE docs MATCH ? ORDER BY rank", (query,))]
        ranked = list(index._ranked(conn, query, count))
        snippets = [index._snippet(conn, query, rowid) for _, _, rowid in ranked]
    assert ranked == [row[:3] for row in expected]
    assert snippets == [row[3] for row in expected]
    if query == '"redis"':
        assert len(ranks) - len(set(ranks)) > 10  # (equal ranks: their order is checked too)



def test_a_hit_s_number_is_its_number_in_the_listing(tmp_path: Path) -> None:
    """Numbers read from one pass over the order are the listing's (sessions of the same
    date ordered by id, an empty one last)."""
    root = tmp_path / "sessions"
    store = SessionStore(root)
    for n in range(12):
        live = store.new_session(agent_key="a", agent="A", agent_path="config:a", model="m",
                                 provider="offline", now=T0 + timedelta(hours=n % 5))
        if n != 3:  # (one left empty)
            live.append_turn(T("query", 1, T0, f"redis plan {n}", answer_blocks(
                "noted redis."), usage=Usage(1, 1)), "A")
        live.close()
    index = SessionIndex(root)
    listed = {i.file_name: i.number for i in index.page(None).sessions}
    hits = index.search("redis", 50)
    assert len(hits) == 11 and len(listed) == 12
    assert {h.file_name: h.number for h in hits} == {
        name: number for name, number in listed.items() if number != 12}
