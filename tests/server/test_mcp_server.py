"""``rollchat mcp``: a real server process (forked from a zygote that has the SDK imported: see
tests/mcp_helpers.py's zygote_command) driven by the official SDK's stdio client, as an MCP
client (Claude Code, an IDE) drives it: tools, their JSON, resources and errors."""

from __future__ import annotations

import asyncio
import json
import os
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from typer.testing import CliRunner

from rollchat.cli.app import build_cli
from tests.compact_fixtures import OFFLINE_CONFIG, PARENT_SUMMARY, make_sessions, snapshot
from tests.e2e import PYCACHE, user_dirs
from tests.mcp_helpers import zygote_command

if TYPE_CHECKING:  # the SDK is imported by the tests that run, not at collection
    from mcp import Client, StdioServerParameters

TOOLS = {"list_sessions", "search_sessions", "read_session", "compact_session"}


def _params(tmp_path: Path, sessions: Path, config: Path, **env: str) -> StdioServerParameters:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    from mcp import StdioServerParameters

    # forked by the MCP tests' zygote, which has the SDK imported (seconds of CPU a start)
    command = zygote_command("-m", "rollchat", "mcp", "--sessions-dir", str(sessions),
                             "--config", str(config))
    return StdioServerParameters(
        command=command[0], args=command[1:],
        env={**user_dirs(home), "PYTHONPATH": os.pathsep.join(sys.path),
             "PYTHONPYCACHEPREFIX": str(PYCACHE), **env},
        cwd=str(tmp_path))


def _client(params: StdioServerParameters, errlog: Any) -> Client:
    """The SDK's client of a server started as ``params`` say (its stderr to ``errlog``)."""
    from mcp import Client
    from mcp.client.stdio import stdio_client

    return Client(stdio_client(params, errlog=errlog))


def _text(result: Any) -> str:
    return "".join(block.text for block in result.content if block.type == "text")


def _json(result: Any) -> Any:
    assert not result.is_error, _text(result)
    return json.loads(_text(result))


async def _session(params: StdioServerParameters, errlog: Any) -> dict[str, Any]:
    """Everything a client does, in one server process; what it saw, by step."""
    seen: dict[str, Any] = {}
    async with _client(params, errlog) as client:
        seen["tools"] = {t.name: t for t in (await client.list_tools()).tools}
        seen["list"] = _json(await client.call_tool("list_sessions", {}))
        seen["page"] = _json(await client.call_tool("list_sessions", {"limit": 1,
                                                                      "offset": 1}))
        seen["search"] = _json(await client.call_tool("search_sessions",
                                                      {"query": "SYSLOG rejected"}))
        seen["search_none"] = _json(await client.call_tool("search_sessions",
                                                           {"query": "kubernetes"}))
        child = seen["list"]["sessions"][0]["id"]
        seen["read_md"] = _text(await client.call_tool("read_session", {"session": child}))
        seen["read_json"] = _json(await client.call_tool(
            "read_session", {"session": child, "format": "json"}))
        seen["compact"] = _json(await client.call_tool("compact_session", {"session": child}))
        seen["compact_again"] = _json(await client.call_tool("compact_session",
                                                             {"session": child}))
        seen["by_number"] = _json(await client.call_tool("compact_session", {"session": 1}))
        seen["read_by_number"] = _text(await client.call_tool("read_session", {"session": 2}))
        seen["compact_focus"] = _json(await client.call_tool(
            "compact_session", {"session": child, "focus": "port", "max_words": 60}))
        seen["resources"] = (await client.list_resources()).resources
        seen["templates"] = (await client.list_resource_templates()).resource_templates
        seen["resource"] = (await client.read_resource(f"rollchat://sessions/{child}")).contents
        seen["unknown"] = await client.call_tool("compact_session", {"session": "nosuch"})
        seen["bad_read"] = await client.call_tool("read_session", {"session": "../x"})
        seen["bad_limit"] = await client.call_tool("list_sessions", {"limit": 0})
        seen["empty_query"] = await client.call_tool("search_sessions", {"query": "  "})
        seen["bad_words"] = await client.call_tool("compact_session",
                                                   {"session": child, "max_words": 3})
        try:
            await client.read_resource("rollchat://sessions/nosuch_session")
        except Exception as exc:  # the SDK raises the server's error
            seen["resource_error"] = str(exc)
        seen["still_alive"] = _json(await client.call_tool("list_sessions", {}))["total"]
    return seen


def test_the_mcp_server_through_the_sdk_stdio_client(tmp_path: Path) -> None:
    made = make_sessions(tmp_path / "sessions")
    config = tmp_path / "config.yml"
    config.write_text(OFFLINE_CONFIG, encoding="utf-8")
    before = snapshot(made.root)
    errlog = (tmp_path / "server.err").open("w+", encoding="utf-8")
    with errlog:
        seen = asyncio.run(asyncio.wait_for(
            _session(_params(tmp_path, made.root, config), errlog), 90))

    assert set(seen["tools"]) == TOOLS
    compact_schema = seen["tools"]["compact_session"].input_schema["properties"]
    assert {"session", "focus", "max_words", "refresh"} <= set(compact_schema)
    assert seen["tools"]["list_sessions"].description.startswith("List saved sessions")

    listed = seen["list"]
    assert listed["total"] == 2 and listed["problems"] == []
    child, parent = listed["sessions"]
    assert (child["id"], parent["id"]) == (made.child, made.parent)
    assert child["parent"] == made.parent and parent["has_summary"] is True
    assert child["title"] == "The gateway listens on port 8443 behind the load balancer."
    assert child["queries"] == 2 and child["agent"] == "Assistant"
    assert [s["id"] for s in seen["page"]["sessions"]] == [made.parent]

    (hit,) = seen["search"]["hits"]
    assert hit["id"] == made.child and "syslog" in hit["snippet"].lower()
    assert seen["search_none"]["hits"] == []

    assert seen["read_md"] == (made.root / f"{made.child}.md").read_text(encoding="utf-8")
    transcript = seen["read_json"]
    assert transcript["id"] == made.child and transcript["parent"] == made.parent
    assert [t["kind"] for t in transcript["turns"]] == ["restored", "query", "query"]
    assert transcript["turns"][2]["user"] == "We decided to log rejected requests to syslog."

    first, again = seen["compact"], seen["compact_again"]
    assert first["method"] == "model" and first["cached"] is False
    assert again == {**first, "cached": True}
    # "number" in list_sessions is a JSON number: a client passes it as one
    assert seen["by_number"] == again
    assert seen["read_by_number"] == (made.root / f"{made.parent}.md").read_text(encoding="utf-8")
    assert PARENT_SUMMARY.pending[0] in first["pending"]  # the parent's open task, carried
    focused = seen["compact_focus"]
    assert focused["focus"] == "port" and focused["max_words"] == 60
    assert "8443" in focused["summary"] and focused["summary"] != first["summary"]
    # the same JSON as `rollchat compact --json`, which now answers from the same cache
    cli_out = CliRunner().invoke(build_cli(), ["compact", made.child, "--json", "--sessions-dir",
                                           str(made.root), "--config", str(config)])
    assert json.loads(cli_out.stdout) == again

    resources = {r.uri: r for r in seen["resources"]}
    assert set(resources) == {f"rollchat://sessions/{made.child}",
                              f"rollchat://sessions/{made.parent}"}
    assert resources[f"rollchat://sessions/{made.child}"].mime_type == "text/markdown"
    assert [t.uri_template for t in seen["templates"]] == ["rollchat://sessions/{session_id}"]
    (content,) = seen["resource"]
    assert content.text == seen["read_md"]

    for key, message in (("unknown", "no session 'nosuch'"),
                         ("bad_read", "invalid session id"),
                         ("bad_limit", "limit must be between 1 and 500 (got 0)"),
                         ("empty_query", "the query is empty"),
                         ("bad_words", "max words must be at least 20 (got 3)")):
        assert seen[key].is_error and message in _text(seen[key]), (key, _text(seen[key]))
    assert "nosuch_session.md" in seen["resource_error"]
    assert seen["still_alive"] == 2
    assert snapshot(made.root) == before  # the server wrote no session file


def test_mcp_refuses_a_provider_it_cannot_use(tmp_path: Path) -> None:
    config = tmp_path / "config.yml"
    config.write_text("agents:\n  assistant:\n    provider: anthropic\n", encoding="utf-8")
    result = CliRunner().invoke(build_cli(), ["mcp", "--sessions-dir", str(tmp_path),
                                          "--config", str(config)])
    assert result.exit_code == 2
    assert "provider anthropic needs an API key" in result.stderr


def test_the_server_modules_draw_nothing() -> None:
    """The server's stdout is the protocol: its modules never import the terminal layer. (One
    new interpreter imports them one after the other, each import's new modules told apart:
    each interpreter is seconds of CPU, the mcp SDK's import.)"""
    import subprocess

    modules = ["rollchat.server.mcp", "rollchat.compaction.saved"]
    code = ("import importlib, json, sys\n"
            "drawn = {}\n"
            "for name in sys.argv[1:]:\n"
            "    importlib.import_module(name)\n"
            "    drawn[name] = [m for m in sys.modules if m.startswith(('prompt_toolkit',"
            " 'rollchat.ui'))]\n"
            "print(json.dumps(drawn))")
    out = subprocess.run([sys.executable, "-c", code, *modules], capture_output=True,
                         text=True, check=True).stdout
    assert json.loads(out) == {module: [] for module in modules}


def _big_session(root: Path) -> str:
    """A 2 MB session: 40 long turns, one with a 600,000-character tool result."""
    from rollchat.domain import ToolCall, ToolExchange, answer_blocks
    from rollchat.storage.store import SessionStore
    from tests.compact_fixtures import T0, turn

    store = SessionStore(root)
    live = store.new_session(agent_key="assistant", agent="Assistant",
                             agent_path="config:assistant", model="offline",
                             provider="offline", now=T0)
    for n in range(1, 41):
        t = turn(n, f"step {n} " + "lorem ipsum " * 2000, f"done {n} " + "dolor " * 2000, T0)
        if n == 20:
            from dataclasses import replace
            t = replace(t, blocks=answer_blocks(t.assistant, (ToolExchange(
                ToolCall("c1", "read_log", {"path": "x.log"}), "log line\n" * 60_000),)))
        live.append_turn(t, "Assistant")
    live.close()
    return live.session_id


async def _pages(params: StdioServerParameters, errlog: Any, sid: str) -> dict[str, Any]:
    seen: dict[str, Any] = {"md": [], "json": []}
    async with _client(params, errlog) as client:
        offset: int | None = 0
        while offset is not None:
            text = _text(await client.call_tool("read_session",
                                                {"session": sid, "offset": offset}))
            seen["md"].append(text)
            found = re.search(r"\n\n\[rollchat: characters [\d,]+-[\d,]+ of [\d,]+; read on "
                              rf'with read_session\(session="{sid}", offset=(\d+)\)\]$', text)
            offset = int(found[1]) if found else None
        offset = 0
        while offset is not None:
            page = _json(await client.call_tool("read_session", {
                "session": sid, "format": "json", "offset": offset}))
            seen["json"].append(page)
            offset = page["next_offset"]
        seen["past_end"] = await client.call_tool("read_session",
                                                  {"session": sid, "offset": 10**9})
        seen["tiny"] = await client.call_tool("read_session",
                                              {"session": sid, "max_chars": 10})
    return seen


def test_read_session_answers_a_bounded_page_and_says_how_to_read_on(tmp_path: Path) -> None:
    """A client puts a tool's answer in its model's context: a 2 MB session comes a page at a
    time, not as one 2 MB answer, and the pages put together are the whole file."""
    root = tmp_path / "sessions"
    sid = _big_session(root)
    config = tmp_path / "config.yml"
    config.write_text(OFFLINE_CONFIG, encoding="utf-8")
    whole = (root / f"{sid}.md").read_text(encoding="utf-8")
    assert len(whole) > 1_900_000
    with (tmp_path / "server.err").open("w+", encoding="utf-8") as errlog:
        seen = asyncio.run(asyncio.wait_for(_pages(_params(tmp_path, root, config), errlog,
                                                   sid), 120))
    pages = seen["md"]
    assert len(pages) > 20 and all(len(p) <= 80_200 for p in pages)
    assert "".join(p.rsplit("\n\n[rollchat: characters", 1)[0] for p in pages[:-1]) \
        + pages[-1] == whole
    turns = [t for page in seen["json"] for t in page["turns"]]
    assert [t["number"] for t in turns] == list(range(1, 41))
    assert all(len(json.dumps(p, indent=1, ensure_ascii=False)) <= 100_000
               for p in seen["json"])
    (big,) = [t for t in turns if any(b["type"] == "tool_result" for b in t["blocks"])]
    call, result, answer = big["blocks"]  # in the order they happened
    assert call["type"] == "tool_call" and call["name"] == "read_log"
    assert result["call_id"] == "c1" and "[…cut: 540,000 characters" in result["text"]
    assert answer["type"] == "text" and answer["text"].startswith("done 20")
    assert seen["json"][0]["turns_total"] == 40
    assert seen["past_end"].is_error and "past the end" in _text(seen["past_end"])
    assert seen["tiny"].is_error and "max_chars must be between" in _text(seen["tiny"])


async def _titled_session(params: StdioServerParameters, errlog: Any, child: str,
                          ) -> dict[str, Any]:
    seen: dict[str, Any] = {}
    async with _client(params, errlog) as client:
        seen["list"] = _json(await client.call_tool("list_sessions", {}))
        seen["by_title"] = _json(await client.call_tool("search_sessions",
                                                        {"query": "edge proxy"}))
        seen["by_text"] = _json(await client.call_tool("search_sessions",
                                                       {"query": "syslog", "limit": 5}))
        seen["none"] = _json(await client.call_tool("search_sessions",
                                                    {"query": "AND \"( NEAR"}))
        seen["no_word"] = await client.call_tool("search_sessions", {"query": "?!"})
        seen["compact"] = _json(await client.call_tool("compact_session", {"session": child}))
        seen["resources"] = (await client.list_resources()).resources
    return seen


def test_mcp_titles_and_search_come_from_the_sessions_index(tmp_path: Path) -> None:
    """A session renamed with 'rollchat rename' is listed, found and compacted under that
    title; search_sessions goes through the index (the title is searched too, any text is
    safe, each hit is id, title, date, number and a snippet)."""
    made = make_sessions(tmp_path / "sessions")
    config = tmp_path / "config.yml"
    config.write_text(OFFLINE_CONFIG, encoding="utf-8")
    renamed = CliRunner().invoke(build_cli(), ["rename", made.child, "Edge", "proxy", "rollout",
                                           "--sessions-dir", str(made.root)])
    assert renamed.exit_code == 0, renamed.output
    errlog = (tmp_path / "server.err").open("w+", encoding="utf-8")
    with errlog:
        seen = asyncio.run(asyncio.wait_for(_titled_session(
            _params(tmp_path, made.root, config), errlog, made.child), 90))

    child, parent = seen["list"]["sessions"]
    assert child["title"] == "Edge proxy rollout"  # the header's Title, not the first query
    assert parent["title"] == "Let's design the rate limiter for the gateway."
    (hit,) = seen["by_title"]["hits"]  # words only the title holds
    assert set(hit) == {"id", "title", "date", "number", "snippet"}
    assert (hit["id"], hit["title"], hit["number"]) == (made.child, "Edge proxy rollout", 1)
    assert hit["snippet"] == ""  # only the title matched: not repeated as the snippet
    (text_hit,) = seen["by_text"]["hits"]
    assert text_hit["id"] == made.child and "**syslog**" in text_hit["snippet"]
    assert seen["none"]["hits"] == []  # FTS5 syntax is just words here
    assert seen["no_word"].is_error and "needs a word" in _text(seen["no_word"])
    assert seen["compact"]["title"] == "Edge proxy rollout"
    titles = {r.name: r.title for r in seen["resources"]}
    assert titles[made.child] == "Edge proxy rollout"
    out = CliRunner().invoke(build_cli(), ["compact", made.child, "--json", "--sessions-dir",
                                       str(made.root), "--config", str(config)])
    assert out.exit_code == 0, out.output
    assert json.loads(out.stdout)["title"] == "Edge proxy rollout"
