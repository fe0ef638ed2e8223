"""Review of automatic-compaction control and cost, as users meet them: a refusal with
automatic compaction off, prices of model ids the table does not list exactly, prices set in
the config for a model family."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from rollchat.models.prices import PRICES, Price, money, price_for
from rollchat.ui.repl import handle_line
from tests.compaction.test_autocompact import FakeProvider, build_app
from tests.e2e import clean_env, run_piped, write_config
from tests.wire_servers import (
    Reply,
    WireServer,
    anthropic_server,
    last_user_text,
    openai_server,
    prompt_tokens,
    text,
)

__all__ = ["anthropic_server", "openai_server"]

KEY = "sk-test-key-0123456789"


def test_auto_off_and_a_refusal_says_to_compact_not_to_shorten_the_message(
        tmp_path: Path, openai_server: WireServer) -> None:
    """With auto_compact off, once the conversation outgrows the real window every message
    is refused: the hint names the way out (compact), not a shorter message."""
    openai_server.window, openai_server.counting = 1500, True
    config = write_config(tmp_path / "c.yml", "models:\n  gpt-4o-mini:\n"
                          "    context_window: 100000\nsession:\n  auto_compact: false\n")
    line = "The billing pipeline runs on Tuesdays and we rotate the keys monthly. " * 12
    messages = "".join(f"{line} {i}\n" for i in range(5))
    done = run_piped(tmp_path, messages, "--config", str(config), "--model", "gpt-4o-mini",
                     "--base-url", openai_server.url,
                     env=clean_env(tmp_path / "home", OPENAI_API_KEY=KEY))
    assert done.returncode == 0, done.stderr
    assert openai_server.rejected  # the conversation did outgrow the window
    assert "Shorten or split the message" not in done.stdout
    assert done.stdout.count("automatic compaction is off: type 'compact' (or 'auto on')") \
        == len(openai_server.rejected)
    [path] = (tmp_path / "sessions").glob("*.md")
    assert path.read_text().count("**You:** The billing pipeline") == 5  # none lost


@pytest.mark.parametrize(("model", "entry"), [
    ("o1-pro", "o1-pro"),  # not o1's price, a tenth of it
    ("o1-pro-2025-03-19", "o1-pro"),
    ("gpt-5-pro", "gpt-5-pro"),  # not gpt-5's
    ("gpt-4o-2024-05-13", "gpt-4o-2024-05-13"),  # the first gpt-4o: $5/$15
    ("gpt-5-codex", "gpt-5-codex"),
    ("gpt-5-chat-latest", "gpt-5-chat"),
    ("claude-sonnet-4-0", "claude-sonnet-4"),
    ("claude-3-5-sonnet-v2@20241022", "claude-3-5-sonnet"),
    ("us.anthropic.claude-sonnet-4-20250514-v1:0", "claude-sonnet-4"),  # Bedrock
    ("anthropic/claude-sonnet-4.5", "claude-sonnet-4-5"),  # OpenRouter
    ("anthropic/claude-3.5-haiku", "claude-3-5-haiku"),
])
def test_model_ids_of_the_same_model_get_its_price(model: str, entry: str) -> None:
    assert price_for(model) == PRICES[entry]


@pytest.mark.parametrize("model", [
    "o3-deep-research", "o4-mini-deep-research", "gpt-4o-realtime-preview",
    "gpt-4o-mini-realtime-preview", "claude-opus-4-9", "gpt-4o-mini-tts", "gpt-4.1-turbo",
    "openai/gpt-4o:free",
])
def test_a_different_model_of_the_same_family_gets_no_price(model: str) -> None:
    """Another model whose id starts with a listed one is priced differently: showing the
    listed one's price would be wrong, so nothing is shown."""
    assert price_for(model) is None


def test_a_sibling_model_in_a_chat_shows_no_cost(tmp_path: Path,
                                                 openai_server: WireServer) -> None:
    openai_server.push(text("Found it.", input_tokens=100_000, output_tokens=40_000))
    done = run_piped(tmp_path, "research the port\n", "--model", "o3-deep-research",
                     "--base-url", openai_server.url,
                     env=clean_env(tmp_path / "home", OPENAI_API_KEY=KEY))
    assert done.returncode == 0, done.stderr
    assert "Tokens: 140,000" in done.stdout
    assert "$" not in done.stdout and "Cost" not in done.stdout  # was o3's $0.52


def test_a_price_set_for_a_model_holds_for_its_dated_ids(tmp_path: Path,
                                                         anthropic_server: WireServer) -> None:
    """A price set in the config for claude-sonnet-4-5 (a negotiated one) is the price of
    claude-sonnet-4-5-20250929 too, not the table's list price."""
    anthropic_server.push(text("Noted.", input_tokens=1_000_000, output_tokens=0))
    config = write_config(tmp_path / "c.yml", "models:\n  claude-sonnet-4-5:\n"
                          "    price: {input: 1, output: 5}\n")
    done = run_piped(tmp_path, "note the port is 8443\n", "--config", str(config),
                     "--provider", "anthropic", "--model", "claude-sonnet-4-5-20250929",
                     "--base-url", anthropic_server.url,
                     env=clean_env(tmp_path / "home", ANTHROPIC_API_KEY="sk-ant-test-0123456789"))
    assert done.returncode == 0, done.stderr
    assert "Cost: $1.00" in done.stdout  # the list price would say $3.00
    assert price_for("claude-sonnet-4-5-20250929", {"claude-sonnet-4-5": Price(1, 5, 1)}) \
        == Price(1, 5, 1)
    assert price_for("gpt-4o-mini", {"gpt-4o": Price(1, 5, 1)}) == PRICES["gpt-4o-mini"]


def test_the_restoration_after_compact_and_resume_shows_its_cost(tmp_path: Path) -> None:
    """The restoration's model call is billed and counted in the session's cost; its footer
    shows it like any turn's."""
    built = build_app(tmp_path, FakeProvider(), model="gpt-4o", window=200_000)
    built.send("hello")
    handle_line(built.app, "compact")
    handle_line(built.app, "resume 1")
    shown = re.findall(r"Time: .*", built.output)
    assert len(shown) == 3  # the turn, then two restorations
    assert all(re.search(r" · \$\d\.\d{4}$", f) for f in shown), shown


def test_the_chain_cost_at_exit_is_the_one_sessions_json_gives(
        tmp_path: Path, anthropic_server: WireServer) -> None:
    """Through automatic compactions, the goodbye's chain total and ``sessions --json``'s
    ``chain_cost`` (summed from the headers) are the same figure."""
    def respond(body: dict[str, Any]) -> Reply:
        n = prompt_tokens(body)
        return text(f"<summary>ok</summary> echo: {last_user_text(body)[:30]}",
                    input_tokens=n // 4, cache_read=n // 2, cache_write=n - n // 4 - n // 2,
                    output_tokens=50)

    anthropic_server.responder, anthropic_server.counting = respond, True
    config = write_config(tmp_path / "c.yml", "agents:\n  assistant:\n    max_output_tokens: 200\n"
                          "models:\n  claude-3-5-haiku-20241022:\n    context_window: 3000\n")
    line = "The deployment pipeline for the billing service runs on Tuesdays. " * 5
    env = clean_env(tmp_path / "home", ANTHROPIC_API_KEY="sk-ant-test-0123456789")
    done = run_piped(tmp_path, "".join(f"{line}{i}\n" for i in range(40)), "--config",
                     str(config), "--provider", "anthropic", "--model",
                     "claude-3-5-haiku-20241022", "--base-url", anthropic_server.url, env=env,
                     timeout=120)
    assert done.returncode == 0, done.stderr
    end = re.search(r"Chain \((\d+) sessions\): (\$\S+)", done.stdout)
    assert end is not None and int(end[1]) >= 3, done.stdout[-600:]
    listed = run_piped(tmp_path, None, "sessions", "--json", env=env)
    newest = json.loads(listed.stdout)["sessions"][0]
    assert end[2] == money(newest["chain_cost"])


def test_auto_set_in_the_chat_holds_through_compact_and_resume(tmp_path: Path) -> None:
    """As docs/compaction.md says: `auto off` holds for the rest of the chat (a compaction or a
    resume does not turn automatic compaction back on); a new chat starts from the config."""
    built = build_app(tmp_path, FakeProvider())
    built.send("hello")
    handle_line(built.app, "auto off")
    handle_line(built.app, "compact")
    handle_line(built.app, "resume 1")
    assert built.session.auto_mode == "off"
    handle_line(built.app, "auto")
    assert "Automatic compaction: off (set in this chat)" in built.output
    assert build_app(tmp_path, FakeProvider()).session.auto_mode == "on"
