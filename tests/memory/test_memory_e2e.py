"""Issue 16, point 7, end to end: a preference stated in session 1 shapes session 5, reached
through 4 automatic compactions, and then a fresh session started with no resume: the request
the model gets shows the fact. The whole CLI runs in process (config file, memory store, the
offline model's fact extraction, automatic compaction in a tiny window); only the provider is
wrapped, to record every request it is sent."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from rollchat import providers
from rollchat.cli.app import build_cli
from rollchat.memory.layers import PROFILE_HEADING, split_block
from rollchat.memory.store import MemoryStore
from rollchat.providers.base import ChatRequest, StreamEvent
from rollchat.storage.transcript import parse
from tests.e2e import user_memory
from tests.memory import project_memory

CONFIG = """\
models:
  offline:
    context_window: 2048
agents:
  assistant:
    provider: offline
    max_output_tokens: 256
ui:
  offline_word_delay: 0
memory:
  idle_seconds: 0
"""
FILLER = ("message {n} about the billing service: refunds are retried with backoff, the ledger "
          "is reconciled every night, invoices are rendered to PDF by a worker, the tax tables "
          "are loaded from a CSV at start-up, webhooks are signed with a shared secret and "
          "retried five times, and the reports for finance are built on the first of the month")


class Recorder:
    """The provider the CLI built, with every request it is sent kept."""

    def __init__(self, inner: Any, log: list[ChatRequest]) -> None:
        self.inner, self.log = inner, log

    def stream(self, request: ChatRequest) -> Iterator[StreamEvent]:
        self.log.append(request)
        return self.inner.stream(request)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


@pytest.fixture
def recorded(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> list[ChatRequest]:
    log: list[ChatRequest] = []
    build = providers.build_provider

    def recording(*args: Any, **kwargs: Any) -> Any:
        return Recorder(build(*args, **kwargs), log)

    monkeypatch.setattr(providers, "build_provider", recording)
    for name, sub in (("HOME", "home"), ("XDG_DATA_HOME", "home/data"),
                      ("XDG_CONFIG_HOME", "home/config")):
        monkeypatch.setenv(name, str(tmp_path / sub))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "rollchat.yml").write_text(CONFIG, encoding="utf-8")
    return log


def chat(*lines: str) -> str:
    # --trust-input: the piped input is the user speaking, facts taken from it (memory/keeper.py)
    result = CliRunner().invoke(build_cli(), ["--config", "rollchat.yml", "--trust-input"],
                                input="\n".join([*lines, "exit"]) + "\n")
    assert result.exit_code == 0, result.output
    return result.output


def test_a_preference_from_session_1_reaches_session_5_and_a_fresh_session(
        tmp_path: Path, recorded: list[ChatRequest]) -> None:
    output = chat("I prefer tabs over spaces", *(FILLER.format(n=n) for n in range(30)))
    sessions = {p.stem: parse(p.read_text(encoding="utf-8"))
                for p in (tmp_path / "sessions").glob("*.md")}
    [first] = [t for t in sessions.values() if t.header.resumed_from is None]
    chain = [first]
    while chain[-1].header.continued_in:
        [child] = chain[-1].header.continued_in
        chain.append(sessions[child])
    assert len(chain) >= 5, output  # at least 4 automatic compactions, one chain
    assert chain[0].turns[0].user == "I prefer tabs over spaces"
    store = MemoryStore(tmp_path / "sessions", "assistant",
                        user_dir=user_memory(tmp_path / "home"),
                        **project_memory(tmp_path / "home", tmp_path))
    [fact] = [f for f in store.facts() if "tabs over spaces" in f.text]
    assert fact.category == "preference" and fact.source_session == chain[0].header.session_id
    # session 5: every chat request after its restoration carries the fact in its profile
    fifth = chain[4].header.session_id
    chats = [r for r in recorded if r.purpose == "chat"]
    in_fifth = [r for r in chats if any(t.kind == "query" and t.user in last_typed(r)
                                        for t in chain[4].turns)]
    assert in_fifth, fifth
    assert all(PROFILE_HEADING in r.system and "tabs over spaces" in r.system
               for r in in_fifth)
    # session 1's first request could not know it yet
    assert "tabs over spaces" not in chats[0].system

    recorded.clear()  # a fresh session, no resume
    chat("how should I indent the new module?")
    first_request = next(r for r in recorded if r.purpose == "chat")
    assert all(m.role != "user" or not m.content.startswith("CONTEXT RESTORATION")
               for m in first_request.messages)  # nothing resumed
    assert "tabs over spaces" in first_request.system
    assert f"(session {first.header.session_id}, turn 1)" in first_request.system
    block, typed = split_block(first_request.messages[-1].content)
    assert typed == "how should I indent the new module?"
    assert block.startswith("<context>\nNow: ")


def last_typed(request: ChatRequest) -> str:
    users = [m for m in request.messages if m.role == "user"]
    return split_block(users[-1].content)[1] if users else ""
