"""A model's window from the provider's models endpoint, preferred to rollchat's table and
remembered (issue 34 item 6): Anthropic's ``GET /v1/models/{id}`` (``max_input_tokens``)
through the real SDK, and an OpenAI-compatible ``/v1/models`` stating ``context_length``,
against the local wire servers (tests/wire_servers.py: do_GET)."""

from __future__ import annotations

from pathlib import Path

from rollchat.models.tokens import DEFAULT_CONTEXT_WINDOW, context_window
from rollchat.models.windows import WindowBook
from rollchat.providers.anthropic import AnthropicProvider
from rollchat.providers.window_probe import StatedWindow, probe_window
from rollchat.session.windowing import window_source
from tests.compaction.test_autocompact import build_app
from tests.wire_servers import WireServer, anthropic_server, openai_server, text

__all__ = ["anthropic_server", "openai_server"]


def test_anthropic_states_a_models_window_at_its_models_endpoint(
        anthropic_server: WireServer) -> None:
    anthropic_server.model_windows["claude-opus-9"] = 750_000
    provider = AnthropicProvider("claude-opus-9", api_key="k", base_url=anthropic_server.url,
                                 timeout=5)
    assert provider.stated_window("claude-opus-9") == StatedWindow(
        750_000, "server", "/v1/models max_input_tokens")
    assert provider.stated_window("claude-unknown-1") is None  # its 404: nothing stated
    assert anthropic_server.gets == ["/v1/models/claude-opus-9", "/v1/models/claude-unknown-1"]


def test_an_unknown_claude_gets_its_window_from_the_endpoint_not_the_fallback(
        anthropic_server: WireServer, tmp_path: Path) -> None:
    """A Claude model newer than rollchat's table: the session asks the endpoint as it starts
    (in the background), applies the stated window before the next request, says so, and the
    answer is remembered for the next start."""
    model = "claude-sonnet-9-endpoint"
    assert context_window(model) == 200_000  # the table's Claude fallback
    anthropic_server.model_windows[model] = 1_000_000
    anthropic_server.push(text("Hello!"))
    provider = AnthropicProvider(model, api_key="k", base_url=anthropic_server.url, timeout=5)
    built = build_app(tmp_path, provider, window=200_000, model=model)
    session = built.session
    assert session.windows.asking is not None  # Session() asked
    # (the chat never waits for it: the test does, long enough for a loaded machine to import
    # the SDK in that thread: joined for 10 s, it was still asking when the chat went on)
    session.windows.asking.join(120)
    assert not session.windows.asking.is_alive()
    assert built.send("hi").status == "ok"
    out = " ".join(built.output.split())
    assert ("Context window: 1,000,000 tokens (stated by the server: /v1/models "
            "max_input_tokens).") in out
    assert session.budget.window == 1_000_000
    assert window_source(session.windows) == "stated by the server"
    assert session.windows.book.get(None, model) == 1_000_000  # what the next start reads


def test_the_answer_is_kept_in_windows_json(anthropic_server: WireServer,
                                            tmp_path: Path) -> None:
    from rollchat.models.windows import WindowLearner
    from rollchat.session.windowing import ask_server

    model = "claude-haiku-9-kept"
    anthropic_server.model_windows[model] = 400_000
    provider = AnthropicProvider(model, api_key="k", base_url=anthropic_server.url, timeout=5)
    book = WindowBook(tmp_path / "windows.json")
    learner = WindowLearner(book, model=model, base_url=anthropic_server.url,
                            window=DEFAULT_CONTEXT_WINDOW, on_change=lambda n: None)
    ask_server(learner, provider)
    assert learner.asking is not None
    learner.asking.join(120)
    assert not learner.asking.is_alive()
    assert WindowBook(tmp_path / "windows.json").entry(anthropic_server.url, model) is not None
    assert WindowBook(tmp_path / "windows.json").get(anthropic_server.url, model) == 400_000


def test_a_compatible_server_stating_context_length(openai_server: WireServer) -> None:
    openai_server.model_windows["some-org/some-model"] = 65_536
    assert probe_window(openai_server.url, "some-org/some-model") == StatedWindow(
        65_536, "server", "/v1/models context_length")
    assert openai_server.gets[0] == "/v1/models"
