"""The forward link: a parent's header names the sessions that continue it (``Continued In``),
added by an atomic header rewrite when a child's file is made (compact, resume, automatic
compaction), exposed by the parser and ``sessions --json``; old files without it still parse."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from rollchat.cli.app import build_cli
from rollchat.events import Notice
from rollchat.session.core import Session
from rollchat.storage.store import InMemoryStore, SessionStore, Store
from rollchat.storage.transcript import parse, render_linked
from tests.session.test_session import make, run

README_HEADER = """# Assistant Conversation

**Session ID:** assistant_20261121_101500_c01d
**Date:** 2026-11-21T10:15:00+00:00
**Agent:** Assistant
**Agent Path:** config:assistant
**Model:** claude-sonnet-4-5 (anthropic)
**Total Queries:** 0
**Total Tokens:** 0

---

"""


def _two_turns_then_compact(store: Store) -> tuple[str, Session]:
    core, _, _ = make(store=store)
    run(core.turn("we decided to use redis for the cache"))
    run(core.turn("TODO: write tests for cache.py"))
    parent = core.state.session_id
    assert parent is not None
    run(core.compact())
    return parent, core


def test_compact_links_the_parent_once_the_child_is_saved(tmp_path: Path) -> None:
    for store in (InMemoryStore(), SessionStore(tmp_path / "sessions")):
        parent, core = _two_turns_then_compact(store)
        finalized = store.load_transcript(parent)
        assert finalized.header.continued_in == ()  # no child file yet: nothing to point to
        run(core.turn("and what about the port?"))
        child = core.state.session_id
        linked = store.load_transcript(parent)
        assert linked.header.continued_in == (child,)
        # the rest of the parent is as it was: turns, summary, totals
        assert (linked.turns, linked.summary) == (finalized.turns, finalized.summary)
        assert linked.header.total_queries == finalized.header.total_queries == 2
        [info] = [i for i in store.list_sessions().sessions if i.session_id == parent]
        assert info.continued_in == (child,) and info.has_summary


def test_automatic_compaction_links_the_parent_too() -> None:
    core, store, _ = make(window=4_000, keep_recent_turns=1)
    words = " ".join(f"word{i}" for i in range(120))
    run(core.turn("The task: migrate the billing database to postgres 16."))
    first = core.state.session_id
    while core.state.session_id == first:
        run(core.turn(f"more detail: {words}"))
    assert store.load_transcript(first or "").header.continued_in == (core.state.session_id,)


def test_a_parent_resumed_twice_names_both_children_in_the_json_listing(tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    store = SessionStore(root)
    core, _, _ = make(store=store)
    run(core.turn("we decided to use redis for the cache"))
    parent = core.state.session_id or ""
    run(core.exit())
    children = []
    for n in range(2):
        again, _, _ = make(store=store)
        run(again.resume(parent))
        run(again.turn(f"child {n} carries on"))
        children.append(again.state.session_id)
        run(again.exit())
    assert parse((root / f"{parent}.md").read_text()).header.continued_in == tuple(children)
    out = CliRunner().invoke(build_cli(), ["sessions", "--json", "--sessions-dir", str(root)])
    assert out.exit_code == 0, out.output
    listed = {s["id"]: s for s in json.loads(out.stdout)["sessions"]}
    assert listed[parent]["continued_in"] == children and listed[parent]["forked"] is False
    assert all(listed[c]["parent"] == parent and listed[c]["continued_in"] == []
               for c in children)


def test_a_link_that_cannot_be_written_is_one_warning_and_the_turn_is_saved(
        tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "sessions")
    parent, core = _two_turns_then_compact(store)
    (tmp_path / "sessions" / f"{parent}.md").unlink()
    events = run(core.turn("and what about the port?"))
    warnings = [e.text for e in events if isinstance(e, Notice) and e.level == "warning"]
    assert len(warnings) == 1
    assert warnings[0].startswith(f"the link from {parent} to this session was not written: ")
    assert f"no session file {parent}.md" in warnings[0]
    child = store.load_transcript(core.state.session_id or "")
    assert [t.user for t in child.turns if t.kind == "query"] == ["and what about the port?"]


def test_old_files_without_the_link_parse_and_get_it_in_the_header() -> None:
    old = parse(README_HEADER)
    assert old.header.continued_in == () and not old.header.forked
    once = render_linked(README_HEADER, "assistant_20261122_143022_7f3a")
    lines = once.split("\n")
    assert lines[lines.index("**Total Queries:** 0") - 1] == (
        "**Continued In:** assistant_20261122_143022_7f3a")
    assert once.replace("**Continued In:** assistant_20261122_143022_7f3a\n", "") == README_HEADER
    twice = render_linked(render_linked(once, "assistant_20261122_150000_beef"),
                          "assistant_20261122_150000_beef")  # the same child is named once
    assert parse(twice).header.continued_in == ("assistant_20261122_143022_7f3a",
                                                "assistant_20261122_150000_beef")
    assert parse(twice).header.total_queries == 0


def test_forked_from_round_trips_and_reads_as_the_parent() -> None:
    text = README_HEADER.replace("**Total Queries:**",
                                 "**Forked From:** assistant_20261120_090000_aaaa\n"
                                 "**Previous Session:** assistant_20261120_090000_aaaa.md\n"
                                 "**Total Queries:**")
    header = parse(text).header
    assert header.forked and header.resumed_from == "assistant_20261120_090000_aaaa"
    resumed = parse(text.replace("Forked From", "Resumed From")).header
    assert not resumed.forked and resumed.resumed_from == header.resumed_from
