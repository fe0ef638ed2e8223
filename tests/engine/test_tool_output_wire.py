"""Tool output never floods the context, against the local OpenAI and Anthropic wire servers
(counting mode, a 4,000-token window, orphan tool messages refused as real providers do): a
2 MB result is cut to its head and tail and read back page by page while the transcript keeps
it whole; results are shortened once and stay byte-identical, so each request starts with the
previous one; an automatic compaction in a tool-heavy session keeps calls with their results."""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pytest

from rollchat.config.settings import SessionConfig, ToolsConfig
from rollchat.domain import Message
from rollchat.providers.base import ToolSpec
from rollchat.storage.transcript import parse
from rollchat.tools import ARCHIVE_TOOL_NAME, Tool
from tests.compaction.test_autocompact import COUNTER, summary_text
from tests.compaction.test_autocompact_wire import (
    WINDOW,
    Session,
    ends_with_tool_result,
    start,
    system_of,
    tool_names,
    tool_pairs_intact,
)
from tests.wire_servers import (
    AnthropicDialect,
    OpenAIDialect,
    Reply,
    WireServer,
    last_user_text,
    text,
    tool,
)

HINT = re.compile(r'session_archive_read (\{"tool_call": "[^"]*", "offset": \d+\})')
SHORTENED = "result shortened to save context: "


def build_log(size: int) -> str:
    """A build's output of about ``size`` chars: passing steps, then the failure at the end."""
    steps, n, length = [], 0, 0
    while length < size:
        steps.append(f"[{n:06d}] CC src/module_{n}.c -o build/module_{n}.o ... ok")
        length += len(steps[-1]) + 1
        n += 1
    return "\n".join([*steps, "src/ledger.c:88: error: 'cents' undeclared",
                      "make: *** [Makefile:12: build] Error 1", "BUILD FAILED"])


TWO_MB = build_log(2 * 1024 * 1024)


def results_of(body: dict[str, Any]) -> dict[str, str]:
    """Tool results of a request body (either dialect), by tool call id."""
    out: dict[str, str] = {}
    for m in body["messages"]:
        if m.get("role") == "tool":
            out[m["tool_call_id"]] = m["content"]
        elif isinstance(m.get("content"), list):
            for b in m["content"]:
                if b.get("type") == "tool_result":
                    out[b["tool_use_id"]] = b["content"]
    return out


def last_result(body: dict[str, Any]) -> str:
    return list(results_of(body).values())[-1]


def pieces(body: dict[str, Any]) -> list[str]:
    """The request's input as the provider reads it (tools, system, messages), without the
    cache_control markers (where to cache, not what is cached)."""
    def strip(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: strip(v) for k, v in value.items() if k != "cache_control"}
        return [strip(v) for v in value] if isinstance(value, list) else value

    return [json.dumps(strip(body.get("tools") or []), sort_keys=True),
            json.dumps(strip(body.get("system") or ""), sort_keys=True),
            *(json.dumps(strip(m), sort_keys=True) for m in body["messages"])]


@dataclass
class Model:
    """The scripted model. "build": calls ``build``; a cut result: reads the rest where its
    marker says, once; "read call_x at N": reads that result; "work N": calls ``read_file``
    N times, one per round; summaries and restorations as the real flows expect them."""

    reads: list[dict[str, Any]] = field(default_factory=list)
    calls: int = 0

    def _call(self, name: str, args: dict[str, Any]) -> Reply:
        self.calls += 1
        return tool(name, args, tool_id=f"call_{self.calls:03d}")

    def __call__(self, body: dict[str, Any]) -> Reply:
        if system_of(body).startswith("You write the summary"):
            return text(summary_text(60, marker="summarized"))
        user = last_user_text(body)
        if user.startswith("CONTEXT RESTORATION"):
            return text("Restored the summary: builds and files. Ready to continue.")
        after_tool = ends_with_tool_result(body)
        if user == "build" and not after_tool:
            return self._call("build", {})
        if after_tool and (hint := HINT.search(last_result(body))) and not self.reads:
            self.reads.append(json.loads(hint.group(1)))
            return self._call(ARCHIVE_TOOL_NAME, self.reads[-1])
        if (asked := re.fullmatch(r"read (\S+) at (\d+)", user)) and not after_tool:
            return self._call(ARCHIVE_TOOL_NAME, {"tool_call": asked[1],
                                                  "offset": int(asked[2])})
        if work := re.match(r"\[(\d+)\] work (\d+)", user):
            done = _results_since_user(body)
            if done < int(work[2]):
                return self._call("read_file", {"path": f"src/f{work[1]}_{done}.py"})
        return text(f"Done with {user[:40]!r}: the build fails in ledger.c, cents is undeclared.")


def _results_since_user(body: dict[str, Any]) -> int:
    count = 0
    for m in reversed(body["messages"]):
        if m.get("role") == "tool":
            count += 1
        elif isinstance(m.get("content"), list) and any(
                b.get("type") == "tool_result" for b in m["content"]):
            count += sum(b.get("type") == "tool_result" for b in m["content"])
            if any(b.get("type") == "text" for b in m["content"]):
                break
        elif m.get("role") == "user":
            break
    return count


def read_file(arguments: Mapping[str, object]) -> str:
    path = str(arguments.get("path"))
    return "\n".join(f"{n:3d}  def handler_{n}(request):  # {path}" for n in range(20))


SPECS = {"build": ToolSpec("build", "Build the project.", {"type": "object"}),
         "read_file": ToolSpec("read_file", "Read a file.", {"type": "object", "properties": {
             "path": {"type": "string"}}})}


@pytest.fixture(params=["openai", "anthropic"])
def dialect(request: pytest.FixtureRequest) -> OpenAIDialect | AnthropicDialect:
    return OpenAIDialect() if request.param == "openai" else AnthropicDialect()


@pytest.fixture
def server(dialect: OpenAIDialect | AnthropicDialect) -> Iterator[WireServer]:
    with WireServer(dialect, window=WINDOW, responder=Model(), strict_tools=True) as s:
        yield s


def with_tools(session: Session, build_output: str = TWO_MB) -> Session:
    tools = session.app.session.engine.tools
    tools["build"] = Tool(SPECS["build"], lambda arguments: build_output)
    tools["read_file"] = Tool(SPECS["read_file"], read_file)
    return session


def saved_results(session: Session) -> dict[str, str]:
    """Every tool result in the session files, by call id (parsed back from the markdown)."""
    out: dict[str, str] = {}
    for path in sorted(session.built.store.root.glob("*.md")):
        for turn in parse(path.read_text(encoding="utf-8")).turns:
            out.update({ex.call.id: ex.result for ex in turn.tools})
    return out


def chat_bodies(server: WireServer) -> list[dict[str, Any]]:
    return [b for b in server.bodies if not system_of(b).startswith("You write the summary")]


# ---------------------------------------------------------------- a 2 MB result


def test_a_2_mb_result_fits_the_window_keeps_its_end_and_is_read_back_whole(
        tmp_path: Path, server: WireServer) -> None:
    session = with_tools(start(tmp_path, server))
    turn = session.built.send("build")
    assert turn.status == "ok", turn.error
    assert server.rejected == []
    assert all(r.prompt_tokens is not None and r.prompt_tokens <= WINDOW for r in server.requests)
    build_call = turn.tools[0].call.id
    sent = results_of(server.bodies[1])[build_call]
    limit = session.app.session.output.limit
    assert limit == WINDOW // 10 and COUNTER.count_text(sent) <= limit
    assert sent.startswith(TWO_MB[:40]) and sent.endswith("BUILD FAILED")  # the failure is seen
    assert f"of {len(TWO_MB):,} chars" in sent and "cut from the middle" in sent
    # the model followed the marker: the archive tool returned the text right after the head
    [read] = server.responder.reads  # type: ignore[union-attr]
    head = sent.split("\n[... ")[0]
    assert read == {"tool_call": build_call, "offset": len(head)}
    page = last_result(server.bodies[2])
    assert page.startswith(f"Tool result of {build_call} (build, the current turn): chars "
                           f"{len(head):,}-")
    body = page.split("\n", 1)[1].rsplit("\n", 1)[0]
    assert TWO_MB[len(head):].startswith(body) and len(body) > 500
    assert COUNTER.count_text(page) <= limit  # a page fits as it is: no cut of a cut
    # nothing lost: the transcript has the 2 MB result whole, and the archive read as well
    assert saved_results(session)[build_call] == TWO_MB
    assert turn.tools[0].result == TWO_MB


def test_a_cut_result_is_read_back_in_a_later_turn_by_its_offset(
        tmp_path: Path, server: WireServer) -> None:
    session = with_tools(start(tmp_path, server))
    build_call = session.built.send("build").tools[0].call.id
    offset = len(TWO_MB) - 5000
    turn = session.built.send(f"read {build_call} at {offset}")
    assert turn.status == "ok" and server.rejected == []
    page = last_result(chat_bodies(server)[-1])
    assert page.startswith(f"Tool result of {build_call} (build, query 1 of this session): "
                           f"chars {offset:,}-")
    assert "BUILD FAILED" in page or "chars more" in page
    assert TWO_MB[offset:offset + 200] in page


def test_max_result_tokens_from_the_config(tmp_path: Path, server: WireServer) -> None:
    session = with_tools(start(tmp_path, server))
    core = session.app.session
    core.config = replace(core.config, tools=ToolsConfig(max_result_tokens=150))
    core.output.config = core.config.tools
    core.output.resize(WINDOW)
    turn = session.built.send("build")
    sent = results_of(server.bodies[1])[turn.tools[0].call.id]
    assert COUNTER.count_text(sent) <= 150 and sent.endswith("BUILD FAILED")


# ---------------------------------------------------------------- the stable prefix


def test_each_result_is_shortened_once_and_each_request_starts_with_the_previous(
        tmp_path: Path, dialect: OpenAIDialect | AnthropicDialect) -> None:
    with WireServer(dialect, window=16_000, responder=Model(), strict_tools=True) as server:
        session = with_tools(start(tmp_path, server, window=16_000), build_output="x")
        for i in range(12):
            assert session.built.send(f"[{i}] work {1 + i % 3}").status == "ok"
    assert server.rejected == [] and not session.built.compactions
    bodies = chat_bodies(server)
    seen: dict[str, list[str]] = {}
    breaks = 0
    for previous, body in itertools.pairwise(bodies):
        before, now = pieces(previous), pieces(body)
        if now[:len(before)] != before:
            breaks += 1  # a batch of older results shortened: the only change allowed
            changed = [(a, b) for a, b in zip(before, now, strict=False) if a != b]
            assert all(SHORTENED in b and SHORTENED not in a for a, b in changed), changed
        for call_id, content in results_of(body).items():
            versions = seen.setdefault(call_id, [])
            if not versions or versions[-1] != content:
                versions.append(content)
    assert all(len(v) <= 2 for v in seen.values())  # whole, then shortened: once
    assert all(SHORTENED in v[1] for v in seen.values() if len(v) == 2)
    assert any(len(v) == 2 for v in seen.values())
    assert breaks <= len(bodies) // 4, (breaks, len(bodies))
    shortened = next(v[1] for v in seen.values() if len(v) == 2)
    assert '{"tool_call": "call_' in shortened  # it says how to read it whole


def test_the_estimate_counts_the_tools_schemas(tmp_path: Path, server: WireServer) -> None:
    session = start(tmp_path, server)
    core = session.app.session
    pending = [Message("user", "hello")]
    bare = core.estimate(pending)
    with_tools(session)
    specs = list(core.engine.offered())
    assert {s.name for s in specs} == {"build", "read_file", ARCHIVE_TOOL_NAME}
    grown = core.estimate(pending)
    assert grown - bare == COUNTER.count_messages("", [], specs) - COUNTER.count_messages(
        "", [], [])
    session.built.send("hello")
    assert server.requests[0].prompt_tokens is not None
    assert abs(grown - server.requests[0].prompt_tokens) <= 0.1 * grown
    assert tool_names(server.bodies[0]) == {"build", "read_file", ARCHIVE_TOOL_NAME}


# ---------------------------------------------------------------- compaction among tools


def test_automatic_compaction_in_a_tool_heavy_session_keeps_calls_with_results(
        tmp_path: Path, server: WireServer) -> None:
    session = with_tools(start(tmp_path, server, session=SessionConfig(keep_recent_turns=2)))
    i = 0
    while len(session.built.compactions) < 2:
        turn = session.built.send(f"[{i}] work {1 + i % 3}")
        assert turn.status == "ok", (i, turn.error)
        i += 1
        assert i < 80
    assert server.rejected == []  # no orphan result or unanswered call was ever sent
    bodies = chat_bodies(server)
    assert all(tool_pairs_intact(b) for b in bodies)
    restores = [n for n, b in enumerate(bodies)
                if last_user_text(b).startswith("CONTEXT RESTORATION")]
    assert len(restores) == 2
    for n in restores:
        first = [m for m in bodies[n + 1]["messages"] if m["role"] != "system"]
        kept = first[2:]  # after the restoration exchange: the kept tail, then the new message
        assert kept[0]["role"] == "user"
        assert isinstance(kept[0]["content"], str) or all(
            b.get("type") == "text" for b in kept[0]["content"])  # a user turn, not a result
        assert any(results_of({"messages": kept}))  # tool exchanges were in the kept tail
    # nothing lost: every result the tools gave is in the transcripts, whole
    given = {c: read_file(a) for c, a in _calls(bodies).items()}
    saved = saved_results(session)
    assert given and all(saved[c] == r for c, r in given.items())


def _calls(bodies: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The read_file calls the model made, by id, with their arguments."""
    out: dict[str, dict[str, Any]] = {}
    for body in bodies:
        for m in body["messages"]:
            for call in m.get("tool_calls") or []:
                if call["function"]["name"] == "read_file":
                    out[call["id"]] = json.loads(call["function"]["arguments"])
            for b in m["content"] if isinstance(m.get("content"), list) else []:
                if b.get("type") == "tool_use" and b["name"] == "read_file":
                    out[b["id"]] = b["input"]
    return out


def test_ctrl_c_while_a_tool_runs_leaves_a_request_the_provider_accepts(
        tmp_path: Path, server: WireServer) -> None:
    session = with_tools(start(tmp_path, server))

    def stopped(arguments: Mapping[str, object]) -> str:
        raise KeyboardInterrupt  # the user pressed Ctrl-C while the tool ran

    session.app.session.engine.tools["read_file"] = Tool(SPECS["read_file"], stopped)
    turn = session.built.send("[0] work 2")
    assert turn.status == "interrupted"
    [(call, cancelled)] = [(ex.call.id, ex.result) for ex in turn.tools]
    session.app.session.engine.tools["read_file"] = Tool(SPECS["read_file"], read_file)
    assert session.built.send("[1] work 1").status == "ok"
    assert server.rejected == []  # the cancelled call was answered, as it was recorded
    assert results_of(chat_bodies(server)[-1])[call] == cancelled
    [saved] = [parse(p.read_text()) for p in session.built.store.root.glob("*.md")]
    assert [t.status for t in saved.turns] == ["interrupted", "ok"]
