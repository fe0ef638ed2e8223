"""Issue 35, item 4: the exit costs what it is worth. ``summary.on_exit`` (auto by default: the
model's summary for a session with real content, the local one for a trivial session), the
per-run flags --exit-summary / --no-exit-summary / --no-memory, against the real OpenAI SDK and
a local wire server that records every request (memory extractions apart)."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

from rollchat.domain import Text, ToolCall, ToolResult, ToolUse, Turn
from rollchat.session.exiting import SKIPPED, TRIVIAL_WORDS, exit_summary, trivial
from rollchat.storage.transcript import parse
from tests.e2e import clean_env, run_piped, write_config
from tests.wire_servers import WireServer, openai_server, text

__all__ = ["openai_server"]

REAL = ("We are moving the billing service from MySQL to PostgreSQL 16 next month; the "
        "migration runs in three steps: dual writes first, then a backfill of the invoices "
        "table, then the switch of reads.")
ANSWER = ("Sounds good. Keep the dual writes behind a flag so they can be turned off, check "
          "the backfill with row counts and checksums per month of invoices, and switch the "
          "reads one service at a time, watching the error rate after each.")


def _env(tmp_path: Path, server: WireServer) -> dict[str, str]:
    return clean_env(tmp_path / "home", ROLLCHAT_PROVIDER="openai", ROLLCHAT_BASE_URL=server.url,
                     ROLLCHAT_MODEL="gpt-4o-mini", OPENAI_API_KEY="sk-test")


def _said(server: WireServer) -> list[str]:
    return [json.dumps(r.body["messages"][-1]) for r in server.requests]


def _saved(tmp_path: Path) -> str:
    [path] = (tmp_path / "sessions").glob("*.md")
    return path.read_text(encoding="utf-8")


def test_hi_then_exit_makes_no_model_call_for_the_summary(tmp_path: Path,
                                                          openai_server: WireServer) -> None:
    openai_server.push(text("Hello! How can I help?"))
    done = run_piped(tmp_path, "hi\nexit\n", env=_env(tmp_path, openai_server))
    assert done.returncode == 0, done.stderr
    assert len(openai_server.requests) == 1 and "hi" in _said(openai_server)[0]  # the chat only
    assert "for summaries" not in done.stdout and "Goodbye!" in done.stdout
    assert parse(_saved(tmp_path)).summary is not None  # the local summary: still resumable


def test_a_real_exchange_gets_the_models_summary(tmp_path: Path,
                                                 openai_server: WireServer) -> None:
    openai_server.push(text(ANSWER))
    done = run_piped(tmp_path, f"{REAL}\nexit\n", env=_env(tmp_path, openai_server))
    assert done.returncode == 0, done.stderr
    assert len(openai_server.requests) == 2  # the question, then the summary request
    assert "for summaries" in done.stdout


def test_the_flags_turn_the_exit_summary_off_or_local_for_one_run(
        tmp_path: Path, openai_server: WireServer) -> None:
    openai_server.push(text(ANSWER))
    done = run_piped(tmp_path, f"{REAL}\nexit\n", "--no-exit-summary",
                     env=_env(tmp_path, openai_server))
    assert done.returncode == 0, done.stderr
    assert len(openai_server.requests) == 1
    assert SKIPPED in " ".join(done.stdout.split())
    saved = parse(_saved(tmp_path))
    assert saved.summary is None and [t.user for t in saved.turns] == [REAL]
    for path in (tmp_path / "sessions").glob("*.md"):
        path.unlink()
    openai_server.push(text(ANSWER))
    done = run_piped(tmp_path, f"{REAL}\nexit\n", "--exit-summary", "local",
                     env=_env(tmp_path, openai_server))
    assert done.returncode == 0, done.stderr
    assert len(openai_server.requests) == 2  # this run's question only
    assert parse(_saved(tmp_path)).summary is not None


def test_the_config_chooses_the_exit_summary(tmp_path: Path, openai_server: WireServer) -> None:
    cfg = write_config(tmp_path / "my.yml", "summary:\n  on_exit: model\n")
    openai_server.push(text("Hello!"))
    done = run_piped(tmp_path, "hi\nexit\n", "--config", str(cfg),
                     env=_env(tmp_path, openai_server))
    assert done.returncode == 0, done.stderr
    assert len(openai_server.requests) == 2  # even "hi": the config asked for the model
    bad = write_config(tmp_path / "bad.yml", "summary:\n  on_exit: never\n")
    done = run_piped(tmp_path, "", "--config", str(bad), env=_env(tmp_path, openai_server))
    assert done.returncode == 2
    assert "must be one of auto, model, local, skip" in done.stderr


def test_no_memory_makes_no_extraction_call(tmp_path: Path, openai_server: WireServer) -> None:
    openai_server.push(text(ANSWER))
    done = run_piped(tmp_path, f"{REAL}\nexit\n", "--yes", env=_env(tmp_path, openai_server))
    assert done.returncode == 0, done.stderr
    assert openai_server.extractions  # the other side: memory extracts at exit
    openai_server.extractions.clear()
    openai_server.push(text(ANSWER))
    done = run_piped(tmp_path, f"{REAL}\nexit\n", "--yes", "--no-memory",
                     env=_env(tmp_path, openai_server))
    assert done.returncode == 0, done.stderr
    assert openai_server.extractions == []


def test_flags_that_disagree_or_do_not_apply_are_one_line() -> None:
    from typer.testing import CliRunner

    from rollchat.cli.app import build_cli

    runner = CliRunner()
    done = runner.invoke(build_cli(), ["--no-exit-summary", "--exit-summary", "model"])
    assert done.exit_code == 2
    assert "--no-exit-summary and --exit-summary model disagree" in done.output
    done = runner.invoke(build_cli(), ["-p", "hi", "--exit-summary", "local"])
    assert done.exit_code == 2 and "-p writes the summary summary.one_shot names" in done.output


def _turn(user: str, answer: str, *blocks: object) -> Turn:
    return Turn("query", 1, datetime(2026, 1, 1), user, (Text(answer), *blocks))  # type: ignore[arg-type]


def test_the_threshold_of_a_trivial_session() -> None:
    small = [_turn("hi", "Hello! How can I help?")]
    assert trivial(small, continued=False)
    assert exit_summary("auto", small, continued=False) == "local"
    assert exit_summary("auto", small, continued=True) == "model"  # carries a summary on
    assert exit_summary("model", small, continued=False) == "model"
    assert exit_summary("skip", small, continued=False) == "skip"
    words = " ".join(["word"] * TRIVIAL_WORDS)
    assert not trivial([_turn("tell me", words)], continued=False)
    called = _turn("time?", "It is noon.", ToolUse(ToolCall("c1", "clock", {})),
                   ToolResult("c1", "12:00"))
    assert not trivial([called], continued=False)
