"""Context-too-long refusals in the real wordings of each API and local server: recognized, and
the window they state read back (or None when they state none)."""

from __future__ import annotations

import pytest

from rollchat.domain import Message
from rollchat.providers.base import ChatRequest, ContextTooLongError, ServerError
from rollchat.providers.context_errors import is_context_error, stated_limit
from rollchat.providers.openai import OpenAIProvider
from tests.wire_servers import WireServer, error, openai_server

__all__ = ["openai_server"]  # the fixture, imported for pytest

# (where the wording comes from, the error message, the window it states)
WORDINGS: list[tuple[str, str, int | None]] = [
    # OpenAI, e.g. mckaywrigley/chatbot-ui#102 (code context_length_exceeded)
    ("openai", "This model's maximum context length is 4097 tokens. However, you requested "
     "4120 tokens (3120 in the messages, 1000 in the completion). Please reduce the length "
     "of the messages or completion.", 4097),
    # vLLM's OpenAI server, HTTP 400, vllm-project/vllm#3851 and meta-llama/llama-verifications#58
    ("vllm", "This model's maximum context length is 131072 tokens. However, you requested "
     "156632 tokens (152536 in the messages, 4096 in the completion). Please reduce the "
     "length of the messages or completion.", 131072),
    # vLLM V1 engine, OpenBMB/MiniCPM-V#1048 (HTTP 400 through the OpenAI SDK)
    ("vllm v1", "The decoder prompt (length 2136) is longer than the maximum model length of "
     "2048.", 2048),
    # older vLLM scheduler, vllm-project/vllm#525
    ("vllm old", "Input prompt (2664 tokens) is too long and exceeds limit of 2048", 2048),
    # Anthropic, "prompt is too long" (HTTP 400 invalid_request_error)
    ("anthropic", "prompt is too long: 210000 tokens > 200000 maximum", 200000),
    # Anthropic, input + max_tokens over the window: docker/docker-agent#569
    ("anthropic max_tokens", "input length and `max_tokens` exceed context limit: 178959 + "
     "64000 > 200000, decrease input length or `max_tokens` and try again", 200000),
    # llama.cpp server since ggml-org/llama.cpp#15780 ... (type exceed_context_size_error);
    # the same text reaches clients through Ollama (ollama llm/llama_server_test.go)
    ("llama.cpp", "request (302 tokens) exceeds the available context size (256 tokens), "
     "try increasing it", 256),
    # llama.cpp server before that, ggml-org/llama.cpp#17284 (no size in the text)
    ("llama.cpp old", "the request exceeds the available context size, try increasing it",
     None),
    # Ollama's own wording (server/routes.go, llm/llama_server.go), no size given
    ("ollama", "the input length exceeds the context length", None),
    # Ollama's MLX runner (x/mlxrunner/pipeline.go)
    ("ollama mlx", "input length (9000 tokens) exceeds the model's maximum context length "
     "(8192 tokens)", 8192),
    # LM Studio, lmstudio-ai/lmstudio-bug-tracker#546 and cline/cline#3664
    ("lm studio", "Trying to keep the first 10136 tokens when context the overflows. However, "
     "the model is loaded with context length of only 7866 tokens, which is not enough. Try "
     "to load the model with a larger context length, or provide a shorter input", 7866),
    # LM Studio 0.4, tinyhumansai/openhuman#3550
    ("lm studio 0.4", "The number of tokens to keep from the initial prompt is greater than "
     "the context length (n_keep: 10247 >= n_ctx: 4096). Try to load the model with a larger "
     "context length, or provide a shorter prompt.", 4096),
    # LM Studio through opencode, anomalyco/opencode#11141
    ("lm studio n_keep", "Cannot truncate prompt with n_keep (15028) >= n_ctx (7424)", 7424),
]


@pytest.mark.parametrize(("message", "limit"), [w[1:] for w in WORDINGS],
                         ids=[w[0] for w in WORDINGS])
def test_real_wordings_are_recognized_and_their_window_read(message: str,
                                                            limit: int | None) -> None:
    assert is_context_error("", message)
    assert stated_limit(message) == limit


def test_other_errors_are_not_context_errors() -> None:
    for message in ("messages: roles must alternate", "context deadline exceeded",
                    "model 'llama3' not found, try pulling it first", "Internal Server Error"):
        assert not is_context_error("", message), message
        assert stated_limit(message) is None


def test_the_size_in_a_llama_cpp_body_is_used_when_the_message_has_none() -> None:
    # ggml-org/llama.cpp#15780: {"error": {"code": 500, "message": ..., "n_ctx": 256, ...}}
    body = {"error": {"code": 500, "message": "the request exceeds the available context "
                      "size. try increasing the context size or enable context shift",
                      "type": "exceed_context_size_error", "n_prompt_tokens": 1407,
                      "n_ctx": 256}}
    assert stated_limit(body["error"]["message"], body) == 256  # type: ignore[index]
    assert is_context_error("", "", "exceed_context_size_error")


@pytest.mark.parametrize(("status", "message", "limit"), [
    (400, WORDINGS[0][1], 4097),
    (400, WORDINGS[6][1], 256),  # llama.cpp / Ollama
    (500, WORDINGS[7][1], None),  # llama.cpp before 2025-09 answered 500
    (400, WORDINGS[10][1], 7866),  # LM Studio
])
def test_the_provider_raises_context_too_long_with_the_stated_window(
        openai_server: WireServer, status: int, message: str, limit: int | None) -> None:
    openai_server.push(error(status, message))
    provider = OpenAIProvider("local", api_key=None, base_url=openai_server.url, timeout=5)
    with pytest.raises(ContextTooLongError) as info:
        list(provider.stream(ChatRequest("local", "", (Message("user", "hi"),))))
    assert info.value.limit == limit
    assert len(openai_server.requests) == 1  # refused once, never retried as it was


def test_a_plain_server_error_is_still_a_server_error(openai_server: WireServer) -> None:
    openai_server.push(error(500, "boom"))
    provider = OpenAIProvider("local", api_key=None, base_url=openai_server.url, timeout=5)
    with pytest.raises(ServerError):
        list(provider.stream(ChatRequest("local", "", (Message("user", "hi"),))))
