"""Token counting (tiktoken and the estimate) and the context-window table."""

from __future__ import annotations

import sys
from typing import Any

import pytest

from rollchat.domain import Message, ToolCall
from rollchat.models import tokens
from rollchat.models.tokens import (
    CONTEXT_WINDOWS,
    DEFAULT_CONTEXT_WINDOW,
    TokenCounter,
    context_window,
    estimate_tokens,
)
from rollchat.providers.base import ToolSpec


@pytest.fixture
def no_tiktoken(monkeypatch: pytest.MonkeyPatch) -> None:
    """tiktoken cannot be imported at all, and nothing is cached yet."""
    monkeypatch.setattr(tokens, "_ENCODINGS", {})
    monkeypatch.setattr(tokens, "_MODEL_ENCODINGS", {})
    monkeypatch.setitem(sys.modules, "tiktoken", None)
    monkeypatch.setitem(sys.modules, "tiktoken.model", None)


class _BrokenEncoding:
    name = "cl100k_base"

    def encode(self, text: str, **kwargs: Any) -> list[int]:
        raise ValueError("boom")


def test_offline_encoding_is_used_for_claude() -> None:
    counter = TokenCounter("claude-sonnet-4-5")
    assert counter.method == "tiktoken:cl100k_base"
    assert counter.exact is False
    assert counter.count_text("hello world") == 2


def test_gpt4_with_bundled_cl100k_is_exact() -> None:
    counter = TokenCounter("gpt-4", allow_download=False)
    assert counter.method == "tiktoken:cl100k_base"
    assert counter.exact is True


@pytest.mark.parametrize("model", ["gpt-4o", "gpt-4.1-mini", "o3", "o4-mini", "gpt-5",
                                   "gpt-5-mini", "openai/gpt-4o"])
def test_gpt4o_and_later_count_with_the_vendored_o200k_without_a_download(
        model: str, monkeypatch: pytest.MonkeyPatch) -> None:
    def no_download(name: str) -> None:
        raise AssertionError(f"{name} asked of tiktoken (a download)")

    monkeypatch.setattr(tokens, "_model_encoding", no_download)
    counter = TokenCounter(model)  # downloads allowed: the vendored file is used all the same
    assert counter.method == "tiktoken:o200k_base"
    assert counter.exact is True
    assert counter.count_text("hello world") == 2


def test_special_token_text_is_counted_not_rejected() -> None:
    counter = TokenCounter("gpt-4", allow_download=False)
    assert counter.count_text("<|endoftext|>") > 1


def test_estimate_when_tiktoken_is_missing(no_tiktoken: None) -> None:
    counter = TokenCounter("gpt-4o")
    assert counter.count_text("a" * 400) == 100
    assert counter.method == "estimate"
    assert counter.exact is False


def test_estimate_when_encode_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tokens, "_ENCODINGS", {"cl100k_base": _BrokenEncoding()})
    counter = TokenCounter("claude-haiku-4-5")
    assert counter.count_text("abcd" * 10) == 10


def test_estimate_is_conservative_for_non_ascii() -> None:
    assert estimate_tokens("") == 0
    assert estimate_tokens("abcd") == 1
    assert estimate_tokens("日本語のテキスト") >= 8  # one token per character at least
    exact = TokenCounter("claude-sonnet-4").count_text("日本語のテキスト")
    assert estimate_tokens("日本語のテキスト") >= exact


def test_counts_are_plausible() -> None:
    counter = TokenCounter("claude-sonnet-4-5")
    text = "The quick brown fox jumps over the lazy dog. " * 20
    assert 150 <= counter.count_text(text) <= 260
    assert counter.count_text("") == 0


def test_count_messages_includes_overheads_tools_and_arguments() -> None:
    counter = TokenCounter("claude-sonnet-4-5")
    plain = counter.count_messages("sys", [Message("user", "hello")])
    assert plain == counter.count_text("sys") + counter.count_text("hello") + 4 + 4 + 3
    call = ToolCall("c1", "session_archive_read", {"query": "rate limiter " * 20})
    with_call = counter.count_messages(
        "sys",
        [Message("user", "hello"), Message("assistant", "", (call,)),
         Message("tool", "result text", tool_call_id="c1", name="session_archive_read")],
    )
    assert with_call > plain + counter.count_text("rate limiter " * 20)
    spec = ToolSpec("session_archive_read", "Read the previous session.",
                    {"type": "object", "properties": {"query": {"type": "string"}}})
    assert counter.count_messages("sys", [Message("user", "hello")], [spec]) > plain + 10


def test_count_messages_never_raises_on_odd_arguments(no_tiktoken: None) -> None:
    loop: dict[str, Any] = {}
    loop["self"] = loop
    call = ToolCall("c1", "t", loop)
    counter = TokenCounter("whatever")
    assert counter.count_messages("", [Message("assistant", "", (call,))]) > 0


@pytest.mark.parametrize(
    ("model", "window"),
    [
        ("claude-sonnet-4-5", 200_000),
        ("claude-sonnet-4-5-20250929", 200_000),
        ("claude-opus-4-1-20250805", 200_000),
        ("claude-haiku-4-5", 200_000),
        ("claude-3-5-haiku-latest", 200_000),
        ("gpt-4o", 128_000),
        ("gpt-4o-mini-2024-07-18", 128_000),
        ("gpt-4.1", 1_047_576),
        ("gpt-4.1-mini", 1_047_576),
        ("gpt-4", 8_192),
        ("gpt-5", 400_000),
        ("gpt-5-mini-2025-08-07", 400_000),
        ("o3", 200_000),
        ("o4-mini", 200_000),
        ("llama3", 8_192),
        ("llama3:8b", 8_192),
        ("llama3.1:8b", 131_072),
        ("llama3.2", 131_072),
        ("qwen2.5:7b", 32_768),
        ("mistral", 32_768),
        ("gemma2:9b", 8_192),
        ("phi3:mini", 4_096),
        ("phi3:mini-128k", 131_072),
        ("openai/gpt-4.1-nano", 1_047_576),
        ("GPT-4o", 128_000),
        ("offline", 32_000),
        ("some-unknown-model", DEFAULT_CONTEXT_WINDOW),
        ("", DEFAULT_CONTEXT_WINDOW),
    ],
)
def test_context_window_table(model: str, window: int) -> None:
    assert context_window(model) == window


def test_override_wins() -> None:
    assert context_window("claude-sonnet-4-5", 4_000) == 4_000
    assert context_window("unknown", 8_000) == 8_000
    assert context_window("gpt-4o", None) == 128_000


def test_table_values_are_positive() -> None:
    assert all(value > 0 for value in CONTEXT_WINDOWS.values())


@pytest.mark.parametrize(("model", "window"), [
    ("claude-opus-5-5", 1_000_000), ("claude-sonnet-5-5-20261001", 1_000_000),
    ("claude-haiku-5-5", 1_000_000), ("claude-fable-5-1", 1_000_000),
    ("claude-haiku-4-5", 200_000), ("claude-opus-4-8", 200_000)])
def test_the_current_claude_windows(model: str, window: int) -> None:
    """platform.claude.com model pages (stored 2026-12-07); the models endpoint is asked too."""
    assert context_window(model) == window


@pytest.mark.parametrize(("model", "window"), [
    ("gpt-5.5", 1_000_000), ("gpt-5.5-2026-04-23", 1_000_000), ("gpt-5.4", 1_000_000),
    ("gpt-5.4-mini", 400_000), ("gpt-5.4-nano-2026-03-17", 400_000), ("gpt-5.1", 400_000),
    ("openai/gpt-5.4-mini", 400_000), ("gpt-5.2", 400_000), ("gpt-5.3-codex", 400_000),
    ("gpt-5.5-pro", 1_000_000), ("gpt-5.2-chat-latest", 128_000), ("gpt-5.3-chat-latest", 128_000)])
def test_the_current_openai_windows(model: str, window: int) -> None:
    """developers.openai.com's models page and model pages (stored 2026-12-07)."""
    assert context_window(model) == window
