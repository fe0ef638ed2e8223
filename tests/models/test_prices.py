"""Cost: the price table and its matching by model name, prices set in the config, the cost of
a usage (cache reads and writes included), money formatting; the cost of the turn in its
footer, the session's in its header, the session's and the chain's at exit, and in
``sessions --json``. No price known: nothing is shown."""

from __future__ import annotations

import json
import re
from datetime import datetime, timezone
from pathlib import Path

import pytest

from rollchat.config.settings import ModelConfig
from rollchat.domain import Usage
from rollchat.errors import ConfigError
from rollchat.events import Ended, Event
from rollchat.models.prices import PRICES, ChainCost, Price, cost, money, price_for
from rollchat.storage.transcript import parse, parse_head
from rollchat.ui.repl import handle_line
from tests.compaction.test_autocompact import (
    FakeProvider,
    build_app,
    run_turns,
    summary_text,
    user_message,
)
from tests.config.test_config import load
from tests.drive import tapped
from tests.e2e import clean_env, run_piped, write_config
from tests.wire_servers import WireServer, anthropic_server, openai_server, text

__all__ = ["anthropic_server", "openai_server"]

SONNET = PRICES["claude-sonnet-4-5"]


# ---------------------------------------------------------------- the table


@pytest.mark.parametrize(("model", "entry"), [
    ("claude-sonnet-4-5", "claude-sonnet-4-5"),
    ("claude-sonnet-4-5-20250929", "claude-sonnet-4-5"),
    ("claude-opus-4-5-20251101", "claude-opus-4-5"),  # not claude-opus-4's older price
    ("claude-opus-4-20250514", "claude-opus-4"),
    ("claude-3-5-sonnet-latest", "claude-3-5-sonnet"),
    ("claude-3-5-sonnet@20240620", "claude-3-5-sonnet"),
    ("claude-3-5-haiku-20241022", "claude-3-5-haiku"),
    ("gpt-4o-2024-08-06", "gpt-4o"),
    ("gpt-4o-mini-2024-07-18", "gpt-4o-mini"),  # the longest name it starts with
    ("GPT-4.1-mini", "gpt-4.1-mini"),
    ("openai/gpt-4o", "gpt-4o"),
    ("o3-mini-2025-01-31", "o3-mini"),
])
def test_well_known_models_have_a_price(model: str, entry: str) -> None:
    assert price_for(model) == PRICES[entry]


@pytest.mark.parametrize("model", ["offline", "llama3:8b", "gpt-4omni", "o10", "claude",
                                   "qwen2.5-coder"])
def test_unknown_models_have_none(model: str) -> None:
    assert price_for(model) is None


def test_the_config_wins_and_a_zero_price_is_no_price() -> None:
    mine = Price(1.0, 2.0, 0.1)
    assert price_for("gpt-4o", {"gpt-4o": mine}) == mine
    assert price_for("llama3:8b", {"llama3:8b": mine}) == mine
    assert price_for("gpt-4o", {"gpt-4o": Price(0, 0, 0)}) is None  # a local server: free


def test_cost_counts_cache_reads_and_writes_at_their_prices() -> None:
    # Anthropic: 10 fresh + 100 read + 20 written = 130 input tokens
    usage = Usage(130, 6, cache_read_tokens=100, cache_write_tokens=20)
    expected = (10 * 3.0 + 100 * 0.30 + 20 * 3.75 + 6 * 15.0) / 1e6
    assert cost(usage, SONNET) == pytest.approx(expected)
    # OpenAI: 30 of 1,000 prompt tokens cached, writes free
    mini = PRICES["gpt-4o-mini"]
    assert cost(Usage(1000, 50, 30), mini) == pytest.approx(
        (970 * 0.15 + 30 * 0.075 + 50 * 0.60) / 1e6)
    assert cost(Usage(10, 0, 0, 5), Price(1.0, 1.0, 1.0)) == pytest.approx(10 / 1e6)


def test_money_for_people() -> None:
    assert [money(d) for d in (0, 0.00004, 0.0042, 0.0123, 0.5, 1, 12.345, 1234.5)] == [
        "$0.00", "<$0.0001", "$0.0042", "$0.0123", "$0.5000", "$1.00", "$12.35", "$1,234.50"]


def test_chain_cost_counts_sessions_without_a_cost() -> None:
    chain = ChainCost().plus(0.5).plus(None).plus(0.25)
    assert (chain.spent, chain.sessions, chain.unpriced, chain.known) == (0.75, 3, 1, True)
    assert not ChainCost().plus(None).known


# ---------------------------------------------------------------- the config


def test_prices_in_the_config(tmp_path: Path) -> None:
    config = load(tmp_path, "models:\n  my-model:\n    price: {input: 1, output: 2.5}\n"
                            "  gpt-4o:\n    context_window: 64000\n"
                            "    price: {input: 2, output: 8, cached: 0.5, cache_write: 0}\n")
    assert config.models["my-model"] == ModelConfig(price=Price(1.0, 2.5, 1.0))
    assert config.prices == {"my-model": Price(1.0, 2.5, 1.0),
                             "gpt-4o": Price(2.0, 8.0, 0.5, 0.0)}
    assert config.context_window_override("gpt-4o") == 64000
    assert config.context_window_override("my-model") is None


@pytest.mark.parametrize(("yaml_text", "message"), [
    ("models: {m: {price: {input: 1}}}\n",
     "models.m.price.output: is required (dollars per million tokens)"),
    ("models: {m: {price: {input: -1, output: 1}}}\n",
     "models.m.price.input: must be a number >= 0 (dollars per million tokens) (got -1)"),
    ("models: {m: {price: {input: 1, output: cheap}}}\n",
     "models.m.price.output: must be a number >= 0 (dollars per million tokens) (got 'cheap')"),
    ("models: {m: {price: {input: 1, output: 1, cache_read: 1}}}\n",
     "models.m.price.cache_read: unknown key"),
    ("models: {m: {price: 3}}\n", "models.m.price: must be a mapping"),
    ("models: {m: {cost: 3}}\n", "models.m.cost: unknown key"),
])
def test_bad_prices_are_named(tmp_path: Path, yaml_text: str, message: str) -> None:
    with pytest.raises(ConfigError) as info:
        load(tmp_path, yaml_text)
    assert message in str(info.value)


def test_a_bad_price_exits_2(tmp_path: Path) -> None:
    config = write_config(tmp_path / "c.yml", "models: {m: {price: {input: 1}}}\n")
    done = run_piped(tmp_path, "", "--config", str(config))
    assert done.returncode == 2
    assert "models.m.price.output: is required" in done.stderr


# ---------------------------------------------------------------- in a chat


def footers(output: str) -> list[str]:
    return re.findall(r"Time: .*", output)


def test_turn_footer_session_header_and_exit_show_the_cost(tmp_path: Path) -> None:
    provider = FakeProvider()
    built = build_app(tmp_path, provider, model="claude-sonnet-4-5", window=200_000)
    turns = [built.send(user_message(i)) for i in range(3)]
    expected = [cost(t.usage, SONNET) for t in turns]
    shown = [re.search(r" · (\$\S+)$", f) for f in footers(built.output)]
    assert [m[1] if m else None for m in shown] == [money(c) for c in expected]
    # the header holds the session's cost as it goes (a crash keeps it)
    [path] = built.store.root.glob("*.md")
    assert parse_head(path.read_text()).header.cost == pytest.approx(sum(expected), abs=1e-4)
    events: list[Event] = []
    built.app.run(tapped(built.session.exit(), events))
    [end] = [e for e in events if isinstance(e, Ended)]
    # the summary at exit is a model call too: billed, and in the cost
    [summary] = [Usage(size, 20) for r, size in zip(provider.requests, provider.sizes,
                                                     strict=True) if r.purpose == "summary"]
    expected.append(cost(summary, SONNET))
    assert end.cost == pytest.approx(sum(expected))
    assert end.chain_cost == round(sum(expected), 4)  # as the header records it
    assert end.chain_sessions == 1 and end.summary_tokens == summary.total
    queries = sum(t.usage.total for t in turns)
    assert f"3 queries, {queries + summary.total:,} tokens billed ({queries:,} for the " \
        f"queries, {summary.total:,} for summaries) | Cost: {money(sum(expected))}" \
        in built.output
    assert "Chain" not in built.output
    saved = parse(path.read_text()).header
    assert saved.cost == pytest.approx(sum(expected), abs=1e-4)
    assert saved.total_tokens == queries + summary.total


def test_chain_cost_after_automatic_compaction_and_resume(tmp_path: Path) -> None:
    provider = FakeProvider()
    built = build_app(tmp_path, provider, model="gpt-4o-mini")  # a 4,000-token window
    run_turns(built, 50)
    assert len(built.compactions) >= 1
    sessions = len(built.compactions) + 1
    built.app.exit()
    end = re.search(rf"Cost: (\$\S+) \| Chain \({sessions} sessions\): (\$\S+)", built.output)
    assert end is not None, built.output[-400:]
    files = [parse(p.read_text()) for p in built.store.root.glob("*.md")]
    recorded = [f.header.cost for f in files]
    assert len(files) == sessions and all(c is not None for c in recorded)
    assert end[2] == money(sum(c for c in recorded if c is not None))
    # resumed in another chat, the chain goes on from what the files record
    again = build_app(tmp_path, FakeProvider(), model="gpt-4o-mini")
    handle_line(again.app, "resume 1")
    again.send("one more question")
    again.app.exit()
    total = re.search(rf"Chain \({sessions + 1} sessions\): (\$\S+)", again.output)
    assert total is not None, again.output[-400:]
    resumed = [f.header.cost for f in (parse(p.read_text()) for p in
                                       again.store.root.glob("*.md"))]
    assert total[1] == money(sum(c for c in resumed if c is not None))


def test_no_price_no_dollar_figure_anywhere_and_the_cost_said_unknown(tmp_path: Path) -> None:
    built = build_app(tmp_path, FakeProvider())  # "test-model": no price, a remote server
    built.send("hello")
    built.app.exit()
    assert "$" not in built.output
    assert "Cost: unknown (no price for test-model" in " ".join(built.output.split())
    [path] = built.store.root.glob("*.md")
    assert "**Cost:**" not in path.read_text()


# ---------------------------------------------------------------- end to end


def test_piped_chat_over_the_anthropic_wire_then_sessions_json(
        tmp_path: Path, anthropic_server: WireServer) -> None:
    anthropic_server.push(
        text("Noted.", input_tokens=10, output_tokens=6, cache_read=100, cache_write=20),
        text(summary_text(40), input_tokens=900, output_tokens=60))  # the summary at exit: a
    # model call, billed like a turn
    env = clean_env(tmp_path / "home", ANTHROPIC_API_KEY="sk-ant-test-0123456789")
    done = run_piped(tmp_path, "note the port is 8443\nexit\n", "--provider", "anthropic",
                     "--model", "claude-sonnet-4-5", "--base-url", anthropic_server.url,
                     "--exit-summary", "model", env=env)  # (auto: local for this short chat)
    assert done.returncode == 0, done.stderr
    turn = cost(Usage(130, 6, 100, 20), SONNET)
    summary = cost(Usage(900, 60), SONNET)
    assert f"Time: 0.0s | Tokens: 136 (in: 130, out: 6, cache read: 100, write: 20) · " \
        f"{money(turn)}" in re.sub(r"Time: \d+\.\ds", "Time: 0.0s", done.stdout)
    assert "1 query, 1,096 tokens billed (136 for the queries, 960 for summaries)" in done.stdout
    assert f"Cost: {money(turn + summary)}" in done.stdout
    [file] = (tmp_path / "sessions").glob("*.md")
    assert parse_head(file.read_text(encoding="utf-8")).header.total_tokens == 1_096
    listed = run_piped(tmp_path, None, "sessions", "--json", env=env)
    [session] = json.loads(listed.stdout)["sessions"]
    assert session["cost"] == pytest.approx(turn + summary, abs=1e-4)
    assert session["chain_cost"] == session["cost"]


def test_a_price_from_the_config_for_a_local_model(tmp_path: Path,
                                                   openai_server: WireServer) -> None:
    openai_server.push(text("Sure.", input_tokens=1000, output_tokens=500, cache_read=400),
                       text(summary_text(40), usage=False))  # the exit's summary: no usage
    config = write_config(tmp_path / "c.yml", "models:\n  my-llama:\n"
                          "    price: {input: 2, output: 4, cached: 1}\n")
    env = clean_env(tmp_path / "home", OPENAI_API_KEY="sk-test-key-0123456789")
    done = run_piped(tmp_path, "hi\n", "--config", str(config), "--model", "my-llama",
                     "--base-url", openai_server.url, env=env)
    assert done.returncode == 0, done.stderr
    turn = (600 * 2 + 400 * 1 + 500 * 4) / 1e6
    assert money(turn) == "$0.0036"
    assert "out: 500, cache read: 400, write: 0) · $0.0036" in done.stdout
    assert "Cost: $0.0036" in done.stdout


def test_offline_shows_no_cost_and_json_says_null(tmp_path: Path) -> None:
    done = run_piped(tmp_path, "hello\n")
    assert done.returncode == 0 and "$" not in done.stdout and "Cost" not in done.stdout
    listed = run_piped(tmp_path, None, "sessions", "--json", env=clean_env(tmp_path / "home"))
    [session] = json.loads(listed.stdout)["sessions"]
    assert session["cost"] is None and session["chain_cost"] is None


# ---------------------------------------------------------------- the header line


def test_cost_header_line_round_trips_and_refuses_garbage(tmp_path: Path) -> None:
    from rollchat.domain import SessionHeader, Summary
    from rollchat.errors import TranscriptError
    from rollchat.storage.transcript import (
        render_finalized,
        render_header,
        render_totals,
        totals_span,
    )

    header = SessionHeader("a_20260101_000000_abcd", datetime(2026, 1, 1, tzinfo=timezone.utc),
                           "A", "config:a", "m", "p", total_queries=2, total_tokens=300,
                           context_tokens=200, cost=0.0123)
    text = render_header(header)
    assert re.search(r"^\*\*Cost:\*\* +\$0\.0123$", text, re.M)
    assert parse_head(text).header.cost == 0.0123
    span = totals_span(text)
    assert span is not None and text[span[0]:span[1]] == render_totals(2, 300, 200, 0.0123)
    assert len(render_totals(3, 400, 250, 1.5)) == len(render_totals(2, 300, 200, 0.0123))
    # finalized by another process that knows no price: the recorded cost stays
    summary = Summary("bg", ("t",), (), ())
    final = render_finalized(text + "## Query 1 (00:00:00)\n**You:** hi\n\n---\n\n", summary,
                             total_queries=1, total_tokens=300)
    assert parse_head(final).header.cost == 0.0123 and final.count("**Cost:**") == 1
    with pytest.raises(TranscriptError, match="header field 'Cost' is not an amount"):
        parse_head(text.replace("$0.0123", "lots"))


def test_the_current_claude_models_are_priced_as_anthropics_pages_state() -> None:
    """platform.claude.com pricing and model pages (stored 2026-12-07): the 5 generation."""
    from rollchat.models.prices import price_for

    assert price_for("claude-opus-5-5") == Price(4.0, 20.0, 0.20, 5.0)
    assert price_for("claude-sonnet-5-5-20261001") == Price(2.0, 10.0, 0.10, 2.5)
    assert price_for("claude-fable-5-1") == Price(10.0, 50.0, 0.25, 12.5)
    assert price_for("claude-haiku-5-5") == Price(0.10, 0.50, 0.01, 0.125)
    assert price_for("claude-opus-4-7") == Price(5.0, 25.0, 0.5, 6.25)
    assert price_for("anthropic/claude-sonnet-4.6") == Price(3.0, 15.0, 0.3, 3.75)


def test_the_current_openai_models_are_priced_as_their_sources_state() -> None:
    """developers.openai.com (stored 2026-12-07) for input and output, the gpt-5.4-nano and
    gpt-5.1 pages for all three; LiteLLM's table (pinned commit) for the cached-input prices
    the models page leaves out (a tenth of the input) and for gpt-5.2, 5.3 and the -pro
    variants. Models no source states: no price."""
    from rollchat.models.prices import price_for

    assert price_for("gpt-5.5") == Price(5.0, 30.0, 0.50, 0.0)
    assert price_for("gpt-5.4-2026-03-05") == Price(2.50, 15.0, 0.25, 0.0)
    assert price_for("openai/gpt-5.4-mini") == Price(0.75, 4.50, 0.075, 0.0)
    assert price_for("gpt-5.4-nano") == Price(0.20, 1.25, 0.02, 0.0)
    assert price_for("gpt-5.1-2025-11-13") == Price(1.25, 10.0, 0.125, 0.0)
    assert price_for("gpt-5.2-2025-12-11") == Price(1.75, 14.0, 0.175, 0.0)
    assert price_for("gpt-5.2-pro") == Price(21.0, 168.0, 21.0, 0.0)
    assert price_for("gpt-5.5-pro-2026-04-23") == Price(30.0, 180.0, 3.0, 0.0)
    assert price_for("gpt-5.3-chat-latest") == Price(1.75, 14.0, 0.175, 0.0)
    # OpenAI's own model page: input, output, cached input, cache writes
    assert price_for("gpt-6-luna") == Price(0.10, 0.50, 0.01, 0.125)
    for unlisted in ("gpt-5.3", "gpt-6", "gpt-5.4-mini-fast", "gpt-6-astra", "gpt-6.1-sol",
                     "gpt-5.6-terra"):  # no OpenAI page stored states their prices
        assert price_for(unlisted) is None, unlisted


@pytest.mark.parametrize(("model", "price"), [
    ("gpt-6-sol", Price(2.0, 10.0, 0.20, 2.50)),  # zh-Hans/api/docs/models/gpt-6-sol
    ("gpt-6-sol-2026-09-22", Price(2.0, 10.0, 0.20, 2.50)),
    ("gpt-6.2-sol", Price(2.0, 10.0, 0.10, 2.50)),  # api/docs/models/gpt-6.2-sol
    ("gpt-5.6-sol", Price(4.0, 20.0, 0.40, 5.0)),  # ja-JP/api/docs/models/gpt-5.6-sol
    ("gpt-5.6", Price(4.0, 20.0, 0.40, 5.0)),  # the alias OpenAI routes to gpt-5.6-sol
    ("openai/gpt-5.6-luna", Price(0.20, 1.20, 0.02, 0.25))])  # api/docs/models/gpt-5.6-luna
def test_openais_newest_families_are_priced_as_their_model_pages_state(
        model: str, price: Price) -> None:
    """Input, output, cached input and cache writes (1.25x the input where the page gives the
    rule, not the figure), short-context rates; a 1M-token prompt half cached costs so."""
    from rollchat.domain import Usage
    from rollchat.models.prices import cost, price_for
    from rollchat.models.tokens import context_window

    assert price_for(model) == price
    usage = Usage(input_tokens=200_000, output_tokens=10_000, cache_read_tokens=100_000,
                  cache_write_tokens=50_000)
    expected = (50_000 * price.input + 10_000 * price.output + 100_000 * price.cached
                + 50_000 * (price.cache_write or 0)) / 1e6
    assert cost(usage, price) == pytest.approx(expected)
    assert context_window(model) == 1_050_000


def test_the_cached_price_of_the_default_openai_model_is_a_tenth_of_its_input() -> None:
    """A chat on gpt-5.4-mini (the default) whose prompt is mostly cache reads costs what
    OpenAI bills, not the input price for every cached token (as before: 10x too much)."""
    from rollchat.domain import Usage
    from rollchat.models.prices import cost, price_for
    from rollchat.providers.names import DEFAULT_MODELS, OPENAI

    price = price_for(DEFAULT_MODELS[OPENAI])
    assert price is not None
    usage = Usage(input_tokens=100_000, output_tokens=1_000, cache_read_tokens=90_000)
    expected = (10_000 * 0.75 + 1_000 * 4.50 + 90_000 * 0.075) / 1e6
    assert cost(usage, price) == pytest.approx(expected)
