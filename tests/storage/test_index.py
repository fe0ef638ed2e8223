"""The sessions index (issue 12, points 2-4): titles, listing through the index (20 most
recent, --all, --limit, --json), rename, search, id prefixes, and the index kept right: rebuilt
when deleted or corrupt, repaired when a file changes behind its back, updated on save."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from contextlib import closing
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rollchat.cli.app import build_cli
from rollchat.compaction.request import SUMMARY_SYSTEM_PROMPT, parse_summary_reply
from rollchat.domain import SessionHeader, Summary, Transcript, Turn, Usage, answer_blocks
from rollchat.storage.index import INDEX_NAME, SessionIndex
from rollchat.storage.store import SessionStore
from rollchat.storage.transcript import SUMMARY_END, SUMMARY_START, parse, render
from tests.e2e import clean_env, run_piped

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=timezone.utc)
WORDS = ["redis", "kafka", "postgres", "nginx", "terraform", "grafana", "docker", "ansible"]


def write_session(root: Path, i: int, *, topic: str | None = None, title: str | None = None,
                  summary: bool = True, sid: str | None = None) -> str:
    """Session ``i`` (newer for larger i) about ``topic``; its id."""
    topic = topic or WORDS[i % len(WORDS)]
    when = T0 + timedelta(minutes=i)
    sid = sid or f"assistant_{when:%Y%m%d_%H%M%S}_{i:04x}"
    turns = tuple(Turn("query", n, when, f"question {n} about {topic} number {i}",
                       answer_blocks(f"the answer about {topic}"), elapsed=1.0, usage=Usage(10, 20))
                  for n in (1, 2))
    header = SessionHeader(sid, when, "Assistant", "config:assistant", "m", "offline",
                           total_queries=2, total_tokens=60, title=title)
    block = Summary("Initial session.", (f"{topic} setup",), ("use the blue plan",), ())
    root.mkdir(exist_ok=True)
    (root / f"{sid}.md").write_text(render(Transcript(header, turns, block if summary else None)))
    return sid


def rollchat(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(build_cli(), list(args))
    return result.exit_code, result.stdout, result.stderr


def listing(root: Path, *extra: str) -> dict:  # type: ignore[type-arg]
    code, out, err = rollchat("sessions", "--json", "--sessions-dir", str(root), *extra)
    assert code == 0, err
    return json.loads(out)  # type: ignore[no-any-return]


# ---------------------------------------------------------------- listing


def test_sessions_shows_the_20_most_recent_and_says_how_to_see_the_rest(tmp_path: Path) -> None:
    root = tmp_path / "s"
    ids = [write_session(root, i) for i in range(25)]
    code, out, _ = rollchat("sessions", "--sessions-dir", str(root))
    assert code == 0
    assert f"  1. {ids[24]}" in out and f" 20. {ids[5]}" in out and ids[4] not in out
    assert ("... 5 more sessions (25 in all): 'rollchat sessions --all' lists them all, "
            "'--limit N' the N most recent") in out
    assert "question 1 about redis number 24" in out  # the title: the first query's line
    code, out, _ = rollchat("sessions", "--all", "--sessions-dir", str(root))
    assert f" 25. {ids[0]}" in out and "more session" not in out
    code, out, _ = rollchat("sessions", "--limit", "3", "--sessions-dir", str(root))
    assert f"  3. {ids[22]}" in out and ids[21] not in out and "22 more sessions" in out


def test_sessions_json_has_titles_totals_and_the_same_limits(tmp_path: Path) -> None:
    root = tmp_path / "s"
    ids = [write_session(root, i, title="Blue plan" if i == 3 else None) for i in range(22)]
    data = listing(root)
    assert data["total"] == 22 and len(data["sessions"]) == 20
    assert data["sessions"][0]["id"] == ids[21] and data["sessions"][0]["number"] == 1
    assert data["sessions"][0]["title"] == "question 1 about grafana number 21"
    everything = listing(root, "--all")["sessions"]
    assert [s["id"] for s in everything] == ids[::-1]
    assert everything[18]["title"] == "Blue plan"
    assert set(everything[0]) >= {"number", "id", "file", "agent", "date", "queries", "tokens",
                                  "first_query", "has_summary", "parent", "title"}
    assert len(listing(root, "--limit", "2")["sessions"]) == 2


def test_bad_listing_options_are_refused(tmp_path: Path) -> None:
    code, _, err = rollchat("sessions", "--all", "--limit", "2", "--sessions-dir", str(tmp_path))
    assert code == 2 and "either --all or --limit" in err
    code, _, err = rollchat("sessions", "--limit", "0", "--sessions-dir", str(tmp_path))
    assert code == 2 and "--limit" in err


# ---------------------------------------------------------------- the index stays right


def test_deleting_the_index_loses_nothing(tmp_path: Path) -> None:
    root = tmp_path / "s"
    for i in range(5):
        write_session(root, i)
    (root / "notes.md").write_text("not a session\n")
    before = listing(root, "--all")
    assert (root / INDEX_NAME).exists()
    assert before["problems"] == [{"file": "notes.md", "reason": before["problems"][0]["reason"]}]
    hits = rollchat("search", "kafka", "--json", "--sessions-dir", str(root))[1]
    os.unlink(root / INDEX_NAME)
    assert listing(root, "--all") == before
    assert rollchat("search", "kafka", "--json", "--sessions-dir", str(root))[1] == hits


def test_a_corrupt_index_is_rebuilt(tmp_path: Path) -> None:
    root = tmp_path / "s"
    for i in range(4):
        write_session(root, i)
    before = listing(root, "--all")
    for garbage in (b"\0garbage" * 1000, b"SQLite format 3\0" + os.urandom(5000), b""):
        (root / INDEX_NAME).write_bytes(garbage)
        assert listing(root, "--all") == before
        with closing(sqlite3.connect(root / INDEX_NAME)) as db:  # a real index again
            assert db.execute("SELECT count(*) FROM files").fetchone()[0] == 4


def test_a_file_changed_behind_the_index_is_read_again(tmp_path: Path) -> None:
    root = tmp_path / "s"
    ids = [write_session(root, i) for i in range(3)]
    assert listing(root)["sessions"][2]["title"].startswith("question 1 about redis")
    path = root / f"{ids[0]}.md"
    text = path.read_text()
    stat = path.stat()
    # the same size and mtime: only the racy-row rule can notice this one
    path.write_text(text.replace("about redis", "about zebra"))
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert listing(root)["sessions"][2]["title"].startswith("question 1 about zebra")
    assert "zebra" in rollchat("search", "zebra", "--sessions-dir", str(root))[1]
    # an older row (indexed long after its mtime) is trusted; a new size is noticed at once
    old = stat.st_mtime_ns - 10**10
    os.utime(path, ns=(old, old))
    listing(root)
    path.write_text(text.replace("about redis", "about yak") + "\n")
    os.utime(path, ns=(old, old))
    assert listing(root)["sessions"][2]["title"].startswith("question 1 about yak")
    os.unlink(root / f"{ids[1]}.md")
    assert [s["id"] for s in listing(root)["sessions"]] == [ids[2], ids[0]]
    write_session(root, 9)
    assert listing(root)["total"] == 3


def test_a_save_updates_the_index(tmp_path: Path) -> None:
    root = tmp_path / "s"
    write_session(root, 0)
    store = SessionStore(root)
    assert store.index.page().total == 1  # builds it
    live = store.new_session(agent_key="assistant", agent="Assistant", agent_path="x",
                             model="m", provider="offline", now=T0 + timedelta(days=1))
    live.append_turn(Turn("query", 1, T0, "tell me about walruses", answer_blocks("they are big"),
                          usage=Usage(1, 2)), "Assistant")
    live.set_totals(1, 3, 1)
    size = (root / live.file_name).stat().st_size
    with closing(sqlite3.connect(root / INDEX_NAME)) as db:
        row = db.execute("SELECT size, info FROM files WHERE file = ?",
                         (live.file_name,)).fetchone()
        assert row[0] == size and json.loads(row[1])["title"] == "tell me about walruses"
        assert db.execute("SELECT count(*) FROM docs WHERE docs MATCH 'walruses'").fetchone()[0]
    live.close()


def test_two_processes_building_the_index_at_once_agree(tmp_path: Path) -> None:
    root = tmp_path / "s"
    for i in range(60):
        write_session(root, i)
    args = [sys.executable, "-m", "rollchat", "sessions", "--all", "--json", "--sessions-dir",
            str(root)]
    env = clean_env(tmp_path / "home")
    procs = [subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
             for _ in range(2)]
    outs = [p.communicate(timeout=60) for p in procs]
    assert all(p.returncode == 0 for p in procs), outs
    first, second = (json.loads(o) for o, _ in outs)
    assert first == second and first["total"] == 60


# ---------------------------------------------------------------- titles


def test_rename_sets_a_hostile_title_that_stays_one_header_line(tmp_path: Path) -> None:
    root = tmp_path / "s"
    ids = [write_session(root, i) for i in range(3)]
    hostile = "**Session ID:** x\n---\n<!-- SESSION_SUMMARY_START -->\x1b[31m \\n end"
    code, out, err = rollchat("rename", ids[0][:-2], hostile, "--sessions-dir", str(root))
    expected = "**Session ID:** x --- <!-- SESSION_SUMMARY_START -->␛[31m \\n end"
    assert code == 0 and out == f"{ids[0]}: {expected}\n", err
    header = parse((root / f"{ids[0]}.md").read_text()).header
    assert header.title == expected and header.session_id == ids[0]
    assert listing(root)["sessions"][2]["title"] == expected
    code, _, _ = rollchat("rename", "1", "Two", "words", "--sessions-dir", str(root))
    assert code == 0 and parse((root / f"{ids[2]}.md").read_text()).header.title == "Two words"
    code, _, err = rollchat("rename", "1", "  \n ", "--sessions-dir", str(root))
    assert code == 2 and "a title needs some text" in err


def test_ids_and_unique_prefixes_work_where_numbers_do(tmp_path: Path) -> None:
    root = tmp_path / "s"
    write_session(root, 0, sid="assistant_20260301_090000_abcd")
    write_session(root, 1, sid="assistant_20260301_090100_abce")
    write_session(root, 2, sid="research_20260301_090200_0001")
    code, _, err = rollchat("rename", "assistant_2026", "X", "--sessions-dir", str(root))
    assert code == 1 and "ambiguous session id 'assistant_2026'" in err
    assert "assistant_20260301_090100_abce, assistant_20260301_090000_abcd" in err
    code, _, err = rollchat("rename", "research", "Papers", "--sessions-dir", str(root))
    assert code == 0, err
    assert parse((root / "research_20260301_090200_0001.md").read_text()).header.title == "Papers"
    code, _, err = rollchat("rename", "nosuch", "X", "--sessions-dir", str(root))
    assert code == 1 and "no session 'nosuch'" in err
    code, _, err = rollchat("rename", "9", "X", "--sessions-dir", str(root))
    assert code == 1 and "choose between 1 and 3" in err
    # --resume takes a prefix too
    out = run_piped(tmp_path, "exit\n", "--sessions-dir", str(root), "--resume",
                    "assistant_20260301_0900")
    assert "Found: assistant_20260301_090000_abcd" in out.stdout, out.stderr


def test_offline_title_is_the_first_user_line_trimmed(tmp_path: Path) -> None:
    first = ("please help me plan the migration of the billing service from the old cluster "
             "to the new one before friday")
    run_piped(tmp_path, f"{first}\nsecond line of work\nexit\n", "--sessions-dir", "s")
    [path] = (tmp_path / "s").glob("*.md")
    title = parse(path.read_text()).header.title
    assert title == ("please help me plan the migration of the billing service from the old "
                     "cluster…")
    assert len(title) <= 80


def test_model_written_title_is_parsed_from_the_summary_reply() -> None:
    assert "**Title:**" in SUMMARY_SYSTEM_PROMPT
    body = ("**Background Context:** Initial session.\n\n**Topics Discussed:**\n- a\n\n"
            "**Decisions Made:**\n- None\n\n**Pending:**\n- None\n")
    reply = f"{SUMMARY_START}\n**Title:** \"Rate limiter *design*\"\n\n{body}{SUMMARY_END}"
    summary = parse_summary_reply(reply, max_words=100)
    assert summary.title == "Rate limiter *design" and summary.topics == ("a",)
    before = f"Title: Cache plan\n{SUMMARY_START}\n{body}{SUMMARY_END}"
    assert parse_summary_reply(before, max_words=100).title == "Cache plan"
    untitled = parse_summary_reply(f"{SUMMARY_START}\n{body}{SUMMARY_END}", max_words=100)
    assert untitled.title is None  # the session then gets its first query's first line


# ---------------------------------------------------------------- search


def test_search_ranks_hits_with_id_title_date_and_snippet(tmp_path: Path) -> None:
    root = tmp_path / "s"
    a = write_session(root, 0, topic="kafka")
    b = write_session(root, 1, topic="redis", title="Kafka consumers everywhere")
    write_session(root, 2, topic="nginx")
    code, out, _ = rollchat("search", "kafka", "--json", "--sessions-dir", str(root))
    hits = json.loads(out)
    assert code == 0 and {h["id"] for h in hits} == {a, b}
    assert hits[0]["id"] == b  # the title is short: the best match
    assert hits[0]["title"] == "Kafka consumers everywhere"
    assert hits[0]["snippet"] == "" and hits[0]["matched"] == []  # the title is not repeated
    assert "kafka" in hits[1]["snippet"] and "**" not in hits[1]["snippet"]  # plain text
    assert hits[1]["matched"] == ["kafka"]
    assert hits[1]["date"] == (T0).isoformat() and set(hits[0]) >= {"id", "title", "date",
                                                                      "snippet"}
    code, out, _ = rollchat("search", "blue", "plan", "--sessions-dir", str(root))
    assert code == 0 and out.count(" · 2026-03-01 ") == 3  # summaries are searched
    assert "  3. " + a in out


def test_search_marks_only_the_matched_words_bold_in_a_terminal(tmp_path: Path) -> None:
    """The matched words are marked apart from the text: a ``**`` the session itself holds
    (markdown) is not taken for a match, nor shown; a terminal shows matches in bold, a pipe
    as plain text (no markup for a script to strip)."""
    from rollchat.ui.table import hit_rows

    root = tmp_path / "s"
    write_session(root, 0, topic="**bold** kafka")
    [hit] = SessionIndex(root).search("kafka")
    matched = [text for text, is_match in hit.parts if is_match]
    assert matched and {t.lower() for t in matched} == {"kafka"}
    assert any("about bold " in text for text, is_match in hit.parts if not is_match)
    assert "**kafka**" in hit.snippet and "**bold**" not in hit.snippet  # (MCP's: marked)
    assert "**" not in hit.text and "about bold kafka" in hit.text
    shown = hit_rows(hit, terminal=True)[1]
    assert ("kafka", "bold") in shown and not any("**" in t for t, _ in shown)
    piped = hit_rows(hit, terminal=False)[1]
    assert ("kafka", "dim") in piped and all(style != "bold" for _, style in piped)
    assert not any("**" in t for t, _ in piped)


def test_search_text_is_never_query_syntax(tmp_path: Path) -> None:
    root = tmp_path / "s"
    write_session(root, 0, topic="kafka")
    for text in ('"', 'AND (', "kafka OR", "NEAR(kafka", "col:kafka*", "-kafka", "^kafka"):
        code, out, err = rollchat("search", "--json", "--sessions-dir", str(root), "--", text)
        assert code in (0, 1), (text, err)
        if code == 1:
            assert "search needs a word" in err
        else:
            assert isinstance(json.loads(out), list)
    code, out, _ = rollchat("search", "zzz", "--sessions-dir", str(root))
    assert code == 0 and "No saved session matches 'zzz'." in out
    # no hit for every word: sessions with any of them
    assert len(json.loads(rollchat("search", "kafka", "zzz", "--json", "--sessions-dir",
                                   str(root))[1])) == 1


def test_search_survives_odd_and_huge_files(tmp_path: Path) -> None:
    root = tmp_path / "s"
    sid = write_session(root, 0, topic="kafka")
    (root / "bad.md").write_bytes(b"\xff\xfe\0binary")
    big = root / f"{sid}.md"
    with big.open("a") as f:  # a torn last block of 6 MB: read up to the bound, no crash
        f.write("## Query 3 (09:00:00)\n**You:** " + "walrus " * 900_000)
    assert rollchat("search", "kafka", "--json", "--sessions-dir", str(root))[0] == 0
    assert listing(root)["problems"][0]["file"] == "bad.md"


# ---------------------------------------------------------------- in the chat


def test_title_and_search_in_the_chat(tmp_path: Path) -> None:
    root = tmp_path / "s"
    write_session(root, 0, topic="kafka", title="Streams")
    out = run_piped(tmp_path, "title\ntitle My\tnew   project\nwe will use kafka here\n"
                              "search kafka\ntitle\nsearch\nexit\n", "--sessions-dir", str(root))
    assert out.returncode == 0, out.stderr
    text = out.stdout
    assert "This session has no title yet" in text
    assert "Title: My new project (saved with the session's first message)" in text
    assert "  1. " in text and "Streams" in text and "kafka" in text and "**" not in text
    assert "Title: My new project\n" in text
    assert "usage: search TEXT" in text
    mine = [p for p in root.glob("*.md") if "0000" not in p.name]
    assert [parse(p.read_text()).header.title for p in mine] == ["My new project"]  # kept
    assert SessionIndex(root).search("project")[0].title == "My new project"


def test_a_chain_keeps_the_title_the_user_gave_it(tmp_path: Path) -> None:
    """A renamed session's title goes on with the sessions that continue it (``--resume``,
    ``compact``), as one conversation keeps its name; a title the file got by itself (its
    first message's) does not: the continuation gets its own."""
    root = tmp_path / "s"
    flags = ("--provider", "offline", "--sessions-dir", str(root))

    def titles() -> dict[str, str | None]:
        return {p.stem: parse(p.read_text()).header.title for p in root.glob("*.md")}

    assert run_piped(tmp_path, "we will use kafka here\nexit\n", *flags).returncode == 0
    [first] = titles()
    renamed = run_piped(tmp_path, "", "rename", first, "Kafka rollout", *flags[2:])
    assert renamed.returncode == 0, renamed.stderr
    done = run_piped(tmp_path, "and the consumers?\ncompact\nand the lag?\nexit\n",
                     "--resume", first, *flags)
    assert done.returncode == 0, done.stderr
    chain = titles()
    assert len(chain) == 3 and set(chain.values()) == {"Kafka rollout"}, chain
    auto = tmp_path / "auto"
    again = ("--provider", "offline", "--sessions-dir", str(auto))
    assert run_piped(tmp_path, "we will use redis here\nexit\n", *again).returncode == 0
    [plain] = [p.stem for p in auto.glob("*.md")]
    assert run_piped(tmp_path, "what about the eviction policy?\nexit\n", "--resume", plain,
                     *again).returncode == 0
    headers = {p.stem: parse(p.read_text()).header.title for p in auto.glob("*.md")}
    assert headers[plain] == "we will use redis here"
    [child] = [t for sid, t in headers.items() if sid != plain]
    assert child != "we will use redis here", headers


def test_sessions_in_the_chat_pages_too(tmp_path: Path) -> None:
    root = tmp_path / "s"
    for i in range(23):
        write_session(root, i)
    out = run_piped(tmp_path, "sessions\nsessions 2\nsessions all\nsessions x\nexit\n",
                    "--sessions-dir", str(root)).stdout
    assert "... 3 more sessions (23 in all): 'sessions all' lists them all" in out
    assert "... 21 more sessions" in out and " 23. " in out
    assert "usage: sessions [all | N]" not in out  # "sessions x" is chat, not the command


@pytest.mark.parametrize("ref", ["", "all"])
def test_in_chat_sessions_arguments_parse(ref: str) -> None:
    from rollchat.ui import commands

    parsed = commands.parse(f"sessions {ref}".strip())
    assert parsed is not None and not isinstance(parsed, commands.Unknown)
    assert parsed[0].name == "sessions" and parsed[1] == ref


def test_a_large_file_saved_without_its_text_is_still_found(tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch,
                                                             ) -> None:
    import rollchat.storage.index

    monkeypatch.setattr(rollchat.storage.index, "SAVE_TEXT_MAX_BYTES", 0)  # every file is "large"
    root = tmp_path / "s"
    write_session(root, 0)
    store = SessionStore(root)
    assert store.index.page().total == 1
    live = store.new_session(agent_key="assistant", agent="Assistant", agent_path="x",
                             model="m", provider="offline", now=T0 + timedelta(days=1))
    live.append_turn(Turn("query", 1, T0, "narwhals", answer_blocks("tusks"), usage=Usage(1, 2)),
                     "Assistant")
    with closing(sqlite3.connect(root / INDEX_NAME)) as db:  # the save left the text out
        assert not db.execute("SELECT count(*) FROM docs WHERE docs MATCH 'narwhals'").fetchone()[0]
    assert [h.session_id for h in store.index.search("narwhals")] == [live.session_id]
    live.close()


def test_the_index_and_a_listing_number_sessions_in_the_one_order(tmp_path: Path) -> None:
    """Issue 36 item 4: THE order is written once (listing.ORDER); the index's SQL listing,
    its search numbers and ``numbered`` over the same sessions agree, ties on the start time
    (broken by the id) and a session with nothing in it (last) included."""
    from rollchat.storage.listing import numbered

    root = tmp_path / "s"
    same = T0 + timedelta(minutes=5)
    ids = [write_session(root, i, topic="redis") for i in range(3)]
    ids += [write_session(root, 5, topic="redis", sid=f"assistant_{same:%Y%m%d_%H%M%S}_{x}")
            for x in ("b0", "a9", "c1")]
    header = SessionHeader("assistant_20260301_091000_0e", T0 + timedelta(minutes=10),
                           "Assistant", "config:assistant", "m", "offline")
    (root / f"{header.session_id}.md").write_text(render(Transcript(header, ())))
    index = SessionIndex(root)
    found = index.listing().sessions
    listed = [s.session_id for s in found]
    for infos in (found[::-1], sorted(found, key=lambda s: s.session_id)):  # (any order in)
        assert [s.session_id for s in numbered(list(infos), []).sessions] == listed
    assert listed == [*[f"assistant_{same:%Y%m%d_%H%M%S}_{x}" for x in ("c1", "b0", "a9")],
                      ids[2], ids[1], ids[0], header.session_id]
    assert {h.session_id: h.number for h in index.search("redis")} == {
        sid: n for n, sid in enumerate(listed, 1) if sid != header.session_id}


def test_the_lineage_of_a_page_just_read_does_not_scan_the_directory_again(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 36 item 7: `sessions --json` read its page, then the page's lineage for the chain
    costs, each after a scan of the whole directory (10,000 stats twice); the lineage read
    right after the page comes from the index as the page left it."""
    import rollchat.storage.index as index_module

    root = tmp_path / "sessions"
    parent = write_session(root, 1)
    child = write_session(root, 2, sid=f"{parent}_child")
    path = root / f"{child}.md"
    path.write_text(path.read_text().replace("**Session ID:**",
                                             f"**Resumed From:** {parent}\n**Session ID:**"))
    index = SessionIndex(root)
    assert {s.session_id for s in index.page().sessions} == {child, parent}
    scans: list[str] = []
    real = os.scandir
    monkeypatch.setattr(index_module.os, "scandir",
                        lambda p: scans.append(str(p)) or real(p))  # type: ignore[func-returns-value]
    [newest] = [s for s in index.page().sessions if s.session_id == child]
    assert newest.resumed_from == parent
    assert len(scans) == 1  # the page: brought up to date
    assert {s.session_id for s in index.lineage([newest])} == {child, parent}
    assert len(scans) == 1  # its lineage: not scanned again
    assert SessionIndex(root).lineage([newest]) and len(scans) == 2  # another object scans
