"""The session_archive_read tool: query, paging, caps, bad files, hostile arguments, engine;
over a SessionStore (its file checks) and a InMemoryStore."""

from __future__ import annotations

import os
import re
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from rollchat.compaction.restore import build_restoration_prompt
from rollchat.domain import (
    SessionHeader,
    Summary,
    ToolCall,
    ToolExchange,
    Transcript,
    Turn,
    Usage,
    answer_blocks,
)
from rollchat.engine.core import Engine, EngineSettings
from rollchat.errors import ConfigError
from rollchat.events import Event
from rollchat.providers.base import RetryPolicy
from rollchat.providers.offline import ARCHIVE_TOOL, OfflineProvider
from rollchat.storage.store import InMemoryStore, SessionStore, Store
from rollchat.storage.transcript import render
from rollchat.tools import ARCHIVE_TOOL_NAME, Tool
from rollchat.tools.archive import MAX_LIMIT, archive_tool
from tests.drive import drain

T0 = datetime(2026, 11, 22, 14, 30, 0, tzinfo=timezone.utc)
SID = "assistant_20261122_143000_abcd"
SUMMARY = Summary("Building a rate limiter.", ("Rate limiter design",),
                  ("Use a token bucket",), ("Write the tests",))
TOPICS = ["token bucket sizes", "Redis for shared counters across workers",
          "retry headers", "the burst allowance of 20", "redis key expiry uses PEXPIRE",
          "logging format", "the config file layout", "metrics names", "error messages",
          "packaging", "docs", "release notes"]


def query(n: int, user: str, answer: str, tools: tuple[ToolExchange, ...] = ()) -> Turn:
    return Turn("query", n, T0 + timedelta(minutes=n), user, answer_blocks(answer, tools),
                elapsed=1.0,
                usage=Usage(10, 20))


def transcript(turns: list[Turn], summary: Summary | None = SUMMARY) -> Transcript:
    header = SessionHeader(SID, T0, "Assistant", "config:assistant", "offline", "offline",
                           total_queries=len(turns))
    return Transcript(header, tuple(turns), summary)


def parent_file(tmp_path: Path, turns: list[Turn] | None = None, name: str = "parent.md") -> Path:
    if turns is None:
        turns = [query(i + 1, f"Let's talk about {topic}.", f"Answer {i + 1} on {topic}.")
                 for i, topic in enumerate(TOPICS)]
    path = tmp_path / name
    path.write_text(render(transcript(turns)), encoding="utf-8")
    return path


def archive(path: Path, **kwargs: int) -> Tool:
    """The tool bound to the session file at ``path``, through a store of its directory."""
    return archive_tool(SessionStore(path.parent), path.stem, **kwargs)


def read(tool: Tool, **arguments: object) -> str:
    return tool.run(arguments)


def offsets(result: str) -> list[int]:
    return [int(m) for m in re.findall(r"^\[offset (\d+)\]", result, re.MULTILINE)]


# ---------------------------------------------------------------- spec


def test_name_matches_the_offline_model_and_spec_is_a_json_schema(tmp_path: Path) -> None:
    tool = archive(parent_file(tmp_path))
    assert ARCHIVE_TOOL_NAME == ARCHIVE_TOOL == tool.spec.name
    params = tool.spec.parameters
    assert params["type"] == "object" and params.get("required") in (None, [])
    assert set(params["properties"]) == {"query", "offset", "limit", "tool_call"}
    assert "previous session" in tool.spec.description


def test_max_chars_below_the_minimum_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="max_chars"):
        archive_tool(SessionStore(tmp_path), "x", max_chars=10)


# ---------------------------------------------------------------- query and paging


def test_no_arguments_gives_the_first_page_with_next_offset(tmp_path: Path) -> None:
    result = read(archive(parent_file(tmp_path)))
    assert result.startswith(f"Turns 1-5 of 12 turns (session {SID}):")
    assert offsets(result) == [0, 1, 2, 3, 4]
    assert "You: Let's talk about token bucket sizes." in result
    assert "Assistant: Answer 1 on token bucket sizes." in result
    assert "Query 1 (2026-11-22 14:31:00)" in result
    assert "[7 more: call session_archive_read again with offset=5]" in result


def test_query_matches_all_words_case_insensitively(tmp_path: Path) -> None:
    tool = archive(parent_file(tmp_path))
    result = read(tool, query="REDIS")
    assert result.startswith("Turns 1-2 of 2 turns matching the query")
    assert offsets(result) == [0, 1]
    assert "shared counters" in result and "PEXPIRE" in result
    assert "token bucket" not in result and "[end of the matching turns]" in result
    only = read(tool, query="redis  expiry")
    assert offsets(only) == [0] and "PEXPIRE" in only and "shared counters" not in only
    assert read(tool, query="redis kubernetes").startswith("No turns matching the query")


def test_offset_and_limit_page_through_matches(tmp_path: Path) -> None:
    tool = archive(parent_file(tmp_path))
    page = read(tool, offset=10, limit=5)
    assert page.startswith("Turns 11-12 of 12") and offsets(page) == [10, 11]
    assert "release notes" in page and "[end of the matching turns]" in page
    second = read(tool, query="redis", offset=1, limit=1)
    assert offsets(second) == [1] and "PEXPIRE" in second
    first = read(tool, query="redis", limit=1)
    assert "again with offset=1 and the same query" in first


def test_tool_exchanges_are_shortened(tmp_path: Path) -> None:
    exchange = ToolExchange(ToolCall("c1", "grep", {"pattern": "limiter"}), "match " * 500)
    path = parent_file(tmp_path, [query(1, "find the limiter", "Found it.", (exchange,))])
    result = read(archive(path))
    line = next(x for x in result.splitlines() if x.startswith("Tool call:"))
    assert 'grep {"pattern": "limiter"} -> match match' in line
    assert len(line) < 300 and "[2999 chars]" in line


def test_restored_turns_are_listed(tmp_path: Path) -> None:
    restored = Turn("restored", 0, T0, "", answer_blocks("I've reviewed it. Ready!"),
                    context="Resumed from a_1 (3 queries, 1.0K tokens)")
    result = read(archive(parent_file(tmp_path, [restored, query(1, "hi", "hello")])))
    assert "[offset 0] Session restored" in result and "Context: Resumed from a_1" in result
    assert "[offset 1] Query 1" in result


# ---------------------------------------------------------------- caps


def test_result_is_capped_at_max_chars_with_next_offset(tmp_path: Path) -> None:
    turns = [query(i, f"question {i} " + "x" * 300, f"answer {i} " + "y" * 300)
             for i in range(1, 21)]
    tool = archive(parent_file(tmp_path, turns), max_chars=2000)
    result = read(tool, limit=MAX_LIMIT)
    assert len(result) <= 2000
    shown = offsets(result)
    assert 0 < len(shown) < 20 and shown == list(range(len(shown)))
    assert f"again with offset={len(shown)}]" in result
    nxt = read(tool, offset=len(shown), limit=MAX_LIMIT)
    assert offsets(nxt)[0] == len(shown)


def test_a_single_huge_turn_is_cut_to_fit(tmp_path: Path) -> None:
    long_id = "s" * 500
    turns = [query(1, "start " + "z" * 50_000, "done"), query(2, "next", "ok")]
    path = tmp_path / "big.md"
    text = render(transcript(turns)).replace(SID, long_id)
    path.write_text(text, encoding="utf-8")
    result = read(archive(path, max_chars=1000))
    assert len(result) <= 1000
    assert "[turn cut: too long to show whole]" in result and "offset=1]" in result


def test_file_above_the_size_cap_is_refused(tmp_path: Path) -> None:
    parent_file(tmp_path)
    tool = archive_tool(SessionStore(tmp_path, max_read_bytes=1000), "parent")
    assert read(tool).startswith("error: cannot read the previous session's transcript: "
                                 "parent.md is too large to read (")
    assert "limit 1000)" in read(tool) and "token bucket" not in read(tool)


# ---------------------------------------------------------------- bad files


def test_missing_file_is_an_error_result(tmp_path: Path) -> None:
    result = read(archive(tmp_path / "gone.md"))
    assert result.startswith("error:") and "no session file gone.md" in result


def test_corrupt_file_is_an_error_result(tmp_path: Path) -> None:
    path = tmp_path / "bad.md"
    path.write_bytes(b"\x00\xff garbage\n## not a session\n")
    result = read(archive(path))
    assert result.startswith("error: cannot read the previous session's transcript: bad.md: "
                             "not UTF-8 text")
    (tmp_path / "notes.md").write_text("## not a session\n")
    result = read(archive(tmp_path / "notes.md"))
    assert result.startswith("error: the previous session's transcript cannot be parsed: "
                             "notes.md: line 1: not a session file")


def test_truncated_last_block_is_tolerated(tmp_path: Path) -> None:
    path = parent_file(tmp_path, [query(1, "first redis note", "ok"), query(2, "second", "ok")])
    text = path.read_text(encoding="utf-8")
    path.write_text(text[: text.rindex("*Time:")], encoding="utf-8")  # crash mid-append
    result = read(archive(path))
    assert offsets(result) == [0] and "first redis note" in result


def test_directory_and_fifo_are_refused(tmp_path: Path) -> None:
    (tmp_path / "dir.md").mkdir()
    assert read(archive(tmp_path / "dir.md")).startswith("error:")
    if hasattr(os, "mkfifo"):
        os.mkfifo(tmp_path / "pipe.md")
        assert read(archive(tmp_path / "pipe.md")) == (
            "error: cannot read the previous session's transcript: pipe.md is not a regular "
            "file")


def test_file_changes_are_seen(tmp_path: Path) -> None:
    path = parent_file(tmp_path, [query(1, "old words", "ok")])
    tool = archive(path)
    assert "old words" in read(tool)
    path.write_text(render(transcript([query(1, "brand new words here", "ok")])),
                    encoding="utf-8")
    assert "brand new words here" in read(tool)


@pytest.fixture(params=["files", "memory"])
def any_store(request: pytest.FixtureRequest, tmp_path: Path) -> Store:
    return SessionStore(tmp_path / "sessions") if request.param == "files" else InMemoryStore()


def test_each_call_reads_the_session_as_it_is_now(any_store: Store) -> None:
    live = any_store.new_session(agent_key="assistant", agent="Assistant",
                                 agent_path="config:assistant", model="offline",
                                 provider="offline", now=T0, resumed_from=None,
                                 previous_session=None)
    tool = archive_tool(any_store, live.session_id)
    assert read(tool) == f"No turns in session {live.session_id} (0 turns in all)."
    live.append_turn(query(1, "we pick redis", "ok"), "Assistant")
    assert "You: we pick redis" in read(tool)
    live.append_turn(query(2, "and valkey later", "fine"), "Assistant")
    any_store.finalize(live.session_id, SUMMARY, total_queries=2, total_tokens=60)
    result = read(tool)  # the finalized session (a new file, for a SessionStore)
    assert result.startswith(f"Turns 1-2 of 2 turns (session {live.session_id}):")
    assert "You: and valkey later" in result and "[end of the matching turns]" in result


def test_an_unknown_session_is_an_error_result(any_store: Store) -> None:
    result = read(archive_tool(any_store, "assistant_20261122_143000_dead"))
    assert result.startswith("error: cannot read the previous session's transcript: no session")
    assert "assistant_20261122_143000_dead" in result


# ---------------------------------------------------------------- hostile arguments


SECRET = "TOP-SECRET-CONTENT-OUTSIDE"


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    secret = tmp_path / "outside" / "secret.md"
    secret.parent.mkdir()
    secret.write_text(render(transcript([query(1, SECRET, SECRET)])), encoding="utf-8")
    return secret


@pytest.mark.parametrize("arguments", [
    {"offset": "../../etc/passwd"}, {"offset": -1}, {"offset": True}, {"offset": 1.5},
    {"offset": 10**40}, {"limit": 0}, {"limit": MAX_LIMIT + 1}, {"limit": "5"},
    {"limit": False}, {"query": ["a"]}, {"query": {"path": "/etc/passwd"}},
    {"query": "x" * 10_000},
])
def test_wrong_argument_types_give_clear_errors(tmp_path: Path,
                                                arguments: dict[str, object]) -> None:
    result = read(archive(parent_file(tmp_path)), **arguments)
    key = next(iter(arguments))
    assert result.startswith(f"error: '{key}' ") and "\n" not in result


def test_offset_past_the_end_is_an_error(tmp_path: Path) -> None:
    result = read(archive(parent_file(tmp_path)), query="redis", offset=2)
    assert result.startswith("error: offset 2 is past the end") and "offsets 0-1" in result


def test_non_object_arguments_are_an_error(tmp_path: Path) -> None:
    tool = archive(parent_file(tmp_path))
    assert tool.run(["../x"]) == "error: arguments must be a JSON object"  # type: ignore[arg-type]


@pytest.mark.parametrize("extra", [
    {"path": "/etc/passwd"}, {"file": "../outside/secret.md"}, {"session": "outside/secret"},
    {"path": "OUTSIDE"}, {"../../etc/passwd": 1},
])
def test_path_like_arguments_never_change_the_file(tmp_path: Path, outside: Path,
                                                   extra: dict[str, object]) -> None:
    args = {k: (str(outside) if v == "OUTSIDE" else v) for k, v in extra.items()}
    result = read(archive(parent_file(tmp_path)), **args)
    assert SECRET not in result and "root:" not in result
    assert result.startswith("Turns 1-5 of 12 turns") and "ignored unknown arguments" in result


@pytest.mark.parametrize("query_text", ["../outside/secret.md", "OUTSIDE", "/etc/passwd"])
def test_path_like_queries_only_search_the_bound_file(tmp_path: Path, outside: Path,
                                                      query_text: str) -> None:
    text = str(outside) if query_text == "OUTSIDE" else query_text
    result = read(archive(parent_file(tmp_path)), query=text)
    assert result.startswith("No turns matching the query") and SECRET not in result


def test_symlink_to_a_file_outside_the_directory_is_refused(tmp_path: Path,
                                                            outside: Path) -> None:
    sessions = tmp_path / "sessions"
    sessions.mkdir()
    link = sessions / "parent.md"
    link.symlink_to(outside)
    result = read(archive(link))
    assert result.startswith("error:") and "symlink" in result and SECRET not in result


def test_file_replaced_by_an_outside_symlink_later_is_refused(tmp_path: Path,
                                                              outside: Path) -> None:
    sessions = tmp_path / "sessions"
    sessions.mkdir()
    path = parent_file(sessions)
    tool = archive(path)
    assert "token bucket" in read(tool)
    path.unlink()
    path.symlink_to(outside)
    result = read(tool)
    assert "symlink" in result and SECRET not in result


def test_symlink_within_the_directory_is_allowed(tmp_path: Path) -> None:
    real = parent_file(tmp_path, name="real.md")
    (tmp_path / "alias.md").symlink_to(real.name)
    assert "token bucket" in read(archive(tmp_path / "alias.md"))


def test_symlink_loop_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "a.md").symlink_to("b.md")
    (tmp_path / "b.md").symlink_to("a.md")
    assert read(archive(tmp_path / "a.md")).startswith("error:")


# ---------------------------------------------------------------- through the engine


def test_offline_model_reads_the_parent_through_the_engine(tmp_path: Path) -> None:
    turns = [query(1, "How big should the token bucket be?", "Start with 100 tokens."),
             query(2, "We store the shared counters in Valkey with a TTL of 60 seconds.",
                   "Good: Valkey keeps the counters consistent across workers."),
             query(3, "Now the retry headers.", "Send Retry-After in seconds.")]
    parent = parent_file(tmp_path, turns)
    prompt = build_restoration_prompt(session_id=SID, date=T0, queries=3, tokens=1200,
                                      parent_of_parent=None, file_name=parent.name,
                                      summary=SUMMARY, archive_tool=True)
    assert "valkey" not in prompt.lower()
    engine = Engine(EngineSettings(OfflineProvider(), model="offline", system="sys",
                                   max_output_tokens=500, temperature=None,
                                   retry=RetryPolicy(max_retries=0), tools=(archive(parent),)))
    events: list[Event] = []
    drain(engine.restore(prompt), events.append)
    turn = drain(engine.chat("What did we say about valkey?"), events.append).turn
    assert turn.status == "ok" and len(turn.tools) == 1
    call = turn.tools[0].call
    assert call.name == ARCHIVE_TOOL_NAME and call.arguments == {"query": "valkey"}
    assert "Turn 1 of 1 turn matching the query" in turn.tools[0].result
    assert "We store the shared counters in Valkey with a TTL of 60 seconds." in turn.assistant
    assert "From the previous session's transcript" in turn.assistant


# ---------------------------------------------------------------- whole tool results


def test_a_tool_result_of_the_previous_session_is_read_whole_page_by_page(
        tmp_path: Path) -> None:
    log = "".join(f"line {n}: compiling module {n}\n" for n in range(2000)) + "BUILD FAILED"
    build = ToolExchange(ToolCall("call_build", "build", {}), log)
    path = parent_file(tmp_path, [query(1, "build it", "It failed.", (build,))])
    tool = archive(path)
    first = read(tool, tool_call="call_build")
    assert first.startswith(f"Tool result of call_build (build, Query 1 of session {SID}): "
                            f"chars 0-8,000 of {len(log):,}\n")
    assert first.split("\n", 1)[1].startswith(log[:7000])
    assert first.endswith(f'chars more: {ARCHIVE_TOOL_NAME} {{"tool_call": "call_build", '
                          '"offset": 8000}]')
    pages, offset = [], 0
    while True:  # following the hints gives the result back whole
        page = read(tool, tool_call="call_build", offset=offset)
        pages.append(page.split("\n", 1)[1].rsplit("\n", 1)[0])
        more = re.search(r'"offset": (\d+)\}\]$', page)
        if more is None:
            assert page.endswith("BUILD FAILED\n[end of the result]")
            break
        offset = int(more[1])
    assert "".join(pages) == log


def test_tool_call_reads_the_current_session_first_and_says_what_is_missing(
        tmp_path: Path) -> None:
    from rollchat.tools.archive import Found

    mine = ToolExchange(ToolCall("call_1", "grep", {}), "x" * 50)
    current = {"call_1": Found("query 3 of this session", mine)}
    tool = archive_tool(InMemoryStore(), None, current=current.get)
    assert tool.companion  # with no previous session it is offered only beside other tools
    page = read(tool, tool_call="call_1")
    assert page == ("Tool result of call_1 (grep, query 3 of this session): chars 0-50 of 50\n"
                    + "x" * 50 + "\n[end of the result]")
    assert read(tool, tool_call="call_9") == 'error: no tool call "call_9" in this session'
    assert read(tool, tool_call="call_1", offset=51).startswith(
        "error: offset 51 is past the end: the result of call_1 has 50 chars")
    assert read(tool, tool_call=7).startswith("error: 'tool_call' must be a tool call id")
    assert read(tool).startswith("error: there is no previous session")
    assert not archive(parent_file(tmp_path)).companion


def test_a_page_fits_the_token_limit_it_is_given(tmp_path: Path) -> None:
    from rollchat.models.tokens import TokenCounter
    from rollchat.tools.archive import Found

    count = TokenCounter("test-model").count_text
    dense = ToolExchange(ToolCall("c", "dump", {}), "".join(f"{n:08x}" for n in range(5000)))
    tool = archive_tool(InMemoryStore(), None, current={"c": Found("here", dense)}.get,
                        page_tokens=lambda: 300, count=count)
    page = read(tool, tool_call="c", offset=100)
    assert 250 < count(page) <= 300
    body = page.split("\n", 1)[1].rsplit("\n", 1)[0]
    assert dense.result[100:].startswith(body)


def test_the_tools_listing_says_when_the_archive_tool_is_offered() -> None:
    from rollchat.providers.base import ToolSpec
    from rollchat.tools.sources import WITH_OTHERS, tool_entries

    companion = archive_tool(InMemoryStore(), None)
    [entry] = tool_entries({ARCHIVE_TOOL_NAME: companion}, [])
    assert entry.state == WITH_OTHERS  # alone it is not sent to the model
    grep = Tool(ToolSpec("grep", "Search.", {"type": "object"}), lambda arguments: "")
    listed = tool_entries({ARCHIVE_TOOL_NAME: companion, "grep": grep}, [])
    assert {e.name: e.state for e in listed} == {ARCHIVE_TOOL_NAME: "ready", "grep": "ready"}
