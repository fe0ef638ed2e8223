"""One source of truth for cost and usage after ``model NAME`` (issue 35.3, 36.1): a chat run
in process (the whole CLI, the real openai SDK against the local wire-format server) that
switches models mid-session, compacts and exits. Every figure (turn lines, summary lines,
restoration line, goodbye, file headers, ``sessions --json``) is summed from the same per-call
records, each call priced with the model that answered; the window a server states after the
switch is the new model's; memory extraction asks the new model. Every model call is billed
once: each round of a tool loop and each memory-extraction call is its own record, so what
rollchat reports is what the server billed, answer by answer."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rollchat.cli.app import build_cli
from rollchat.models.windows import WindowBook
from rollchat.storage.transcript import parse
from tests.compaction.test_autocompact import summary_text
from tests.e2e import HELPER_AGENT
from tests.wire_servers import Charge, OpenAIDialect, Reply, WireServer, text, too_long, tool

PRICES = {"small-model": (1.0, 2.0), "big-model": (10.0, 20.0)}  # dollars per M: in, out
CONFIG = """\
retry:
  max_retries: 0
ui:
  offline_word_delay: 0
memory:
  user_dir: user
summary:
  on_exit: model  # these short chats' summaries too are the model's (billed)
models:
  small-model:
    context_window: 60000
    price: {input: 1.0, output: 2.0}
  big-model:
    context_window: 50000
    price: {input: 10.0, output: 20.0}
"""
ANSWER = {"input_tokens": 1000, "output_tokens": 100}  # each chat answer and restoration
SUMMARY = {"input_tokens": 2000, "output_tokens": 300}  # each summary


def dollars(model: str, input_tokens: int, output_tokens: int) -> float:
    """What a call to ``model`` costs at its list price above (no cache)."""
    price_in, price_out = PRICES[model]
    return (input_tokens * price_in + output_tokens * price_out) / 1e6


@pytest.fixture
def server() -> Iterator[WireServer]:
    with WireServer(OpenAIDialect()) as running:
        yield running


@pytest.fixture
def chat_dir(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """The CLI in process, in ``tmp_path`` with its own home and no keys but the test's."""
    for name, sub in (("HOME", "home"), ("XDG_DATA_HOME", "home/data"),
                      ("XDG_CONFIG_HOME", "home/config"), ("XDG_STATE_HOME", "home/state"),
                      ("XDG_CACHE_HOME", "home/cache")):
        monkeypatch.setenv(name, str(tmp_path / sub))
    monkeypatch.setenv("OPENAI_API_KEY", "test")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "rollchat.yml").write_text(CONFIG, encoding="utf-8")
    return tmp_path


def chat(server: WireServer, lines: list[str], *more: str) -> str:
    """A piped chat of ``lines`` (``--trust-input``: the input is the user's own, so memory
    extracts from it) with small-model at ``server``; what it printed."""
    result = CliRunner().invoke(build_cli(), [
        "--config", "rollchat.yml", "--provider", "openai", "--model", "small-model",
        "--base-url", server.url, "--sessions-dir", "sessions", "--trust-input", *more],
        input="\n".join(lines) + "\n")
    assert result.exit_code == 0, result.output
    return " ".join(result.output.split())


def test_after_model_name_every_figure_is_summed_from_calls_priced_by_who_answered(
        server: WireServer, chat_dir: Path) -> None:
    server.push(text("first answer", **ANSWER),  # small-model
                text("second answer", **ANSWER),  # big-model from here on
                text(summary_text(120), **SUMMARY),  # compact
                text("Restored; ready.", **ANSWER),  # the child's restoration
                text("third answer", **ANSWER),
                text(summary_text(120, "exit"), **SUMMARY))  # the summary at exit
    out = chat(server, ["hello", "model big-model", "and now?", "compact", "one more",
                        "exit"])
    models = [b["model"] for b in server.bodies]
    assert models == ["small-model", *["big-model"] * 5], models
    small, big = dollars("small-model", **ANSWER), dollars("big-model", **ANSWER)
    summary = dollars("big-model", **SUMMARY)  # written by the chat's model: the new one
    # fact extraction (the compaction's, the exit's: 11 + 7 tokens each, the server's
    # default) billed to the child at the new price; one the chat's own request cut before
    # it answered (providers/lanes.py) is asked again, and only the answer is billed
    assert {b["model"] for b in server.extractions} == {"big-model"}
    said = re.search(r"([\d,]+) for memory", out)
    assert said is not None, out
    memory = int(said[1].replace(",", "")) // 18 * dollars("big-model", 11, 7)
    assert memory >= 2 * dollars("big-model", 11, 7)
    parent_cost, child_cost = small + big + summary, big + big + summary + memory

    # the turn lines and the restoration line: each priced with the model that answered
    assert out.count("· $0.0012") == 1 and out.count("· $0.0120") == 3, out
    # both summary lines: the new model's price
    assert out.count("Summary: 2,000 input tokens (0 cache reads), 300 output: $0.0260.") == 2
    # the goodbye: the child session, and the chain with its parent
    assert f"Cost: ${child_cost:.4f}" in out, out
    assert f"Chain (2 sessions): ${parent_cost + child_cost:.4f}" in out, out
    # the file headers
    files = {p.stem: parse(p.read_text()) for p in (chat_dir / "sessions").glob("*.md")}
    [child] = [t for t in files.values() if t.header.resumed_from]
    parent = files[str(child.header.resumed_from)]
    assert parent.header.cost == pytest.approx(parent_cost)
    assert child.header.cost == pytest.approx(child_cost)
    assert parent.header.model == "small-model" and child.header.model == "big-model"
    # `sessions --json`
    listed = CliRunner().invoke(build_cli(), ["sessions", "--json", "--config", "rollchat.yml",
                                              "--sessions-dir", "sessions"])
    assert listed.exit_code == 0, listed.output
    costs = {s["id"]: s["cost"] for s in json.loads(listed.output)["sessions"]}
    assert costs[parent.header.session_id] == pytest.approx(parent_cost)
    assert costs[child.header.session_id] == pytest.approx(child_cost)


def test_a_window_the_server_states_after_the_switch_is_the_new_models(
        server: WireServer, chat_dir: Path) -> None:
    with (chat_dir / "rollchat.yml").open("a", encoding="utf-8") as config:
        config.write("session:\n  auto_compact: off\n")  # the refusal is only learned from
    server.push(text("first answer"), too_long(OpenAIDialect(), 41000, 30000))
    out = chat(server, ["hello", "model big-model", "a question too long for it"])
    assert "30,000" in out, out
    book = WindowBook(chat_dir / "home" / "data" / "rollchat" / "windows.json")
    assert book.get(server.url, "big-model") == 30000
    assert book.get(server.url, "small-model") is None  # never capped by big-model's window


def test_memory_extraction_after_the_switch_asks_the_new_model(
        server: WireServer, chat_dir: Path) -> None:
    server.push(text("first answer"), text("second answer"))
    chat(server, ["I prefer tabs over spaces.", "model big-model",
                  "We decided to keep the retry queue.", "exit"])
    assert server.extractions, "no memory extraction reached the server"
    assert {b["model"] for b in server.extractions} == {"big-model"}


def test_one_shot_json_reports_the_whole_run_beside_the_question(
        server: WireServer, chat_dir: Path) -> None:
    server.push(text("first answer", **ANSWER), text(summary_text(120), **SUMMARY))
    chat(server, ["hello", "exit"])
    [saved] = (chat_dir / "sessions").glob("*.md")
    server.push(text("Restored; ready.", **ANSWER), text("the answer", **ANSWER))
    result = CliRunner().invoke(build_cli(), [
        "--config", "rollchat.yml", "--provider", "openai", "--model", "small-model",
        "--base-url", server.url, "--sessions-dir", "sessions", "--resume", saved.stem,
        "-p", "second question", "--output-format", "json"])
    assert result.exit_code == 0, result.output
    done = json.loads(result.stdout.strip().splitlines()[-1])
    one = dollars("small-model", **ANSWER)
    assert done["usage"]["input_tokens"] == 1000 and done["cost"] == pytest.approx(one)
    # the restoration too (the summary is the local one: summary.one_shot)
    assert done["total_usage"] == {"input_tokens": 2000, "output_tokens": 200,
                                   "cached_tokens": 0, "cache_write_tokens": 0}
    assert done["total_cost_usd"] == pytest.approx(2 * one)
    [child] = [p for p in (chat_dir / "sessions").glob("*.md") if p != saved]
    assert parse(child.read_text()).header.cost == pytest.approx(done["total_cost_usd"])


ROUND = {"input_tokens": 1000, "output_tokens": 100}  # each chat call
LAST = {"input_tokens": 1500, "output_tokens": 40}  # the call after the tool's result



def billed(charged: list[Charge]) -> float:
    """What the server billed, each answer at the price of the model it was asked for."""
    return sum(dollars(c.model, c.input_tokens, c.output_tokens) for c in charged)


def tool_turn() -> tuple[Reply, Reply]:
    """A turn of two model calls: a tool call, then the answer after its result."""
    return (tool("word_count", {"text": "one two three"}, **ROUND),
            text("Three words.", **LAST))


def test_the_goodbye_and_the_header_are_what_the_server_billed(
        server: WireServer, chat_dir: Path) -> None:
    (chat_dir / "helper.py").write_text(HELPER_AGENT, encoding="utf-8")
    server.push(*tool_turn(), text(summary_text(120, "exit"), **SUMMARY))
    out = chat(server, ["We decided to keep the retry queue. Count these words.", "exit"],
               "--agent-file", "helper.py", "--yes")
    assert server.extractions, "no memory extraction reached the server"
    assert len(server.charged) == 4, server.charged  # 2 rounds, the summary, the extraction
    spent = billed(server.charged)
    memory = sum(c.input_tokens + c.output_tokens for c in server.charged[3:])
    assert f"Cost: ${spent:.4f}" in out, out
    assert f"{memory:,} for memory" in out, out
    tokens = sum(c.input_tokens + c.output_tokens for c in server.charged)
    assert f"{tokens:,} tokens billed" in out, out
    [saved] = (chat_dir / "sessions").glob("*.md")
    header = parse(saved.read_text()).header
    assert header.cost == pytest.approx(spent, abs=5e-5)  # the header keeps 4 decimals
    assert header.total_tokens == tokens


def test_one_shot_json_counts_each_round_and_the_extraction(
        server: WireServer, chat_dir: Path) -> None:
    (chat_dir / "helper.py").write_text(HELPER_AGENT, encoding="utf-8")
    server.push(*tool_turn())
    result = CliRunner().invoke(build_cli(), [
        "--config", "rollchat.yml", "--provider", "openai", "--model", "small-model",
        "--base-url", server.url, "--sessions-dir", "sessions", "--yes", "--trust-input",
        "--agent-file", "helper.py", "-p", "We decided to keep the retry queue. Count these words.",
        "--output-format", "json"])
    assert result.exit_code == 0, result.output
    done = json.loads(result.stdout.strip().splitlines()[-1])
    assert server.extractions, "no memory extraction reached the server"
    assert len(server.charged) == 3, server.charged  # 2 rounds and the extraction
    question = dollars("small-model", **ROUND) + dollars("small-model", **LAST)
    assert done["cost"] == pytest.approx(question)
    assert done["usage"]["input_tokens"] == 2500
    assert done["total_cost_usd"] == pytest.approx(billed(server.charged))
    assert done["total_usage"]["input_tokens"] == sum(c.input_tokens for c in server.charged)
    assert done["total_usage"]["output_tokens"] == sum(c.output_tokens for c in server.charged)


def test_a_remote_model_with_no_price_says_its_cost_is_unknown_never_zero(
        server: WireServer, chat_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """gpt-6 has no price (no source states one): each turn line and the goodbye say the
    cost is unknown, and nothing says $0 (before: nothing was said at all). api.openai.com
    is reached through HTTP_PROXY (the wire server), so the model is remote."""
    root = f"http://127.0.0.1:{server.port}"
    for name in ("NO_PROXY", "no_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HTTP_PROXY", root)
    monkeypatch.setenv("http_proxy", root)
    server.push(text("an answer", **ANSWER), text(summary_text(120, "exit"), **SUMMARY))
    result = CliRunner().invoke(build_cli(), [
        "--config", "rollchat.yml", "--provider", "openai", "--model", "gpt-6",
        "--base-url", "http://api.openai.com/v1", "--sessions-dir", "sessions",
        "--no-memory"], input="hello\nexit\n")
    out = " ".join(result.output.split())
    assert result.exit_code == 0, out
    assert [b["model"] for b in server.bodies][:1] == ["gpt-6"]
    assert "· cost unknown" in out, out
    assert ("Cost: unknown (no price for gpt-6; set one with models: gpt-6: price: in the "
            "config)") in out, out
    assert "$0" not in out, out


def test_a_model_on_a_local_server_says_no_cost_at_all(server: WireServer,
                                                       chat_dir: Path) -> None:
    """A model on this machine (llama.cpp and the like) costs nothing: no cost is said."""
    server.push(text("an answer", **ANSWER), text(summary_text(120, "exit"), **SUMMARY))
    result = CliRunner().invoke(build_cli(), [
        "--config", "rollchat.yml", "--provider", "openai", "--model", "mystery-model",
        "--base-url", server.url, "--sessions-dir", "sessions", "--no-memory"],
        input="hello\nexit\n")
    out = " ".join(result.output.split())
    assert result.exit_code == 0, out
    assert "an answer" in out and "cost unknown" not in out and "Cost:" not in out, out
