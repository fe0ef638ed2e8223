"""``rollchat compact ID``: the summary of a saved session, through the CLI as a user runs it.
It carries the parent's summary, changes no session file, answers from the file's own summary
block or from its cache when it can, and falls back to the local summary when the model fails."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from rollchat.cli.app import build_cli
from rollchat.compaction.cache import CACHE_DIR
from rollchat.domain import Summary
from rollchat.storage.store import SessionStore
from rollchat.storage.transcript import render_turn
from tests.compact_fixtures import (
    OFFLINE_CONFIG,
    PARENT_SUMMARY,
    T0,
    Sessions,
    make_sessions,
    snapshot,
    turn,
)
from tests.wire_servers import Reply, WireServer, openai_server, text

__all__ = ["openai_server"]

LATER = T0.replace(hour=16)
DEAD_MODEL = ("agents:\n  assistant:\n    provider: openai\n"
              "    base_url: http://127.0.0.1:9/v1\n    model: nowhere\n"
              "retry:\n  max_retries: 0\n  request_timeout: 5\n")
SUMMARY_REPLY = """<!-- SESSION_SUMMARY_START -->
**Background Context:** We designed the gateway's rate limiter earlier.

**Topics Discussed:**
- Gateway on port 8443

**Decisions Made:**
- Use a token bucket in Redis for the rate limiter
- Log rejected requests to syslog

**Pending:**
- Write integration tests for the auth service

**Files and artifacts:**
- src/limiter.py
<!-- SESSION_SUMMARY_END -->
"""


@pytest.fixture
def sessions(tmp_path: Path) -> Sessions:
    return make_sessions(tmp_path / "sessions")


def _config(tmp_path: Path, text_: str = OFFLINE_CONFIG) -> Path:
    path = tmp_path / "rollchat.yml"
    path.write_text(text_, encoding="utf-8")
    return path


def run(sessions: Sessions, config: Path, *args: str, code: int = 0) -> Any:
    result = CliRunner().invoke(build_cli(), ["compact", *args, "--sessions-dir",
                                          str(sessions.root), "--config", str(config)])
    assert result.exit_code == code, (result.stdout, result.stderr)
    return result


def compact_json(sessions: Sessions, config: Path, *args: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(run(sessions, config, *args, "--json").stdout)
    return data


def test_a_summarized_session_answers_from_its_own_block_without_a_model(
        sessions: Sessions, tmp_path: Path) -> None:
    dead = _config(tmp_path, DEAD_MODEL)  # any model call would fail (nothing listens there)
    before = snapshot(sessions.root)
    out = compact_json(sessions, dead, sessions.parent)
    assert out["method"] == "file" and out["cached"] is True and out["model"] is None
    assert (out["session"], out["parent"]) == (sessions.parent, None)
    assert out["title"] == "Let's design the rate limiter for the gateway."
    assert out["decisions"] == list(PARENT_SUMMARY.decisions)
    assert out["pending"] == list(PARENT_SUMMARY.pending)
    assert out["topics"] == list(PARENT_SUMMARY.topics)
    assert out["files"] == ["src/limiter.py"]
    assert out["summary"].startswith("**Background Context:** Initial session.\n")
    assert "- Use a token bucket in Redis for the rate limiter\n" in out["summary"]
    assert out["tokens"] > 10
    assert snapshot(sessions.root) == before
    # the answer is cached (its token count needs the tokenizer, the slow part): the next
    # one is the same, read from the one entry
    assert len(list((sessions.root / CACHE_DIR).glob("*.json"))) == 1
    assert compact_json(sessions, dead, sessions.parent) == out


def test_compact_carries_the_parent_caches_and_changes_no_session_file(
        sessions: Sessions, tmp_path: Path) -> None:
    config = _config(tmp_path)
    before = snapshot(sessions.root)
    first = compact_json(sessions, config, sessions.child)
    assert first["method"] == "model" and first["cached"] is False
    assert first["model"] == "offline:offline" and first["parent"] == sessions.parent
    # the parent's open task and decision are carried, as a compaction in the chat does
    assert "Write integration tests for the auth service" in first["pending"]
    assert any("token bucket" in d for d in first["decisions"])
    assert any("syslog" in d for d in first["decisions"])
    assert first["max_words"] == 500 and first["focus"] is None
    assert snapshot(sessions.root) == before  # every session file: same bytes, same mtime
    entries = list((sessions.root / CACHE_DIR).glob("*.json"))
    assert len(entries) == 1 and entries[0].stat().st_mode & 0o777 == 0o600

    second = compact_json(sessions, config, sessions.child)
    assert second["cached"] is True
    assert {**second, "cached": False} == first
    # the cache stays out of the listing (and out of git: the directory's .gitignore is "*")
    listed = json.loads(CliRunner().invoke(build_cli(), ["sessions", "--json", "--sessions-dir",
                                                     str(sessions.root)]).stdout)
    assert {s["id"] for s in listed["sessions"]} == {sessions.parent, sessions.child}
    assert listed["problems"] == []
    assert snapshot(sessions.root) == before


def test_focus_size_refresh_and_a_changed_file_each_recompute(
        sessions: Sessions, tmp_path: Path) -> None:
    config = _config(tmp_path)
    assert compact_json(sessions, config, sessions.child)["cached"] is False
    focused = compact_json(sessions, config, sessions.child, "--focus", "port")
    assert focused["cached"] is False and focused["focus"] == "port"
    assert any("8443" in t for t in focused["topics"])
    assert compact_json(sessions, config, sessions.child, "--focus", "port")["cached"] is True
    small = compact_json(sessions, config, sessions.child, "--max-words", "40")
    assert small["cached"] is False and small["max_words"] == 40
    assert compact_json(sessions, config, sessions.child, "--refresh")["cached"] is False
    # a summarized session asked with a focus is summarized, not read from its block
    assert compact_json(sessions, config, sessions.parent, "--focus", "auth")["method"] == "model"
    path = SessionStore(sessions.root).path_for(sessions.child)  # the session goes on: its
    with open(path, "a", encoding="utf-8") as f:  # cached summary is stale
        f.write(render_turn(turn(3, "One more thing: rotate the Redis password monthly.",
                                 "Will do.", LATER), "Assistant"))
    again = compact_json(sessions, config, sessions.child)
    assert again["cached"] is False
    assert any("Redis password" in t for t in again["topics"] + again["pending"]
               + again["decisions"]), again


def test_a_corrupt_cache_entry_is_ignored_and_rewritten(
        sessions: Sessions, tmp_path: Path) -> None:
    config = _config(tmp_path)
    first = compact_json(sessions, config, sessions.child)
    (entry,) = (sessions.root / CACHE_DIR).glob("*.json")
    for junk in (b"{not json", b'{"version": 1, "key": "other", "result": {}}',
                 json.dumps({"version": 1, "key": entry.stem,
                             "result": {**first, "tokens": "many"}}).encode(), b"\xff\xfe"):
        entry.write_bytes(junk)
        out = compact_json(sessions, config, sessions.child)
        assert out["cached"] is False and out["summary"] == first["summary"]
        assert compact_json(sessions, config, sessions.child)["cached"] is True


def test_a_failing_model_falls_back_to_the_local_summary_which_is_not_cached(
        sessions: Sessions, tmp_path: Path) -> None:
    dead = _config(tmp_path, DEAD_MODEL)
    result = run(sessions, dead, sessions.child, "--json")
    out = json.loads(result.stdout)
    assert out["method"] == "extractive" and out["cached"] is False
    assert out["model"] == "openai:nowhere" and out["fallback_reason"]
    assert "Write integration tests for the auth service" in out["pending"]
    assert "the model's summary failed" in result.stderr
    assert not list((sessions.root / CACHE_DIR).glob("*.json"))
    assert compact_json(sessions, dead, sessions.child)["cached"] is False


def test_the_model_comes_from_the_same_config_and_environment_as_the_chat(
        sessions: Sessions, tmp_path: Path, openai_server: WireServer,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ROLLCHAT_PROVIDER", "openai")
    monkeypatch.setenv("ROLLCHAT_BASE_URL", openai_server.url)
    monkeypatch.setenv("ROLLCHAT_MODEL", "fake-summarizer")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    openai_server.push(text(SUMMARY_REPLY))
    config = _config(tmp_path)
    out = compact_json(sessions, config, sessions.child, "--focus", "gateway")
    assert out["method"] == "model" and out["model"] == "openai:fake-summarizer"
    assert out["decisions"] == ["Use a token bucket in Redis for the rate limiter",
                                "Log rejected requests to syslog"]
    assert out["files"] == ["src/limiter.py"] and out["topics"] == ["Gateway on port 8443"]
    (request,) = openai_server.requests
    assert request.body["model"] == "fake-summarizer"
    sent = json.dumps(request.body["messages"])
    assert "port 8443" in sent and "gateway" in sent
    assert "Write integration tests for the auth service" in sent  # the parent's, carried
    again = compact_json(sessions, config, sessions.child, "--focus", "gateway")
    assert again["cached"] is True and len(openai_server.requests) == 1
    # another model is another key
    monkeypatch.setenv("ROLLCHAT_MODEL", "fake-summarizer-2")
    openai_server.push(Reply("text", text=SUMMARY_REPLY))
    other = compact_json(sessions, config, sessions.child, "--focus", "gateway")
    assert other["cached"] is False and len(openai_server.requests) == 2


def test_plain_output_is_the_markdown_summary(sessions: Sessions, tmp_path: Path) -> None:
    out = run(sessions, _config(tmp_path), "2").stdout  # 2: the parent, by its number
    assert out.startswith(f"# {sessions.parent}: the session's own summary (")
    assert "**Decisions Made:**\n- Use a token bucket in Redis for the rate limiter\n" in out


def test_bad_input_is_refused_with_a_clear_message(sessions: Sessions, tmp_path: Path) -> None:
    config = _config(tmp_path)
    before = snapshot(sessions.root)
    for args, message in (
            (["nosuch"], "no session 'nosuch'"),
            (["9"], "no session number 9: choose between 1 and 2"),
            (["../etc/passwd"], "invalid session id"),
            ([sessions.child, "--max-words", "5"], "max words must be at least 20 (got 5)"),
            ([sessions.child, "--focus", "  "], "the focus is empty"),
            ([sessions.child, "--max-words", "many"], "'many' is not a valid integer")):
        result = run(sessions, config, *args, code=2)
        assert message in result.stderr, (args, result.stderr)
        assert result.stdout == ""
    empty = SessionStore(sessions.root).new_session(
        agent_key="assistant", agent="Assistant", agent_path="config:assistant",
        model="offline", provider="offline", now=LATER)
    empty.close()
    result = run(sessions, config, empty.session_id, code=2)
    assert f"session {empty.session_id} has no queries to summarize" in result.stderr
    bad = tmp_path / "bad.yml"
    bad.write_text("agents:\n  assistant:\n    provider: anthropic\n", encoding="utf-8")
    result = run(sessions, bad, sessions.child, code=2)
    assert "provider anthropic needs an API key" in result.stderr
    after = snapshot(sessions.root)
    assert {k: after[k] for k in before} == before


def test_a_session_open_in_another_process_is_summarized_read_only(
        sessions: Sessions, tmp_path: Path) -> None:
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time\nfrom pathlib import Path\n"
         "from rollchat.storage.locks import SessionLocks\n"
         "assert SessionLocks(Path(sys.argv[1])).acquire(sys.argv[2])\n"
         "print('held', flush=True)\ntime.sleep(60)\n", str(sessions.root), sessions.child],
        stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        assert SessionStore(sessions.root).open_elsewhere(sessions.child)
        before = snapshot(sessions.root)
        out = compact_json(sessions, _config(tmp_path), sessions.child)
        assert out["method"] == "model" and out["pending"]
        assert snapshot(sessions.root) == before
    finally:
        holder.kill()
        holder.wait()


def test_the_summary_shape_is_the_summary_type() -> None:
    from rollchat.compaction.cache import summary_markdown

    text_ = summary_markdown(Summary("Bg.", ("a\nb",), (), ("p",)))
    assert text_ == ("**Background Context:** Bg.\n\n**Topics Discussed:**\n- a\n  b\n\n"
                     "**Decisions Made:**\n- None\n\n**Pending:**\n- p\n")


def test_a_huge_session_costs_the_model_one_call_not_dozens(
        tmp_path: Path, openai_server: WireServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """A session needing many summary calls (a client's one compact_session could cost dozens
    of requests): the model summarizes its last part, the older turns locally, and says so."""
    root = tmp_path / "sessions"
    store = SessionStore(root)
    live = store.new_session(agent_key="assistant", agent="Assistant",
                             agent_path="config:assistant", model="offline",
                             provider="offline", now=T0)
    for n in range(1, 41):
        live.append_turn(turn(n, f"Step {n} of the migration: " + "lorem ipsum " * 300,
                              f"Done step {n}. " + "dolor sit amet " * 300, T0), "Assistant")
    live.close()
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    config = _config(tmp_path, "agents:\n  assistant:\n    provider: openai\n"
                               f"    base_url: {openai_server.url}\n    model: small-window\n"
                               "    max_output_tokens: 512\n"
                               "models:\n  small-window:\n    context_window: 8192\n"
                               + OFFLINE_CONFIG)
    for _ in range(40):
        openai_server.push(text(SUMMARY_REPLY))
    result = CliRunner().invoke(build_cli(), ["compact", live.session_id, "--json",
                                          "--sessions-dir", str(root), "--config", str(config)])
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert out["method"] == "model"
    assert len(openai_server.requests) == 1
    assert any("summarized locally" in note for note in out["notes"]), out["notes"]
    assert "summary calls: the model summarizes its last" in result.stderr


def test_the_session_and_its_parent_are_found_through_the_index_not_a_full_listing(
        sessions: Sessions, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # as resume does: with 10,000 sessions, decoding every listed one per compact is slow
    def whole_listing(*args: object, **kwargs: object) -> None:
        raise AssertionError("compact read the whole listing")

    monkeypatch.setattr(SessionStore, "list_sessions", whole_listing)
    config = _config(tmp_path)
    by_number = compact_json(sessions, config, "1")  # the most recent: the child
    assert by_number["session"] == sessions.child and by_number["parent"] == sessions.parent
    assert "Write integration tests for the auth service" in by_number["pending"]
    assert compact_json(sessions, config, sessions.parent[-4:])["session"] == sessions.parent
