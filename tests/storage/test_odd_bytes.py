"""Odd bytes (issue 10, point 2): a NUL, invalid UTF-8, a lone surrogate or an escape sequence,
typed, piped or answered, is kept (cleaned once where it enters: rollchat.text.normalize), and the
session stays listed, parseable, compactable and resumable."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rollchat.config.settings import AgentConfig, Config, SessionConfig
from rollchat.domain import Usage
from rollchat.engine.core import EngineSettings
from rollchat.events import Event, Notice
from rollchat.providers.base import (
    ChatRequest,
    Done,
    RetryPolicy,
    StreamEvent,
    TextDelta,
    UsageEvent,
)
from rollchat.providers.offline import OfflineProvider
from rollchat.session.core import Session
from rollchat.storage.store import SessionStore
from rollchat.storage.transcript import parse
from rollchat.text.normalize import clean
from tests.drive import drain
from tests.e2e import clean_env, write_config
from tests.examples_budget import examples
from tests.wire_servers import WireServer, openai_server, text

__all__ = ["openai_server"]

SYSTEM = "You are a test assistant."
SURROGATE = re.compile(r"[\ud800-\udfff]")
ANY_CHAR = st.characters(min_codepoint=0, max_codepoint=0x10FFFF, exclude_categories=())
ODD = st.sampled_from(["\x00", "\x1b[2J", "\x1b]0;title\x07", "\r", "\r\n", "\n", "\t", "\x7f",
                       "\x9b", "\ud800", "\udcff", "\ud83d\ude00", "\u202e", "é",
                       "## Query 9 (00:00:00)", "<!-- SESSION_SUMMARY_START -->", "**You:**"])
strings = st.lists(ODD | st.text(ANY_CHAR, max_size=6), min_size=1, max_size=6).map("".join)
# Bytes as a front end that decodes with surrogateescape would hand them over.
escaped_bytes = st.binary(min_size=1, max_size=40).map(
    lambda b: b.decode("utf-8", "surrogateescape"))
messages = (strings | escaped_bytes).filter(lambda s: bool(clean(s).strip()))
replies = st.lists(strings, min_size=1, max_size=4)  # the pieces a reply streams in


class Scripted:
    """Chat calls answered with scripted pieces (any text at all); summaries and restorations
    by the offline model. Records every request."""

    def __init__(self, answers: list[list[str]]) -> None:
        self.answers = list(answers)
        self.inner = OfflineProvider()
        self.requests: list[ChatRequest] = []

    def stream(self, request: ChatRequest) -> Iterator[StreamEvent]:
        self.requests.append(request)
        if request.purpose != "chat" or not self.answers:
            yield from self.inner.stream(request)
            return
        for piece in self.answers.pop(0):
            yield TextDelta(piece)
        yield UsageEvent(Usage(5, 5))
        yield Done()


def _session(store: SessionStore, provider: Scripted) -> Session:
    agent = AgentConfig(key="assistant", name="Assistant", provider="offline",
                        system_prompt=SYSTEM, max_output_tokens=512)
    config = Config(agents={"assistant": agent}, session=replace(SessionConfig(), dir=store.root))
    engine = EngineSettings(provider, model="offline", system=SYSTEM,
                    max_output_tokens=512, temperature=None, retry=RetryPolicy(0, 0.0, 0.0))
    return Session(config=config, agent=agent, engine_settings=engine, summary_provider=provider,
                   summary_model="offline", provider_name="offline", store=store,
                   confirm=lambda question: False, context_window=128_000)


def _sendable(request: ChatRequest) -> None:
    """What an HTTP provider would send: strict UTF-8 JSON, no NUL, no escape character."""
    texts = [request.system, *(m.content for m in request.messages)]
    body = json.dumps(texts, ensure_ascii=False).encode("utf-8")  # raises on a surrogate
    assert b"\x00" not in body and b"\x1b" not in body


@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(messages, replies), min_size=1, max_size=3), messages, replies)
def test_any_text_goes_through_turn_file_parse_compact_and_resume(
        exchanges: list[tuple[str, list[str]]], later: str, later_reply: list[str]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        store = SessionStore(Path(tmp))
        provider = Scripted([r for _, r in exchanges] + [later_reply])
        core = _session(store, provider)
        events: list[Event] = []
        for message, _ in exchanges:
            drain(core.turn(message), events.append)
        parent_id = core.state.session_id
        assert parent_id is not None
        drain(core.compact(), events.append)
        drain(core.turn(later), events.append)
        drain(core.exit(), events.append)
        assert not [e for e in events if isinstance(e, Notice) and e.level == "error"]

        # the files: listed, parsed back, holding what was typed and answered, cleaned
        listing = store.list_sessions()
        assert listing.problems == []
        assert {i.session_id for i in listing.sessions} == {parent_id, core.state.session_id}
        parent = store.load_transcript(parent_id)
        assert [t.user for t in parent.turns] == [clean(m) for m, _ in exchanges]
        assert [t.assistant for t in parent.turns] == [clean("".join(r)) for _, r in exchanges]
        assert parent.summary is not None
        raw = (Path(tmp) / f"{parent_id}.md").read_bytes()
        assert b"\x00" not in raw and parse(raw.decode("utf-8")) == parent
        child = store.load_transcript(core.state.session_id or "")
        assert [t.user for t in child.turns if t.kind == "query"] == [clean(later)]
        assert child.turns[-1].assistant == clean("".join(later_reply))

        # resumed later, in a new chat: from the parent's summary, as it was saved
        again = Scripted([])
        fresh = _session(store, again)
        number = next(i.number for i in listing.sessions if i.session_id == parent_id)
        resumed = drain(fresh.resume(str(number)), events.append)
        assert resumed is None and fresh.state.resumed_from == parent_id
        assert fresh.state.parent_summary == parent.summary
        for request in provider.requests + again.requests:
            _sendable(request)


def _rollchat(cwd: Path, data: bytes, *args: str, env: dict[str, str],
              ) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "rollchat", *args], cwd=str(cwd), input=data,
                          capture_output=True, timeout=120, env=env)


def test_odd_bytes_on_stdin_are_kept_listed_and_resumable(tmp_path: Path) -> None:
    env = clean_env(tmp_path / "home", PYTHONIOENCODING="utf-8:strict")
    piped = (b"nul \x00 here\n"
             b"latin \xe9t\xe9 and \xff\xfe junk\r\n"
             b"escape \x1b[2J\x1b]0;title\x07 done\n"
             b"compact\n"
             b"after \xc3\xa9 fine\n"
             b"exit\n")
    done = _rollchat(tmp_path, piped, env=env)
    assert done.returncode == 0, done.stderr
    out = done.stdout.decode("utf-8")  # what reached the terminal is UTF-8
    assert "Error" not in out and "Traceback" not in done.stderr.decode()
    assert b"\x1b" not in done.stdout and b"\x07" not in done.stdout
    assert "You: nul \u2400 here" in out and "latin \ufffdt\ufffd and \ufffd\ufffd junk" in out

    listing = json.loads(_rollchat(tmp_path, b"", "sessions", "--json", env=env).stdout)
    assert listing["problems"] == [] and len(listing["sessions"]) == 2
    parent = next(s for s in listing["sessions"] if s["parent"] is None)
    assert parent["has_summary"] and parent["queries"] == 3
    assert parent["first_query"] == "nul \u2400 here"
    path = tmp_path / "sessions" / parent["file"]
    users = [t.user for t in parse(path.read_bytes().decode("utf-8")).turns]
    assert users == ["nul \u2400 here", "latin \ufffdt\ufffd and \ufffd\ufffd junk",
                     "escape \u241b[2J\u241b]0;title\u2407 done"]

    # its child continues it: 'resume N' would offer the child, 'fork N' takes it as it is
    number = str(parent["number"]).encode()
    resumed = _rollchat(tmp_path, b"fork " + number + b"\nexit\n", env=env)
    assert resumed.returncode == 0, resumed.stderr
    shown = " ".join(resumed.stdout.decode("utf-8").split())
    assert f"Found: {parent['id']}" in shown and "Error" not in shown


def test_a_lone_surrogate_from_the_server_is_saved_and_the_next_calls_are_sent(
        openai_server: WireServer, tmp_path: Path) -> None:
    # The server's JSON escapes a lone surrogate ("\ud800"): the SDK hands it over as is.
    openai_server.push(text("half \ud800 pair and \x00 nul \x1b[2J"), text("second answer"),
                       text("Restored, ready."), text("third answer"))
    cfg = write_config(tmp_path / "rollchat.yml", "retry:\n  max_retries: 0\n"
                       "summary:\n  provider: offline\n")
    env = clean_env(tmp_path / "home", OPENAI_API_KEY="test", PYTHONIOENCODING="utf-8:strict")
    done = _rollchat(tmp_path, b"first \xff\nsecond\ncompact\nthird\nexit\n", "--config",
                     str(cfg), "--base-url", openai_server.url, "--model", "gpt-4o", env=env)
    assert done.returncode == 0, done.stderr
    out = done.stdout.decode("utf-8")
    assert "half \ufffd pair and \u2400 nul \u241b[2J" in out and "third answer" in out
    assert "Error" not in out and b"\x1b" not in done.stdout
    bodies = openai_server.bodies  # turn, turn, restoration, turn: each one sent
    assert len(bodies) == 4
    for body in bodies:
        assert not SURROGATE.search(json.dumps(body, ensure_ascii=False))
    from rollchat.memory.layers import split_block

    # what was typed, after the per-turn context block (date and time) the request adds to it
    assert "first \ufffd" in [split_block(m["content"])[1] for m in bodies[1]["messages"]
                               if m["role"] == "user"]
    assert any(m.get("content") == "half \ufffd pair and \u2400 nul \u241b[2J"
               for m in bodies[1]["messages"])
    listing = json.loads(_rollchat(tmp_path, b"", "sessions", "--json", env=env).stdout)
    assert listing["problems"] == [] and len(listing["sessions"]) == 2
    parent = next(s for s in listing["sessions"] if s["parent"] is None)
    assert parent["has_summary"]
    first = parse((tmp_path / "sessions" / parent["file"]).read_text("utf-8")).turns[0]
    assert first.user == "first \ufffd"
    assert first.assistant == "half \ufffd pair and \u2400 nul \u241b[2J"
