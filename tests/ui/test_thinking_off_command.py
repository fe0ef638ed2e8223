"""``thinking off`` in a chat on a Claude model that cannot turn thinking off: said in one
line, and the next request carries what the model takes (the local Messages server refuses
``disabled`` there, as the documentation says). Likewise ``thinking on`` on a model that calls
tools on Chat Completions only without reasoning."""

from __future__ import annotations

import io

from rich.console import Console

from rollchat.config.settings import AgentConfig, Config
from rollchat.engine.core import EngineSettings
from rollchat.providers.anthropic import AnthropicProvider
from rollchat.providers.base import RetryPolicy
from rollchat.providers.openai import OpenAIProvider
from rollchat.session.core import Session
from rollchat.storage.in_memory import InMemoryStore
from rollchat.ui.app import ChatApp
from rollchat.ui.render import Renderer
from rollchat.ui.repl import handle_line
from tests.wire_servers import WireServer, anthropic_server, openai_server, text

__all__ = ["anthropic_server", "openai_server"]


def _chat(server: WireServer, model: str,
          name: str = "anthropic") -> tuple[ChatApp, io.StringIO]:
    agent = AgentConfig(key="assistant", name="Assistant", provider=name, model=model,
                        base_url=server.url)
    provider = (AnthropicProvider if name == "anthropic" else OpenAIProvider)(
        model, api_key="k", base_url=server.url, timeout=10)
    engine = EngineSettings(provider, model=model, system="s", max_output_tokens=512,
                            temperature=None, retry=RetryPolicy(0, 0.0, 0.0))
    session = Session(config=Config(agents={"assistant": agent}), agent=agent,
                      engine_settings=engine, summary_provider=provider, summary_model=model,
                      provider_name=name, store=InMemoryStore(),
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


def test_thinking_on_where_tools_go_without_reasoning_says_so(openai_server: WireServer) -> None:
    """gpt-6-sol over Chat Completions: its requests that offer tools go with effort none (see
    tests/providers/test_params_wire.py), which ``thinking on`` says rather than hiding; a
    request without tools carries the setting."""
    openai_server.push(text("Fine."))
    app, out = _chat(openai_server, "gpt-6-sol", "openai")
    handle_line(app, "thinking on")
    handle_line(app, "hello")
    said = out.getvalue()
    assert ("gpt-6-sol calls tools on Chat Completions only without reasoning: a request that "
            "offers tools goes with reasoning_effort none") in said
    assert openai_server.bodies[-1]["reasoning_effort"] == "medium"
    handle_line(app, "thinking off")
    assert said.count("calls tools on Chat Completions") == out.getvalue().count(
        "calls tools on Chat Completions")  # nothing to say when it is off
    app2, out2 = _chat(openai_server, "gpt-5.6-sol", "openai")
    handle_line(app2, "thinking on")
    assert "without reasoning" not in out2.getvalue()
