"""A saved prompt's ``model:`` (Claude Code's front matter: the command runs with that model),
in process through the real anthropic SDK against the local Messages server: that model
answers the prompt's turn, said in one line, and the chat's model the next; a model the
provider does not serve refuses the prompt in one line, nothing sent."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from rich.console import Console

from rollchat.config.saved_prompts import load_saved_prompts, places
from rollchat.config.settings import AgentConfig, Config
from rollchat.engine.core import EngineSettings
from rollchat.errors import UsageError
from rollchat.providers.anthropic import AnthropicProvider
from rollchat.providers.base import RetryPolicy
from rollchat.session.core import Session
from rollchat.storage.store import SessionStore
from rollchat.storage.transcript import parse
from rollchat.ui.app import ChatApp
from rollchat.ui.render import Renderer
from tests.wire_servers import WireServer, anthropic_server, text

__all__ = ["anthropic_server"]

CHAT_MODEL = "claude-sonnet-4-5"


def _app(tmp_path: Path, base_url: str | None) -> tuple[ChatApp, io.StringIO, SessionStore]:
    home = tmp_path / "home"
    prompts = home / ".claude" / "commands"
    prompts.mkdir(parents=True, exist_ok=True)
    (prompts / "quick.md").write_text("---\nmodel: claude-haiku-4-5\n---\nAnswer briefly: "
                                      "$ARGUMENTS\n")
    (prompts / "odd.md").write_text("---\nmodel: gpt-4o\n---\nAnswer: $ARGUMENTS\n")
    found = load_saved_prompts(places(tmp_path, home, home / "config"), frozenset())
    agent = AgentConfig(key="assistant", name="Assistant", provider="anthropic",
                        model=CHAT_MODEL, base_url=base_url)
    provider = AnthropicProvider(CHAT_MODEL, api_key="k", base_url=base_url, timeout=10)
    engine = EngineSettings(provider, model=CHAT_MODEL, system="s", max_output_tokens=512,
                            temperature=None, retry=RetryPolicy(0, 0.0, 0.0))
    store = SessionStore(tmp_path / "sessions")
    session = Session(config=Config(agents={"assistant": agent}), agent=agent,
                      engine_settings=engine, summary_provider=provider,
                      summary_model=CHAT_MODEL, provider_name="anthropic", store=store,
                      confirm=lambda q: False, context_window=200_000)
    buffer = io.StringIO()
    renderer = Renderer(Console(file=buffer, width=200, color_system=None,
                                force_terminal=False), interactive=False)
    return ChatApp(session, renderer, prompts=found), buffer, store


def test_the_prompts_model_answers_its_turn_then_the_chats_again(
        anthropic_server: WireServer, tmp_path: Path) -> None:
    anthropic_server.push(text("Short."), text("Longer answer."))
    app, out, store = _app(tmp_path, anthropic_server.url)
    quick = app.prompts.commands["quick"]
    app.send_prompt(quick, "what is 2+2", "/quick what is 2+2")
    app.send("and now in full")
    chats = [b for b in anthropic_server.bodies if b.get("messages")]
    assert [b["model"] for b in chats[:2]] == ["claude-haiku-4-5", CHAT_MODEL]
    assert chats[0]["messages"][-1]["content"][-1]["text"].endswith(
        "Answer briefly: what is 2+2")
    said = " ".join(out.getvalue().split())
    assert (f"claude-haiku-4-5 answers /quick (its front matter asks for it); {CHAT_MODEL} "
            "again after it") in said
    assert app.session.engine.model == CHAT_MODEL and app.session.current.name == CHAT_MODEL
    [path] = store.root.glob("*.md")
    first, second = parse(path.read_text()).turns
    assert [(n.kind, n.text) for n in first.notes] == [
        ("model", f"claude-haiku-4-5 answered this turn (/quick); the chat's model is "
                  f"{CHAT_MODEL}")]
    assert second.notes == ()  # the chat's model again: nothing switched


def test_a_model_the_provider_does_not_serve_refuses_the_prompt(tmp_path: Path) -> None:
    app, _, _ = _app(tmp_path, None)  # api.anthropic.com: the table's Claude models only
    with pytest.raises(UsageError) as refused:
        app.send_prompt(app.prompts.commands["odd"], "hi", "/odd hi")
    line = str(refused.value)
    assert line.startswith("/odd not sent (~/.claude/commands/odd.md asks for it): unknown "
                           "model 'gpt-4o' for anthropic; choose one of: claude-")
    assert "\n" not in line
    assert app.session.engine.model == CHAT_MODEL and app.session.state.turns == []
