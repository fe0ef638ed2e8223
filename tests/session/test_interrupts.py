"""Ctrl-C and Ctrl-D at every point a user can press them, in a pseudo-terminal (offline model;
a local wire server where an answer or summary must still be coming when the Ctrl-C lands).

Each test pins the outcome documented in docs/interruptions.md: what the user sees, whether the
chat goes on, and that the session files keep every turn typed or received.
"""

from __future__ import annotations

import io
import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pexpect
import pytest
from rich.console import Console

from rollchat.config.settings import AgentConfig, Config, SummaryConfig
from rollchat.domain import Transcript
from rollchat.engine.core import EngineSettings
from rollchat.providers.base import ChatRequest, RetryPolicy, StreamEvent
from rollchat.providers.offline import OfflineProvider
from rollchat.storage.store import SessionStore
from rollchat.storage.transcript import SUMMARY_END, SUMMARY_START, parse, render_linked
from rollchat.ui.render import Renderer
from rollchat.ui.repl import finish, handle_line
from tests.drive import chat_app
from tests.e2e import PROMPT, clean_env, run_piped, spawn, write_config
from tests.wire_servers import (
    WireServer,
    held,
    openai_server,
    split_text,
    stall,
    text,
    tool,
)

__all__ = ["openai_server"]  # the fixture, imported for pytest

DELAY = 0.03  # seconds between the offline model's words: slow enough to interrupt
SECRET = "tell me about bananas. Also the shed key is under the flowerpot."
# an answer that streams in three parts; the server holds the last two back (see below)
_PARTS = split_text("Hello! This is the first part. The rest never comes: it waits for Ctrl-C.")
STALL_SECONDS = 600  # the server's hold on the rest: released when the test's server stops
SUMMARY = (f"{SUMMARY_START}\n**Background Context:** A short test chat.\n\n"
           "**Current Session Summary:**\n**Topics Discussed:**\n- greetings\n\n"
           f"**Decisions Made:**\n- none\n\n**Pending:**\n- none\n{SUMMARY_END}")


def _chat(tmp_path: Path, delay: float, *args: str) -> pexpect.spawn:
    # the exit summary is the model's even for these short chats (auto: the local one), so
    # that the rows about the exit summary have one to interrupt
    cfg = write_config(tmp_path / "rollchat.yml", f"ui:\n  offline_word_delay: {delay}\n"
                       "summary:\n  on_exit: model\n")
    child = spawn(tmp_path, "--config", str(cfg), *args, forked=True)  # (keys, not a start)
    child.expect(PROMPT)
    return child


def _wire_chat(tmp_path: Path, server: WireServer, *args: str) -> pexpect.spawn:
    """A chat with a model served by ``server`` (which can hold a reply back until the chat
    hangs up: the moment a Ctrl-C is sent then never decides what it interrupts)."""
    child = spawn(tmp_path, "--base-url", server.url, "--model", "gpt-4o", "--exit-summary",
                  "model", *args, env=clean_env(tmp_path / "home", OPENAI_API_KEY="test"),
                  forked=True)
    child.expect(PROMPT)
    return child


def _ask(child: pexpect.spawn, text: str) -> None:
    child.sendline(text)
    child.expect(r"Time: .*s \| Tokens")
    child.expect(PROMPT)


def _end(child: pexpect.spawn, *, eof: bool = False) -> None:
    """Exit (Ctrl-D or ``exit``), waiting for the exit summary (about a second with the
    offline model). Not cut with a Ctrl-C: on a loaded machine one sent as the summary starts
    could land after it, once the chat had ended, and kill the process (status by SIGINT)."""
    if eof:
        child.sendeof()
    else:
        child.sendline("exit")
    child.expect("Goodbye!")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0, child.before


def _sessions(tmp_path: Path) -> list[Transcript]:
    """Every session file, parsed; parents before children."""
    found = [parse(p.read_text(encoding="utf-8")) for p in (tmp_path / "sessions").glob("*.md")]
    return sorted(found, key=lambda t: (t.header.resumed_from is not None, t.header.date))


def _queries(t: Transcript) -> list[tuple[str, str]]:
    return [(turn.user, turn.status) for turn in t.turns if turn.kind == "query"]


# ---------------------------------------------------------------- at the prompt


def test_ctrl_c_and_ctrl_d_at_the_prompt(tmp_path: Path) -> None:
    """In one chat, in sequence: Ctrl-C at the empty prompt gives a new prompt; Ctrl-C with
    text discards that line only (nor is it kept in the input history); Ctrl-D with text does
    nothing and the text stays (sent by Enter); Ctrl-D at the empty prompt saves with the
    model's summary and exits 0."""
    child = _chat(tmp_path, 0)
    child.sendintr()
    child.expect(PROMPT)
    child.send("half typed draft")
    child.sendintr()
    child.expect(PROMPT)
    _ask(child, "hi")
    child.send("kept text")
    child.sendeof()  # prompt_toolkit: delete the character under the cursor (none at the end)
    child.send("\r")
    child.expect(r"Time: .*s \| Tokens")
    child.expect(PROMPT)
    _end(child, eof=True)
    [t] = _sessions(tmp_path)
    assert _queries(t) == [("hi", "ok"), ("kept text", "ok")]
    assert t.summary is not None and not t.summary.fallback
    history = (tmp_path / "home" / "data" / "rollchat" / "history").read_text()
    assert "hi" in history and "half typed draft" not in history


# ---------------------------------------------------------------- while an answer streams


def test_ctrl_c_while_streaming_keeps_the_partial_answer(
        openai_server: WireServer, tmp_path: Path) -> None:
    """The answer's first part arrives, then the server holds the rest back until the chat
    hangs up: the Ctrl-C lands while the answer streams however late this test sends it (the
    offline model's words came every 30 ms: a Ctrl-C sent after the last one, on a loaded
    machine, found the prompt and nothing was interrupted)."""
    first = _PARTS[0]
    openai_server.push(stall(STALL_SECONDS, after_chunks=2, text="".join(_PARTS)))
    child = _wire_chat(tmp_path, openai_server)
    child.sendline("hi")
    child.expect_exact(first.strip())
    child.sendintr()
    child.expect(r"interrupted: partial answer kept")
    child.expect(PROMPT)
    _ask(child, "hi again")
    _end(child)
    [t] = _sessions(tmp_path)
    assert _queries(t) == [("hi", "interrupted"), ("hi again", "ok")]
    assert t.turns[0].assistant.strip() == first.strip()  # the part that came, kept
    assert t.turns[1].assistant == "echo: hi again"
    assert t.summary is not None


def test_ctrl_d_while_streaming_is_plain_input_and_typeahead_is_kept(tmp_path: Path) -> None:
    child = _chat(tmp_path, DELAY)
    child.sendline("hi")
    child.expect("Hello!")
    child.send("typed ahead")
    child.sendeof()  # no prompt is reading: the terminal just passes the typed text on
    child.expect(r"Time: .*s \| Tokens")
    child.expect(PROMPT)
    child.send("\r")  # the typed-ahead text is in the new prompt: Enter sends it
    child.expect(r"Time: .*s \| Tokens")
    child.expect(PROMPT)
    _end(child)
    [t] = _sessions(tmp_path)
    assert _queries(t) == [("hi", "ok"), ("typed ahead", "ok")]
    assert t.turns[0].assistant.endswith("talk about?")


# ---------------------------------------------------------------- exit summary


def test_ctrl_c_during_the_exit_summary_saves_the_local_fallback(
        openai_server: WireServer, tmp_path: Path) -> None:
    openai_server.push(text("Hello there."), stall(STALL_SECONDS))  # the summary never comes
    child = _wire_chat(tmp_path, openai_server)
    _ask(child, "hi")
    child.sendline("exit")
    child.expect("Generating session summary")
    child.sendintr()
    child.expect(r"summary failed.*interrupted.*the local summary is used instead")
    _end_after_exit(child)
    [t] = _sessions(tmp_path)
    assert _queries(t) == [("hi", "ok")]
    assert t.summary is not None and t.summary.fallback
    assert t.header.total_queries == 1


def test_ctrl_d_during_the_exit_summary_is_ignored(tmp_path: Path) -> None:
    child = _chat(tmp_path, DELAY)
    _ask(child, "hi")
    child.sendline("exit")
    child.expect("Generating session summary")
    child.sendeof()
    _end_after_exit(child)
    [t] = _sessions(tmp_path)
    assert t.summary is not None and not t.summary.fallback


def test_second_ctrl_c_during_the_final_save_still_leaves_a_summary(
        openai_server: WireServer, tmp_path: Path) -> None:
    """The summary is held back by the server, so the first Ctrl-C always finds it under way
    (the offline model's took 1 s: one sent later on a loaded machine found it written)."""
    openai_server.push(text("Hello there."), stall(STALL_SECONDS))  # the summary never comes
    child = _wire_chat(tmp_path, openai_server)
    _ask(child, "hi")
    child.sendline("exit")
    child.expect("Generating session summary")
    child.sendintr()
    child.sendintr()  # lands in the summary, its fallback or the save: held until written
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    assert "Traceback" not in (child.before or "")
    [t] = _sessions(tmp_path)
    assert _queries(t) == [("hi", "ok")]
    assert t.summary is not None and t.summary.fallback


def _end_after_exit(child: pexpect.spawn) -> None:
    child.expect("Goodbye!")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0


# ---------------------------------------------------------------- compact


def test_ctrl_c_during_compact_summary_falls_back_and_continues(
        openai_server: WireServer, tmp_path: Path) -> None:
    # the summary never comes; then the child's acknowledgment
    openai_server.push(text("Hello there."), stall(STALL_SECONDS), text("Understood."))
    child = _wire_chat(tmp_path, openai_server)
    _ask(child, "hi")
    child.sendline("compact")
    child.expect("Generating session summary")
    child.sendintr()
    child.expect(r"summary failed.*interrupted")
    child.expect("Starting new session with summary")
    child.expect(r"Time: .*s \| Tokens")  # the acknowledgment, not interrupted
    child.expect(PROMPT)
    _ask(child, "hi again")
    _end(child)
    parent, kid = _sessions(tmp_path)
    assert _queries(parent) == [("hi", "ok")]
    assert parent.summary is not None and parent.summary.fallback
    assert kid.header.resumed_from == parent.header.session_id
    assert kid.turns[0].kind == "restored" and kid.turns[0].status == "ok"
    assert _queries(kid) == [("hi again", "ok")]


def test_ctrl_c_during_compact_restoration_keeps_the_child(
        openai_server: WireServer, tmp_path: Path) -> None:
    """The restoration's first part arrives, the rest is held until the chat hangs up (the
    offline model's acknowledgment ended about 1 s after 'I've reviewed': a Ctrl-C sent later
    on a loaded machine found the prompt)."""
    first = "Restored from the summary."
    reply = held(first, "Ready to continue where we stopped.")
    openai_server.push(text("Hello there."), text(SUMMARY), reply, text("Hi again."),
                       text(SUMMARY))
    child = _wire_chat(tmp_path, openai_server)
    _ask(child, "hi")
    child.sendline("compact")
    child.expect("Starting new session with summary")
    child.expect_exact(first)
    child.sendintr()
    child.expect(r"interrupted: partial answer kept")
    child.expect(PROMPT)
    _ask(child, "hi again")
    _end(child)
    parent, kid = _sessions(tmp_path)
    assert parent.summary is not None and not parent.summary.fallback
    restored = kid.turns[0]
    assert restored.kind == "restored" and restored.status == "interrupted"
    assert restored.assistant.strip() == first  # the part that came, kept
    assert _queries(kid) == [("hi again", "ok")] and kid.summary is not None


# ---------------------------------------------------------------- resume


def test_ctrl_c_during_resume_restoration_continues_from_the_summary(
        openai_server: WireServer, tmp_path: Path) -> None:
    env = clean_env(tmp_path / "home")
    assert run_piped(tmp_path, "hi\n", env=env).returncode == 0  # (the offline model)
    [old] = _sessions(tmp_path)
    before = next((tmp_path / "sessions").glob("*.md")).read_bytes()
    first = "Restored from the summary."
    reply = held(first, "Ready to continue where we stopped.")
    openai_server.push(reply, text("Hi again."), text(SUMMARY))  # the restoration held back
    child = _wire_chat(tmp_path, openai_server)
    child.sendline("resume 1")
    child.expect("Restoring context")
    child.expect_exact(first)
    child.sendintr()
    child.expect(r"interrupted: partial answer kept")
    child.expect(PROMPT)
    _ask(child, "hi again")
    _end(child)
    parent, kid = _sessions(tmp_path)
    assert parent.header.session_id == old.header.session_id
    # the parent only gained the forward link to its child
    after = (tmp_path / "sessions" / f"{old.header.session_id}.md").read_bytes()
    assert after == render_linked(before.decode(), kid.header.session_id).encode()
    assert kid.header.resumed_from == old.header.session_id
    assert kid.turns[0].kind == "restored" and kid.turns[0].status == "interrupted"
    assert kid.turns[0].assistant.strip() == first
    assert _queries(kid) == [("hi again", "ok")]


# ---------------------------------------------------------------- tool call


def test_ctrl_c_during_a_tool_round_keeps_the_call_and_the_partial_answer(
        openai_server: WireServer, tmp_path: Path) -> None:
    """The model calls the archive tool (which really reads the parent's transcript), then
    its answer's first part arrives and the rest is held until the chat hangs up (the offline
    model's answer ended about 1 s after the tool's result: a Ctrl-C sent later on a loaded
    machine found the prompt)."""
    env = clean_env(tmp_path / "home")
    assert run_piped(tmp_path, SECRET + "\n", env=env).returncode == 0  # (the offline model)
    first = "Found it in the archive."
    answer = held(first, "The shed key is under the flowerpot.")
    openai_server.push(
        text("Ready to continue."),  # the restoration
        tool("session_archive_read", {"query": "flowerpot"},
             text="Let me look for flowerpot in the previous session's transcript."),
        answer, text(SUMMARY))
    child = _wire_chat(tmp_path, openai_server, "--resume", "1")
    child.sendline("where is the flowerpot?")
    child.expect("← session_archive_read")  # the tool ran; its answer now streams
    child.expect_exact(first)
    child.sendintr()
    child.expect(r"interrupted: partial answer kept")
    child.expect(PROMPT)
    _end(child)
    parent, kid = _sessions(tmp_path)
    assert _queries(parent) == [(SECRET, "ok")]
    [turn] = [t for t in kid.turns if t.kind == "query"]
    assert turn.user == "where is the flowerpot?" and turn.status == "interrupted"
    [exchange] = turn.tools
    assert exchange.call.name == "session_archive_read"
    assert "flowerpot" in exchange.result
    assert turn.assistant.startswith("Let me look for")
    assert turn.assistant.rstrip().endswith(first) and "shed key" not in turn.assistant
    assert kid.summary is not None


# ---------------------------------------------------------------- the final save, in process


class _StoppedSummary(OfflineProvider):
    """The offline model, but Ctrl-C arrives while it writes a summary."""

    def stream(self, request: ChatRequest) -> Iterator[StreamEvent]:
        if request.purpose == "summary":
            raise KeyboardInterrupt
        yield from super().stream(request)


def test_ctrl_c_held_while_the_summary_is_written(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """A second Ctrl-C exactly inside the file rewrite: held, delivered after the rename."""
    agent = AgentConfig(key="assistant", name="Assistant", provider="offline")
    out = io.StringIO()
    provider = _StoppedSummary()
    store = SessionStore(tmp_path / "sessions")
    app = chat_app(config=Config(agents={"assistant": agent},  # the model's summary
                                 summary=SummaryConfig(on_exit="model")), agent=agent,
                  engine_settings=EngineSettings(provider, model="offline", system="s",
                                max_output_tokens=500, temperature=None,
                                retry=RetryPolicy(0, 0.0, 0.0)),
                  summary_provider=provider, summary_model="offline", provider_name="offline",
                  store=store, renderer=Renderer(Console(file=out, width=200), interactive=False),
                  confirm=lambda q: False, context_window=128_000)
    assert handle_line(app, "hi") is False
    import rollchat.storage.store

    real_write = rollchat.storage.store.atomic_write
    interrupted: list[bool] = []

    def write_with_ctrl_c(path: Path, data: bytes) -> None:
        os.kill(os.getpid(), signal.SIGINT)  # the handler runs here, mid-save
        interrupted.append(True)
        real_write(path, data)

    monkeypatch.setattr(rollchat.storage.store, "atomic_write", write_with_ctrl_c)
    finish(app)
    assert interrupted == [True]
    shown = out.getvalue()
    assert "summary failed (interrupted)" in shown
    assert "interrupted while saving; the transcript is on disk" in shown
    [t] = _sessions(tmp_path)
    assert _queries(t) == [("hi", "ok")] and t.header.total_queries == 1
    assert t.summary is not None and t.summary.fallback


def test_second_ctrl_c_during_the_local_fallback_keeps_the_summary(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Ctrl-C stops the model's summary; a second one while the local fallback is built must
    not leave the session without its summary block."""
    import io
    import os
    import signal

    from rich.console import Console

    from rollchat.compaction import extractive
    from rollchat.compaction import request as summary_request
    from rollchat.engine.core import EngineSettings
    from rollchat.providers.base import RetryPolicy
    from rollchat.providers.offline import OfflineProvider
    from rollchat.storage.store import SessionStore
    from rollchat.storage.transcript import parse
    from rollchat.ui.render import Renderer
    from rollchat.ui.repl import finish, handle_line

    agent = AgentConfig(key="assistant", name="Assistant", provider="offline")
    provider = OfflineProvider()
    out = io.StringIO()
    app = chat_app(
        config=Config(agents={"assistant": agent}, summary=SummaryConfig(on_exit="model")),
        agent=agent,
        engine_settings=EngineSettings(provider, model="offline", system="s",
                      max_output_tokens=500, temperature=None, retry=RetryPolicy(0, 0.0, 0.0)),
        summary_provider=provider, summary_model="offline", provider_name="offline",
        store=SessionStore(tmp_path / "s"), renderer=Renderer(Console(file=out),
                                                              interactive=False),
        confirm=lambda q: False, context_window=128_000)
    handle_line(app, "we decided to ship the parser on Friday")

    def first_ctrl_c(*args: object, **kwargs: object) -> object:
        raise KeyboardInterrupt  # the first Ctrl-C, as the summary call starts

    real = extractive.extractive_summary
    calls = []

    def second_ctrl_c(*args: object, **kwargs: object) -> object:
        calls.append(1)
        if len(calls) == 1:
            os.kill(os.getpid(), signal.SIGINT)  # the second, during the local fallback
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(summary_request, "build_summary_request", first_ctrl_c)
    monkeypatch.setattr(extractive, "extractive_summary", second_ctrl_c)
    finish(app)
    [path] = list((tmp_path / "s").glob("*.md"))
    summary = parse(path.read_text()).summary
    assert summary is not None and summary.fallback
    assert any("parser" in d for d in summary.decisions + summary.topics)
