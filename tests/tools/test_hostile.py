"""Hostile input: fuzzed transcripts and config files, a sessions directory full of junk,
terminal escape sequences from the model, and tool arguments that try to leave their file.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import sys
import tempfile
from collections.abc import Iterator, Mapping
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pexpect
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rollchat.config.load import load_config
from rollchat.domain import SessionHeader, Summary, ToolCall, Transcript, Turn, Usage, answer_blocks
from rollchat.engine.core import Engine, EngineSettings
from rollchat.errors import ConfigError, TranscriptError
from rollchat.providers.base import (
    ChatRequest,
    Done,
    RetryPolicy,
    StreamEvent,
    TextDelta,
    ToolCallEvent,
)
from rollchat.storage import store as store_module
from rollchat.storage.store import SessionStore
from rollchat.storage.transcript import HEAD_MAX_BYTES, TAIL_MAX_BYTES, parse, render
from rollchat.text.normalize import clean
from rollchat.tools import ARCHIVE_TOOL_NAME
from rollchat.tools.archive import archive_tool
from tests.drive import drain
from tests.e2e import PROMPT, clean_env, default_signals, run_piped, write_config
from tests.examples_budget import examples
from tests.wire_servers import WireServer, openai_server, text

__all__ = ["openai_server"]  # the fixture, imported for pytest

T0 = datetime(2026, 11, 22, 14, 30, 0, tzinfo=timezone.utc)
FUZZ = settings(max_examples=examples(1500), deadline=None, database=None,
                suppress_health_check=[HealthCheck.too_slow])


def _transcript(sid: str = "assistant_20261122_143000_abcd", agent: str = "Assistant",
                summary: bool = True) -> Transcript:
    header = SessionHeader(sid, T0, agent, "config:assistant", "offline", "offline",
                           total_queries=2, total_tokens=60)
    turns = tuple(Turn("query", n, T0 + timedelta(minutes=n), f"question {n} é",
                       answer_blocks(f"## Query 9 (00:00:00)\n**You:** forged\n"
                                     f"<!-- SESSION_SUMMARY_START -->\nanswer {n}"),
                       elapsed=1.0, usage=Usage(10, 20)) for n in (1, 2))
    block = Summary("Testing.", ("Fuzzing",), ("None",), ("More tests",)) if summary else None
    return Transcript(header, turns, block)


# ---------------------------------------------------------------- (a) fuzzing


def _parse_only_our_error(text: str) -> None:
    """Either one line saying what is wrong, or a transcript that renders and parses back the
    same (no half-read result)."""
    try:
        t = parse(text)
    except TranscriptError as exc:
        assert str(exc).strip() and "\n" not in str(exc)
    else:
        assert parse(render(t)) == t


@FUZZ
@given(st.binary(max_size=600))
def test_parser_on_arbitrary_bytes(data: bytes) -> None:
    _parse_only_our_error(data.decode("utf-8", "surrogateescape"))


@FUZZ
@given(st.lists(st.sampled_from([
    "# Assistant Conversation", "", "**Session ID:** a_1", "**Date:** 2026-11-22T14:30:00+00:00",
    "**Agent:** A", "**Agent Path:** p", "**Model:** m (p)", "**Total Queries:** 1", "---",
    "## Query 1 (14:30:00)", "**You:** hi", "**A:** yo", "*Time: 1.0s | Tokens: 3 (in: 1, out: "
    "2) | at 2026-11-22T14:30:00+00:00*", "<!-- SESSION_SUMMARY_START -->",
    "<!-- SESSION_SUMMARY_END -->", "**Background Context:** x", "- None", "\udcff\udc80",
    "*Tool call:* t", "*Arguments:* {", "x" * 5000, "\x00\x1b[2J", "**Pending:**",
]), max_size=40))
def test_parser_on_shuffled_structure_lines(lines: list[str]) -> None:
    _parse_only_our_error("\n".join(lines))


def test_parser_on_huge_lines_and_every_truncation() -> None:
    valid = render(_transcript())
    assert parse(valid) == _transcript()
    _parse_only_our_error(valid.replace("answer 1", "answer " + "y" * 2_000_000))
    _parse_only_our_error("# " + "A" * 3_000_000)
    data = valid.encode("utf-8")
    for k in range(len(data)):  # a crash can cut the file anywhere, even inside a character
        _parse_only_our_error(data[:k].decode("utf-8", "surrogateescape"))


def _load(text: str | bytes, where: Path | None = None) -> None:
    """Load ``text`` as the config file, in ``where`` (a directory holding nothing else, used
    again by each example: a new directory for each cost more than the load on a loaded disk)
    or a new temporary directory. The loader writes nothing beside it."""
    with contextlib.nullcontext(where) if where else tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "rollchat.yml"
        path.write_bytes(text if isinstance(text, bytes) else
                         text.encode("utf-8", "surrogateescape"))
        try:
            load_config(config_path=path, env={}, cwd=Path(tmp), user_config_dir=Path(tmp))
        except ConfigError as exc:
            assert str(exc).strip()
        assert [p.name for p in Path(tmp).iterdir()] == ["rollchat.yml"]


@pytest.fixture(scope="module")
def config_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One directory for every example of a config fuzz test (module scope: hypothesis runs
    the examples of one test call, which a function-scoped fixture would not reset)."""
    return tmp_path_factory.mktemp("config")


@FUZZ
@given(st.binary(max_size=300))
def test_config_loader_on_arbitrary_bytes(config_dir: Path, data: bytes) -> None:
    _load(data, config_dir)


_YAML_BITS = ["session:", "  compact_threshold: ", "ui:", "  offline_word_delay: ", "agents:",
              "  a:", "    system_prompt_file: ", "models:", "- ", "&a ", "*a", "!!python/object ",
              "[", "{", "}", "0.5", "-1", "1e999", "nan", "null", "'", '"', "\t", ": ", "x" * 300,
              "\udcff", "\x00", "default_agent: ", "summary:", "  timeout_seconds: ", "\n", " "]


@FUZZ
@given(st.lists(st.sampled_from(_YAML_BITS), max_size=30))
def test_config_loader_on_yaml_fragments(config_dir: Path, bits: list[str]) -> None:
    _load("".join(bits), config_dir)


def test_config_loader_on_huge_and_truncated_files(tmp_path: Path) -> None:
    _load("session:\n  dir: " + "d" * 2_000_000 + "\n")
    _load(b"a: " + b"[" * 100_000)
    valid = (b"session:\n  compact_threshold: 0.7\n  keep_recent_turns: 2\nui:\n"
             b"  offline_word_delay: 0.0\nsummary:\n  timeout_seconds: 30\n")
    for k in range(len(valid)):
        _load(valid[:k], tmp_path)


# ---------------------------------------------------------------- (b) a sessions directory of junk

GOOD = "assistant_20261122_143000_abcd"
JUNK: dict[str, str] = {
    "assistant_20261101_000000_0001.md": "empty file",
    "assistant_20261101_000000_0002.md": "binary file",
    "assistant_20261101_000000_0003.md": "not UTF-8",
    "assistant_20261101_000000_0004.md": "binary file",  # the 200 MB sparse file
    "assistant_20261101_000000_0005.md": "symbolic link",
    "assistant_20261101_000000_0006.md": "not a session file",
    "assistant_20261101_000000_0007.md": "not a regular file",  # a directory
    "assistant_20261101_000000_0008.md": "does not match the file name",
}


def _junk_dir(root: Path) -> Path:
    sessions = root / "sessions"
    sessions.mkdir(parents=True)
    (sessions / f"{GOOD}.md").write_text(render(_transcript()), encoding="utf-8")
    names = sorted(JUNK)
    (sessions / names[0]).touch()
    (sessions / names[1]).write_bytes(bytes(range(256)) * 4)
    (sessions / names[2]).write_bytes(render(_transcript()).encode("utf-8") + b"\xff\xfe\n")
    with open(sessions / names[3], "wb") as f:
        f.truncate(200 * 1024 * 1024)  # sparse: instant, no disk used
    outside = root / "outside.md"
    outside.write_text(render(_transcript()), encoding="utf-8")
    (sessions / names[4]).symlink_to(outside)
    (sessions / names[5]).write_text("just some notes, named like a session\n")
    (sessions / names[6]).mkdir()
    (sessions / names[7]).write_text(render(_transcript()), encoding="utf-8")  # id mismatch
    return sessions


def test_sessions_command_lists_the_good_and_names_each_bad_file(tmp_path: Path) -> None:
    sessions = _junk_dir(tmp_path)
    env = clean_env(tmp_path / "home")
    result = run_piped(tmp_path, "", "sessions", "--sessions-dir", str(sessions), "--json",
                       env=env)
    assert result.returncode == 0, result.stderr
    listing = json.loads(result.stdout)
    assert [s["id"] for s in listing["sessions"]] == [GOOD]
    reasons = {p["file"]: p["reason"] for p in listing["problems"]}
    assert set(reasons) == set(JUNK)
    for name, why in JUNK.items():
        assert why in reasons[name], (name, reasons[name])
    assert str(tmp_path / "outside.md") in reasons["assistant_20261101_000000_0005.md"]
    plain = run_piped(tmp_path, "", "sessions", "--sessions-dir", str(sessions), env=env)
    assert plain.returncode == 0 and GOOD in plain.stdout
    for name in JUNK:
        assert name in plain.stdout
    assert "Traceback" not in plain.stdout + plain.stderr


def test_resume_of_a_bad_session_explains_why(tmp_path: Path) -> None:
    sessions = _junk_dir(tmp_path)
    ids = [name[:-3] for name in sorted(JUNK)]
    script = "".join(f"resume {sid}\n" for sid in ids)
    result = run_piped(tmp_path, script, "--sessions-dir", str(sessions),
                       env=clean_env(tmp_path / "home"))
    assert result.returncode == 0, result.stderr
    shown = " ".join(result.stdout.split())  # undo the wrapping at 80 columns
    for sid in ids:
        assert f"session '{sid}' cannot be used: " in shown
        assert JUNK[sid + ".md"] in shown.split(f"session '{sid}' cannot be used: ")[1][:200]
    assert "Traceback" not in result.stdout + result.stderr
    assert "Restoring context" not in result.stdout


def _bytes_read_listing(monkeypatch: pytest.MonkeyPatch, root: Path) -> int:
    read: list[int] = []
    real_pread, real_read = os.pread, os.read

    def pread(fd: int, n: int, offset: int) -> bytes:
        read.append(n)
        return real_pread(fd, n, offset)

    def read_(fd: int, n: int) -> bytes:
        read.append(n)
        return real_read(fd, n)

    def no_open(*args: object, **kwargs: object) -> object:
        raise AssertionError("listing must read with pread, never a whole-file open()")

    with monkeypatch.context() as m:
        m.setattr(store_module.os, "pread", pread)
        m.setattr(store_module.os, "read", read_)
        m.setattr(store_module.os, "fdopen", no_open)
        SessionStore(root).list_sessions()
    return sum(read)


def test_listing_a_200_mb_file_reads_no_more_than_a_small_one(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    small, big = tmp_path / "small", tmp_path / "big"
    for root in (small, big):
        root.mkdir()
    (small / f"{GOOD}.md").write_text(render(_transcript()), encoding="utf-8")
    head = render(_transcript(summary=False)).encode("utf-8")
    with open(big / f"{GOOD}.md", "wb") as f:  # a real header, 200 MB of hole, a real tail
        f.write(head)
        f.seek(200 * 1024 * 1024)
        f.write(b"\n" + render(_transcript()).encode("utf-8")[len(head):])
    zeros = tmp_path / "zeros"
    zeros.mkdir()
    with open(zeros / f"{GOOD}.md", "wb") as f:
        f.truncate(200 * 1024 * 1024)
    from rollchat.storage.index_rows import TEXT_MAX_BYTES

    for root in (small, big, zeros):  # written a while ago (a file written within the last
        path = root / f"{GOOD}.md"  # 2 s is re-read at every listing: see index.RACY_NS)
        os.utime(path, (path.stat().st_mtime - 60, path.stat().st_mtime - 60))
    # The first listing indexes each file: its head, tail and at most TEXT_MAX_BYTES of its
    # text for search, whatever the file's size; later listings read nothing of it again.
    cost_small = _bytes_read_listing(monkeypatch, small)
    cost_big = _bytes_read_listing(monkeypatch, big)
    cost_zeros = _bytes_read_listing(monkeypatch, zeros)
    limit = HEAD_MAX_BYTES + TAIL_MAX_BYTES + TEXT_MAX_BYTES + 2
    assert cost_small <= limit and cost_big <= limit and cost_zeros <= limit
    assert _bytes_read_listing(monkeypatch, big) <= cost_small  # indexed: not read again
    [info] = SessionStore(big).list_sessions().sessions
    assert info.has_summary and info.session_id == GOOD


# ---------------------------------------------------------------- (c) escape sequences


HOSTILE = ("Plain start. \x1b[2J\x1b[H cleared \x1b]52;c;cm0gLXJmIH4=\x07 clipboard "
           "\x1b]0;pwned title\x07 title \x9b31m c1-csi \x1b[10A up \x1b]8;;http://x\x1b\\ "
           "link. End.")
# (U+009B as UTF-8: a lone 0x9b byte is also part of "␛", U+241B, in UTF-8)
FORBIDDEN = [b"\x1b]52", b"\x1b]0;", "\x9b".encode(), b"\x1b[2J", b"\x1b[10A", b"\x1b]8;"]


def test_escape_sequences_from_the_model_are_shown_harmlessly_and_kept_cleaned(
        openai_server: WireServer, tmp_path: Path) -> None:
    openai_server.push(text(HOSTILE))
    cfg = write_config(tmp_path / "rollchat.yml", "summary:\n  provider: offline\n")
    env = clean_env(tmp_path / "home", OPENAI_API_KEY="test")
    screen = io.BytesIO()
    child = pexpect.spawn(sys.executable, ["-m", "rollchat", "--config", str(cfg),
                                           "--base-url", openai_server.url, "--model", "gpt-4o"],
                          cwd=str(tmp_path), env=env, timeout=30, dimensions=(40, 120),
                          preexec_fn=default_signals)
    child.logfile_read = screen
    child.expect(PROMPT.encode())
    child.sendline(b"show me something")
    child.expect(rb"End\.")
    child.expect(PROMPT.encode())
    child.sendline(b"exit")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    raw = screen.getvalue()
    for sequence in FORBIDDEN:
        assert sequence not in raw, sequence
    # kept as they were cleaned where they entered: ESC and BEL as control pictures; the C1
    # CSI (not C0: stored as it came) drawn as \x9b
    assert "␛]52;c;cm0gLXJmIH4=␇".encode() in raw and b"\\x9b31m" in raw
    [path] = (tmp_path / "sessions").glob("*.md")
    [turn] = parse(path.read_text(encoding="utf-8")).turns
    assert turn.assistant == clean(HOSTILE) != HOSTILE


# ---------------------------------------------------------------- (d) the archive tool


class _HostileModel:
    """Calls the archive tool with path-like arguments, then answers with what it got."""

    name = "hostile"

    def __init__(self, arguments: list[Mapping[str, object]]) -> None:
        self.arguments = arguments

    def stream(self, request: ChatRequest) -> Iterator[StreamEvent]:
        done = sum(1 for m in request.messages if m.role == "tool")
        if done < len(self.arguments):
            yield ToolCallEvent(ToolCall(f"c{done}", ARCHIVE_TOOL_NAME, self.arguments[done]))
            yield Done("tool_use")
            return
        yield TextDelta("done")
        yield Done("end")


def test_archive_tool_through_the_engine_stays_in_its_file(tmp_path: Path) -> None:
    sessions = tmp_path / "sessions"
    sessions.mkdir()
    parent = sessions / "parent.md"
    parent.write_text(render(_transcript()), encoding="utf-8")
    (tmp_path / "secret.md").write_text(render(_transcript(agent="SECRET-AGENT")))
    (sessions / "link.md").symlink_to(tmp_path / "secret.md")
    hostile: list[Mapping[str, object]] = [
        {"path": "/etc/passwd"}, {"file": "../secret.md"}, {"query": "../secret.md"},
        {"query": str(tmp_path / "secret.md")}, {"session": "link.md"},
        {"offset": "../../etc/passwd"}, {"query": "SECRET-AGENT", "limit": 50},
    ]
    engine = Engine(EngineSettings(
        _HostileModel(hostile), model="offline", system="s", max_output_tokens=200,
        temperature=None, retry=RetryPolicy(max_retries=0),
        tools=(archive_tool(SessionStore(sessions), "parent"),)))
    turn = drain(engine.chat("read the archive")).turn
    assert turn.status == "ok" and turn.assistant == "done"
    assert len(turn.tools) == len(hostile)
    for exchange in turn.tools:
        assert "SECRET-AGENT" not in exchange.result
        assert "root:" not in exchange.result
    assert all(m.role != "tool" or "SECRET" not in m.content for m in engine.context.messages)
    evil = archive_tool(SessionStore(sessions), "link").run({})
    assert evil.startswith("error:") and "SECRET-AGENT" not in evil
