"""``thinking off`` in a chat on a Claude model that cannot turn thinking off: said in one
line, and the next request carries what the model takes (the local Messages server refuses
``disabled`` there, as the documentation says)."""

from __future__ import annotations

import io

from rich.console import Console

from rollchat.config.settings import AgentConfig, Config
from rollchat.engine.core import EngineSettings
from rollchat.providers.anthropic import AnthropicProvider
from rollchat.providers.base import RetryPolicy
from rollchat.session.core import Session
from rollchat.storage.in_memory import InMemoryStore
from rollchat.ui.app import ChatApp
from rollchat.ui.render import Renderer
from rollchat.ui.repl import handle_line
from tests.wire_servers import WireServer, anthropic_server, text

__all__ = ["anthropic_server"]


def _chat(server: WireServer, model: str) -> tuple[ChatApp, io.StringIO]:
    agent = AgentConfig(key="assistant", name="Assistant", provider="anthropic", model=model,
                        base_url=server.url)
    provider = AnthropicProvider(model, api_key="k", base_url=server.url, timeout=10)
    engine = EngineSettings(provider, model=model, system="s", max_output_tokens=512,
                            temperature=None, retry=RetryPolicy(0, 0.0, 0.0))
    session = Session(config=Config(agents={"assistant": agent}), agent=agent,
                      engine_settings=engine, summary_provider=provider, summary_model=model,
                      provider_name="anthropic", store=InMemoryStore(),
                      confirm=lambda q: False, context_window=200_000)
    buffer = io.StringIO()
    return ChatApp(session, Renderer(Console(file=buffer, width=300, color_system=None,
                                             force_terminal=False), interactive=False)), buffer


def test_thinking_off_says_what_the_model_does_instead(anthropic_server: WireServer) -> None:
    anthropic_server.push(text("Fine."))
    app, out = _chat(anthropic_server, "claude-opus-5-5")
    assert handle_line(app, "thinking off") is False
    assert handle_line(app, "hello") is False
    said = out.getvalue()
    assert ("claude-opus-5-5 cannot turn thinking off (its documentation: always on): it "
            "thinks adaptively at the lowest effort (low) instead") in said
    assert "Fine." in said and anthropic_server.rejected == []
    assert anthropic_server.bodies[-1]["thinking"] == {"type": "adaptive", "display": "summarized"}


def test_thinking_off_on_a_model_that_turns_it_off_says_nothing_more(
        anthropic_server: WireServer) -> None:
    anthropic_server.push(text("Fine."))
    app, out = _chat(anthropic_server, "claude-sonnet-4-5")
    handle_line(app, "thinking off")
    handle_line(app, "hello")
    assert "cannot turn thinking off" not in out.getvalue()
    assert anthropic_server.bodies[-1]["thinking"] == {"type": "disabled"}
