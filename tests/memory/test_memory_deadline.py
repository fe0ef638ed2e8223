"""Fact extraction never holds the chat up: a compaction goes on while the model extracts in the
background (its facts drawn once found), and exit gives the model a deadline
(``memory.extract_timeout_seconds``), saying so in one dim line, then keeps what the offline
rules find, also for an extraction still under way from idleness or a compaction. Ctrl-C skips
the wait. A slow model, in-process and against the wire-format server; the timings asserted
are generous (the model stalls far longer than any of them)."""

from __future__ import annotations

import json
import signal
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pexpect
import pytest

from rollchat.providers.base import ChatRequest, Done, StreamEvent, TextDelta
from rollchat.providers.offline import OfflineProvider
from rollchat.storage.store import SessionStore
from tests.compaction.test_compact_resume_wire import S1, rollchat
from tests.e2e import PROMPT, clean_env, spawn, start_piped, write_config
from tests.memory.test_memory_chat import make_chat
from tests.wire_servers import WireServer, openai_server, text

__all__ = ["openai_server"]

TABS = "prefers tabs over spaces"


@dataclass
class HeldExtraction:
    """A model that chats and summarizes at once, but answers fact extraction only once
    ``release`` is set (its facts: what the rules find, with a confidence the model gives)."""

    release: threading.Event = field(default_factory=threading.Event)
    inner: OfflineProvider = field(default_factory=lambda: OfflineProvider(word_delay=0))
    name: str = "offline"
    asked: threading.Event = field(default_factory=threading.Event)

    def stream(self, request: ChatRequest) -> Iterator[StreamEvent]:
        if request.purpose != "memory":
            yield from self.inner.stream(request)
            return
        self.asked.set()
        self.release.wait(30)
        yield TextDelta(json.dumps([{"text": TABS, "category": "preference",
                                     "confidence": 0.9, "turn": 1}]))
        yield Done("end")


def test_compaction_goes_on_while_the_model_extracts(tmp_path: Path) -> None:
    model = HeldExtraction()
    chat = make_chat(tmp_path, model)
    chat.type("I prefer tabs over spaces.")
    shown = chat.type("compact", settle=False)
    assert "Starting new session with summary" in shown and "Ready to continue" in shown
    assert model.asked.wait(10) and not model.release.is_set()  # still extracting
    assert "Remembered" not in shown
    assert "tabs" in chat.type("what did I prefer?", settle=False)  # the chat goes on
    model.release.set()
    memory = chat.app.session.memory
    assert memory is not None and memory.wait(10)
    shown = chat.type("thanks", settle=False)  # drawn with the next output
    assert f"Remembered: {TABS} (forget 1)" in shown
    assert [f.text for f in chat.memory.facts()] == [TABS]


def test_exit_gives_a_slow_model_its_deadline_then_keeps_the_rules_facts(
        tmp_path: Path) -> None:
    chat = make_chat(tmp_path, HeldExtraction(), exit_seconds=1)
    chat.type("I prefer tabs over spaces.")
    began = time.monotonic()
    shown = chat.exit()
    assert time.monotonic() - began < 10  # the model would have taken 30 s
    assert "Remembering… (at most 1s; Ctrl-C skips it)" in shown
    assert ("memory: the model did not answer within 1s: only explicit statements were "
            "remembered this time (by the offline rules)") in shown
    assert f"Remembered: {TABS} (forget 1)" in shown  # the rules found it
    assert "Saved session" in shown and "Goodbye!" in shown
    assert shown.index("Remembering") < shown.index("Goodbye!")


def test_exit_waits_for_an_idle_extraction_only_until_its_deadline(tmp_path: Path) -> None:
    model = HeldExtraction()
    chat = make_chat(tmp_path, model, exit_seconds=1)
    chat.type("I prefer tabs over spaces.")
    assert chat.app.session.extract_memory()  # idle at the prompt: extraction under way
    assert model.asked.wait(10)
    assert not chat.app.session.extract_memory()  # one at a time
    began = time.monotonic()
    shown = chat.exit()
    assert time.monotonic() - began < 10
    assert "Remembering…" in shown and "did not answer within 1s" in shown
    assert f"Remembered: {TABS} (forget 1)" in shown
    assert [f.text for f in chat.memory.facts()] == [TABS]


def test_a_quick_extraction_at_exit_is_not_announced(tmp_path: Path) -> None:
    chat = make_chat(tmp_path)
    chat.type("I prefer tabs over spaces.")
    shown = chat.exit()
    assert f"Remembered: {TABS} (forget 1)" in shown
    assert "Remembering" not in shown and "Warning" not in shown


def test_a_zero_deadline_uses_the_rules_only(tmp_path: Path) -> None:
    model = HeldExtraction()
    chat = make_chat(tmp_path, model, exit_seconds=0)
    chat.type("I prefer tabs over spaces.")
    shown = chat.exit()
    assert "no time left at exit" in shown and f"Remembered: {TABS}" in shown
    assert not model.asked.is_set()


CONFIG_SLOW = """\
retry:
  max_retries: 0
summary:
  timeout_seconds: 20
memory:
  user_dir: user
  extract_timeout_seconds: 1
"""


def test_piped_exit_with_a_stalled_extraction_ends_within_its_deadline(
        openai_server: WireServer, tmp_path: Path) -> None:
    """Against the wire: the compaction's extraction stalls (60 s), the chat goes on, and exit
    gives it and its own 1 s before the rules keep the explicit statements."""
    openai_server.extraction_stall = 60
    openai_server.push(text("Rabbitmq is a fine choice."), text(S1), text("Ready to continue."),
                       text("Five retries."), text(S1))
    write_config(tmp_path / "slow.yml", CONFIG_SLOW)
    began = time.monotonic()
    out, err, code = rollchat(openai_server, tmp_path,
                              "I prefer rabbitmq for job queues.\ncompact\n"
                              "how many retries?\nexit\n", "--config", "slow.yml",
                              "--trust-input")  # (piped input is the user's: see memory/keeper.py)
    assert code == 0, err
    assert time.monotonic() - began < 50  # not the stall's 60 s (a loaded machine: ~30 s)
    assert "Five retries." in out  # answered while the compaction's extraction stalled
    assert "Remembering… (at most 1s; Ctrl-C skips it)" in out
    assert "memory: the model did not answer within 1s" in out
    assert "Remembered: prefers rabbitmq for job queues (forget 1)" in out
    assert out.index("Remembering") < out.index("Goodbye!")


@pytest.mark.parametrize("compact", [False, True], ids=["after-a-question", "after-compact"])
def test_ctrl_c_skips_the_wait_at_exit(openai_server: WireServer, tmp_path: Path,
                                       compact: bool) -> None:
    """In a terminal, Ctrl-C while ``exit`` waits for a stalled extraction skips the wait and
    keeps the rules' facts; right after ``compact`` too (the extraction the compaction left)."""
    openai_server.extraction_stall = 60
    openai_server.push(text("Tabs it is."), text(S1),
                       *([text("Ready to continue.")] if compact else []))
    cfg = write_config(tmp_path / "rollchat.yml",
                       CONFIG_SLOW.replace("extract_timeout_seconds: 1",
                                           "extract_timeout_seconds: 40"))
    child = spawn(tmp_path, "--config", str(cfg), "--provider", "openai", "--model",
                  "test-model", "--base-url", openai_server.url,
                  env=clean_env(tmp_path / "home", OPENAI_API_KEY="test"),
                  forked=True)  # (a Ctrl-C, not a start)
    try:
        child.expect(PROMPT)
        child.sendline("I prefer tabs over spaces.")
        child.expect("Tabs it is.")
        child.expect(PROMPT)
        if compact:
            child.sendline("compact")
            child.expect("Ready to continue", timeout=20)
            child.expect(PROMPT)
        child.sendline("exit")
        child.expect("Remembering…", timeout=20)
        child.sendintr()
        child.expect("fact extraction interrupted", timeout=10)
        child.expect(f"Remembered: {TABS}")
        child.expect("Goodbye!")
        child.expect(pexpect.EOF, timeout=10)
    finally:
        child.close(force=True)
    assert child.exitstatus == 0


def test_sigterm_does_not_wait_for_a_stalled_extraction(openai_server: WireServer,
                                                        tmp_path: Path) -> None:
    """Ending on a signal the extraction gets what is left of the summary's few seconds."""
    openai_server.extraction_stall = 60
    openai_server.push(text("Postgres it is."), text(S1))
    cfg = write_config(tmp_path / "rollchat.yml", CONFIG_SLOW.replace(
        "extract_timeout_seconds: 1", "extract_timeout_seconds: 40"))
    proc = start_piped(  # a process of its own (forked: the signal is not about its start)
        tmp_path, "--config", str(cfg), "--base-url", openai_server.url, "--model", "gpt-4o",
        "--trust-input",  # the piped input is mine
        env=clean_env(tmp_path / "home", OPENAI_API_KEY="test"))
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write("I prefer postgres for everything.\n")
    proc.stdin.flush()  # stdin stays open: the chat waits for the next line
    while "Time:" not in proc.stdout.readline():
        pass
    began = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=30)  # the stall is 60 s, the deadline 40 s
    assert time.monotonic() - began < 30  # not the extraction's 40 s deadline
    assert proc.returncode == 128 + signal.SIGTERM, err
    assert "memory: the model did not answer within" in out
    assert "Remembered: prefers postgres for everything" in out


def test_exit_right_after_compact_gives_the_parents_extraction_its_deadline(
        tmp_path: Path) -> None:
    """The child has no question yet: the exit still waits for the extraction the compaction
    left in the background, then keeps the rules' facts from the parent's turns."""
    model = HeldExtraction()
    chat = make_chat(tmp_path, model, exit_seconds=1)
    chat.type("I prefer tabs over spaces.")
    assert "Ready to continue" in chat.type("compact", settle=False)
    assert model.asked.wait(10)  # the compaction's extraction, held
    began = time.monotonic()
    shown = chat.exit()
    assert time.monotonic() - began < 10  # the model would have taken 30 s
    assert "Remembering… (at most 1s; Ctrl-C skips it)" in shown
    assert "did not answer within 1s" in shown
    assert f"Remembered: {TABS} (forget 1)" in shown
    assert shown.index("Remembered") < shown.index("Goodbye!")
    assert [f.text for f in chat.memory.facts()] == [TABS]


def test_exit_right_after_resume_gives_the_parents_extraction_its_deadline(
        tmp_path: Path) -> None:
    """``resume N`` saves the current session and extracts from it in the background; an
    ``exit`` before any question in the resumed one still waits for it."""
    earlier_chat = make_chat(tmp_path)
    earlier_chat.type("What is a hash map?")
    earlier_chat.exit()  # a session to resume
    [earlier] = SessionStore(tmp_path / "sessions").list_sessions().sessions
    model = HeldExtraction()
    chat = make_chat(tmp_path, model, exit_seconds=1)
    chat.type("I prefer tabs over spaces.")
    assert "Restoring context" in chat.type(f"resume {earlier.session_id}", settle=False)
    assert model.asked.wait(10)  # the saved session's extraction, held
    shown = chat.exit()
    assert "Remembering… (at most 1s; Ctrl-C skips it)" in shown
    assert f"Remembered: {TABS} (forget 1)" in shown
    assert [f.text for f in chat.memory.facts()] == [TABS]


def test_piped_compact_then_exit_keeps_the_facts(openai_server: WireServer,
                                                  tmp_path: Path) -> None:
    """As a user pipes it, against the wire: the compaction's extraction stalls, and the
    ``exit`` right after it (no question in the new session) still keeps the fact."""
    openai_server.extraction_stall = 60
    openai_server.push(text("Rabbitmq is a fine choice."), text(S1), text("Ready to continue."))
    write_config(tmp_path / "slow.yml", CONFIG_SLOW)
    out, err, code = rollchat(openai_server, tmp_path,
                              "I prefer rabbitmq for job queues.\ncompact\nexit\n",
                              "--config", "slow.yml", "--trust-input")
    assert code == 0, err
    assert "memory: the model did not answer within 1s" in out
    assert "Remembered: prefers rabbitmq for job queues (forget 1)" in out
    assert out.index("Remembered") < out.index("Goodbye!")
