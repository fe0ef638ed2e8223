"""Memory in the chat, as a user meets it: remember / memory / forget typed at the prompt,
facts extracted at compaction and exit (shown, one dim line each), an extraction that fails
costing one warning, the memory_search tool, and extraction while idle at a real prompt."""

from __future__ import annotations

import io
import json
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from rich.console import Console

from rollchat.config.settings import AgentConfig, Config, MemoryConfig, SessionConfig
from rollchat.domain import Usage
from rollchat.engine.core import EngineSettings
from rollchat.memory.keeper import Memory
from rollchat.memory.store import MemoryStore
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
from rollchat.ui.app import ChatApp
from rollchat.ui.render import Renderer
from rollchat.ui.repl import handle_line
from tests.e2e import PROMPT, write_config
from tests.memory import project_memory
from tests.terminal import Screen, Terminal, run_chat


@dataclass
class Chat:
    app: ChatApp
    buffer: io.StringIO
    memory: MemoryStore

    def type(self, line: str, settle: bool = True) -> str:
        """One line at the prompt; what it drew, and (``settle``) what the extractions it
        started in the background found, drawn once they are done (as before the next
        prompt)."""
        start = len(self.buffer.getvalue())
        handle_line(self.app, line)
        memory = self.app.session.memory
        if settle and memory is not None:
            assert memory.wait(10)
            for event in memory.take():
                self.app.draw(event)
        return self.buffer.getvalue()[start:]

    def exit(self) -> str:
        start = len(self.buffer.getvalue())
        self.app.exit()
        return self.buffer.getvalue()[start:]


def make_chat(tmp_path: Path, provider: object | None = None, *,
              timeout: float = 30.0, exit_seconds: float = 10.0,
              facts: MemoryStore | None = None) -> Chat:
    sessions = tmp_path / "sessions"
    agent = AgentConfig(provider="offline", model="offline")
    config = Config(session=SessionConfig(dir=sessions),
                    memory=MemoryConfig(user_dir=tmp_path / "user"))
    provider = provider or OfflineProvider(word_delay=0)
    store = SessionStore(sessions)
    store.ensure()
    memory = facts or MemoryStore(sessions, agent.key, user_dir=tmp_path / "user")
    engine = EngineSettings(provider, model="offline", system="You help.",  # type: ignore[arg-type]
                    max_output_tokens=500, temperature=None, retry=RetryPolicy(0, 0.0, 0.0))
    session = Session(config=config, agent=agent, engine_settings=engine, summary_provider=provider,  # type: ignore[arg-type]
                      summary_model="offline", provider_name="offline", store=store,
                      confirm=lambda q: False, context_window=32_000,
                      memory=Memory(memory, provider, model="offline", timeout=timeout,
                                    exit_seconds=exit_seconds))  # type: ignore[arg-type]
    buffer = io.StringIO()
    renderer = Renderer(Console(file=buffer, width=200, color_system=None,
                                force_terminal=False), interactive=False)
    return Chat(ChatApp(session, renderer), buffer, memory)


def test_remember_memory_and_forget_at_the_prompt(tmp_path: Path) -> None:
    chat = make_chat(tmp_path)
    assert "Remembered: prefers tabs over spaces (forget 1)" in chat.type(
        "remember prefers tabs over spaces")
    assert "Remembered: the staging DB is postgres 15 (forget 2)" in chat.type(
        "/remember decision: the staging DB is postgres 15")
    listing = chat.type("memory")
    assert "1  prefers tabs over spaces  preference" in listing
    assert "2  the staging DB is postgres 15  decision" in listing
    assert "Forgot 1: prefers tabs over spaces" in chat.type("forget 1")
    assert "prefers tabs" not in chat.type("memory")
    assert "there is no fact 7" in chat.type("forget 7")
    assert "usage: forget ID" in chat.type("/forget tabs")
    assert "usage: remember TEXT" in chat.type("/remember")
    # a question that starts with the word is chat, not a command
    assert chat.type("remember what we said about tabs?").count("Remembered") == 0
    assert [f.text for f in chat.memory.facts()] == ["the staging DB is postgres 15"]


def test_facts_are_extracted_at_compaction_and_exit_and_shown(tmp_path: Path) -> None:
    chat = make_chat(tmp_path)
    chat.type("I prefer short answers. We decided to deploy on Fridays.")
    shown = chat.type("compact")
    assert "Remembered: prefers short answers (forget 1)" in shown
    assert "Remembered: decided to deploy on Fridays (forget 2)" in shown
    chat.type("My manager is Ana Lopez.")
    assert "Remembered: user's manager is Ana Lopez (forget 3)" in chat.exit()
    facts = chat.memory.facts()
    assert [(f.category, f.source_turn) for f in facts] == [
        ("preference", 1), ("decision", 1), ("contact", 1)]
    assert facts[0].source_session != facts[2].source_session  # parent, then child
    episodes = chat.memory.episodes()
    assert [e.session_id for e in episodes] == [facts[0].source_session,
                                                facts[2].source_session]
    assert "**Decisions Made:**" in episodes[0].summary


def test_a_forgotten_fact_never_comes_back(tmp_path: Path) -> None:
    chat = make_chat(tmp_path)
    chat.type("I prefer tabs over spaces.")
    assert "Remembered: prefers tabs over spaces (forget 1)" in chat.type("compact")
    chat.type("forget 1")
    chat.type("As I said, I prefer tabs over spaces.")
    shown = chat.type("compact")
    assert "Remembered" not in shown
    chat.type("Really: I prefer tabs over spaces!")
    assert "Remembered" not in chat.exit()
    assert chat.memory.facts() == []
    again = make_chat(tmp_path)  # a later session: still forgotten
    again.type("remember prefers tabs over spaces")
    assert again.memory.facts() == []


@dataclass
class BrokenExtraction:
    """A model that chats and summarizes fine, but answers fact extraction badly."""

    mode: str  # "prose" (not JSON), "slow" (past the timeout), "error" (a provider error)
    inner: OfflineProvider = field(default_factory=lambda: OfflineProvider(word_delay=0))
    name: str = "offline"

    def stream(self, request: ChatRequest) -> Iterator[StreamEvent]:
        if request.purpose != "memory":
            yield from self.inner.stream(request)
            return
        if self.mode == "error":
            from rollchat.providers.base import ServerError

            raise ServerError("server error 500: extraction broke")
        if self.mode == "slow":
            yield TextDelta("[")
            time.sleep(0.3)
            yield TextDelta("]")
        else:
            yield TextDelta("Sure! Here are the facts you asked for: tabs, Fridays.")
        yield UsageEvent(Usage(10, 10))
        yield Done("end")


def test_extraction_failure_costs_only_a_warning(tmp_path: Path) -> None:
    for mode, why in (("prose", "not JSON"), ("slow", "did not answer within 0.1s"),
                      ("error", "extraction broke")):
        root = tmp_path / mode
        chat = make_chat(root, BrokenExtraction(mode), timeout=0.1)
        chat.type("I prefer tabs over spaces.")
        shown = chat.type("compact")
        assert shown.count("Warning:") == 1, shown
        assert "no facts extracted this time: " in shown and why in shown
        assert "Starting new session with summary" in shown  # the compaction went on
        answer = chat.type("what did I prefer?")
        assert "tabs" in answer  # the chat goes on
        end = chat.exit()
        assert "Saved session" in end and "Remembered" not in end
        assert chat.memory.facts() == []
        assert len(chat.memory.episodes()) == 2  # the summaries were kept all the same


def test_invalid_items_are_skipped_and_low_confidence_left_out(tmp_path: Path) -> None:
    @dataclass
    class Replies(BrokenExtraction):
        def stream(self, request: ChatRequest) -> Iterator[StreamEvent]:
            if request.purpose != "memory":
                yield from self.inner.stream(request)
                return
            items = [{"text": "prefers tabs", "category": "preference", "confidence": 0.95,
                      "turn": 1},
                     {"text": "maybe likes jazz", "category": "preference", "confidence": 0.5},
                     {"text": "x", "category": "hobby", "confidence": 0.9},
                     {"text": "uses Linux", "category": "background", "confidence": 0.8,
                      "turn": 1},
                     # citing no message of the user's: it cannot be checked, so not kept
                     {"text": "uses Emacs", "category": "background", "confidence": 0.8,
                      "turn": 99}]
            yield TextDelta("```json\n" + json.dumps(items) + "\n```")
            yield Done("end")

    chat = make_chat(tmp_path, Replies("ok"))
    chat.type("I prefer tabs; I use Linux and Emacs.")
    shown = chat.type("compact")
    assert "Warning: memory: 1 invalid fact in the model's reply skipped" in shown
    assert "Remembered: prefers tabs (forget 1)" in shown
    assert "Remembered: uses Linux (forget 2)" in shown and "jazz" not in shown
    assert "memory: 1 fact not kept: not in the words of a message of yours" in shown
    assert [f.text for f in chat.memory.facts()] == ["prefers tabs", "uses Linux"]
    assert [f.source_turn for f in chat.memory.facts()] == [1, 1]


def test_memory_search_tool_reads_facts_and_episodes(tmp_path: Path) -> None:
    chat = make_chat(tmp_path)
    chat.type("remember the deploy key lives in vault under ops/deploy")
    chat.type("We decided to use blue-green deploys.")
    chat.type("compact")
    shown = chat.type('use memory_search {"query": "deploy key"}')
    assert "memory_search" in shown and "← memory_search" in shown
    turn = chat.app.session.state.turns[-1]
    result = turn.tools[0].result
    assert "[1] the deploy key lives in vault under ops/deploy" in result
    assert "Episode: session" in result and "blue-green" in result
    specs = [s.name for s in chat.app.session.engine.offered()]
    assert "memory_search" in specs  # memory holds something: offered with every request


def test_idle_extraction_in_a_terminal_never_blocks_input(tmp_path: Path) -> None:
    """As a terminal runs the chat (in process, tests/terminal.py)."""
    config = write_config(tmp_path / "rollchat.yml",
                          "memory:\n  idle_seconds: 0.5\n  user_dir: user\n"
                          "ui:\n  offline_word_delay: 0\n")
    screens: list[Screen] = []

    def script(term: Terminal) -> None:
        screens.append(term.screen)
        term.expect(PROMPT)
        term.sendline("I prefer dark mode in every editor.")
        term.expect("Time:")
        term.expect(PROMPT)
        term.expect(r"Remembered: prefers dark mode in every editor \(forget 1\)", timeout=15)
        term.sendline("what do I prefer?")  # the prompt still takes input
        term.expect("dark mode")
        term.expect(PROMPT)
        # idle again: the next extraction reads the turns since the last one (the question,
        # and this new statement); that it ran is shown by the new fact, and that it found
        # nothing new in what came before by the old one not remembered again (no wait on
        # the clock)
        term.sendline("I prefer short answers.")
        term.expect("Time:")
        found = term.expect(r"Remembered: (.*) \(forget 2\)", timeout=15)
        assert found[1] == "prefers short answers"
        term.expect(PROMPT)
        term.sendline("memory")
        term.expect("2 facts; forget ID")
        term.expect(PROMPT)
        term.sendline("exit")
        term.expect("Goodbye!")

    assert run_chat(tmp_path, ["--config", str(config)], script) == 0
    [screen] = screens
    assert "Remembered" not in screen.text()[screen.seen:]  # after the goodbye
    store = MemoryStore(tmp_path / "sessions", "assistant", user_dir=tmp_path / "user",
                        **project_memory(tmp_path / "home", tmp_path))
    assert [f.text for f in store.facts()] == ["prefers dark mode in every editor",
                                               "prefers short answers"]


def test_episodes_carry_the_titles_of_their_sessions(tmp_path: Path) -> None:
    """An episode is named by its session's title, as the sessions index lists it: the one
    given with 'title', else the one written with the summary."""
    chat = make_chat(tmp_path)
    chat.type("We decided to deploy on Fridays.")
    chat.type("title Release train")
    chat.type("compact")
    chat.type("What about rollbacks?")
    chat.exit()
    episodes = chat.memory.episodes()
    assert len(episodes) == 2 and episodes[0].title == "Release train"
    listed = {s.session_id: s.title for s in SessionStore(tmp_path / "sessions").index.recent()}
    assert [e.title for e in episodes] == [listed[e.session_id] for e in episodes]
    assert episodes[1].title  # the child's: from its summary, or its first line
