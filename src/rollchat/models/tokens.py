"""Token counting (tiktoken when loadable, else a character estimate) and context windows.

Counting never raises and tiktoken is imported lazily, on the first count, never at start-up.
"""

from __future__ import annotations

import contextlib
import json
import math
import threading
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from rollchat.domain import Message
from rollchat.providers.base import ToolSpec
from rollchat.providers.names import OFFLINE

DEFAULT_CONTEXT_WINDOW = 128_000
REMEMBERED_CHARS = 65_536  # texts this long have their counts kept within ``remembering``
OFFLINE_CONTEXT_WINDOW = 32_000
# The most characters one token covers: the longest token of cl100k_base and o200k_base is
# 128 bytes (tests/models check the vendored tables), the estimate's 4 ASCII characters.
LONGEST_TOKEN_CHARS = 128

# Context windows in tokens. Matching: exact name, else the longest known prefix
# (so "claude-sonnet-4-5-20250929" -> "claude-sonnet-4-5", "llama3.1:8b" -> "llama3.1").
CONTEXT_WINDOWS: Mapping[str, int] = {
    # Anthropic, from platform.claude.com/docs "Models overview" and each model's overview
    # page ("Context window"), as stored on 2026-12-07: the 5-generation models and Haiku 5.5
    # have 1M. Anthropic's models endpoint states each model's window (max_input_tokens),
    # which is asked and preferred to this table (session/windowing.py); rows below it
    # (Opus 4.6 to 4.8 included, whose pages were not in the stored docs) keep 200K.
    "claude-fable-5": 1_000_000,
    "claude-mythos-5": 1_000_000,
    "claude-opus-5": 1_000_000,
    "claude-sonnet-5": 1_000_000,
    "claude-haiku-5": 1_000_000,
    # Anthropic, docs.anthropic.com "Models overview" and "Context windows" (2025-11): 200K
    # (Sonnet 4/4.5 offered 1M only in beta).
    "claude-opus-4-5": 200_000,
    "claude-opus-4-1": 200_000,
    "claude-opus-4": 200_000,
    "claude-sonnet-4-5": 200_000,
    "claude-sonnet-4": 200_000,
    "claude-haiku-4-5": 200_000,
    "claude-3-7-sonnet": 200_000,
    "claude-3-5-sonnet": 200_000,
    "claude-3-5-haiku": 200_000,
    "claude-3-opus": 200_000,
    "claude-3-haiku": 200_000,
    "claude": 200_000,
    # OpenAI, current: developers.openai.com/docs/models ("Context window": gpt-5.5 and
    # gpt-5.4 1M, gpt-5.4-mini 400K) and each model's page (gpt-5.4-nano, gpt-5.1: 400,000),
    # as stored on 2026-12-07. gpt-5.2, gpt-5.3 and their -codex variants match gpt-5's row,
    # which LiteLLM's table agrees with (BerriAI/litellm model_prices_and_context_window.json
    # at 00035b69f416be24e2e323c13198d9b7d2d1bdf9: 272K in + 128K out); the -pro variants
    # their model's; the "chat" variants 128K (LiteLLM: 128,000 in, 16,384 out). gpt-6 and
    # gpt-6-luna: no source states one (OpenAI's models endpoint states no window): 128K.
    # 1,050,000 (128,000 of it output at most), each model's developers.openai.com page
    # stored 2026-12-07: zh-Hans/api/docs/models/gpt-6-sol, api/docs/models/gpt-6.2-sol
    # (922,000 input at most), ja-JP/api/docs/models/gpt-5.6-sol (the gpt-5.6 alias's),
    # api/docs/models/gpt-5.6-luna. (gpt-5.6-terra, no OpenAI page stored, takes the alias's
    # by prefix.)
    "gpt-6-sol": 1_050_000,
    "gpt-6.2-sol": 1_050_000,
    "gpt-5.6-sol": 1_050_000,
    "gpt-5.6-luna": 1_050_000,
    "gpt-5.6": 1_050_000,
    "gpt-5.5": 1_000_000,
    "gpt-5.4": 1_000_000,
    "gpt-5.4-mini": 400_000,
    "gpt-5.4-nano": 400_000,
    "gpt-5.3-chat": 128_000,
    "gpt-5.2-chat": 128_000,
    "gpt-5.1-chat": 128_000,
    "gpt-5.1": 400_000,
    # OpenAI, earlier, from platform.openai.com/docs/models (each model's page, "Context
    # window"), as of 2025-11.
    "gpt-5": 400_000,
    "gpt-5-mini": 400_000,
    "gpt-5-nano": 400_000,
    "gpt-5-chat": 128_000,
    "gpt-4.1": 1_047_576,
    "gpt-4.1-mini": 1_047_576,
    "gpt-4.1-nano": 1_047_576,
    "gpt-4o": 128_000,
    "gpt-4o-mini": 128_000,
    "gpt-4-turbo": 128_000,
    "gpt-4": 8_192,
    "gpt-3.5-turbo": 16_385,
    "o1": 200_000,
    "o1-mini": 128_000,
    "o3": 200_000,
    "o3-mini": 200_000,
    "o4-mini": 200_000,
    # Local models, from the model pages of the Ollama library (ollama.com/library/<name>),
    # i.e. what the weights support; Ollama's own default num_ctx is smaller unless raised.
    "llama3": 8_192,
    "llama3.1": 131_072,
    "llama3.2": 131_072,
    "llama3.3": 131_072,
    "llama2": 4_096,
    "qwen2.5": 32_768,
    "qwen2.5-coder": 32_768,
    "qwen2": 32_768,
    "qwen3": 40_960,
    "mistral": 32_768,
    "mistral-nemo": 131_072,
    "mixtral": 32_768,
    "gemma2": 8_192,
    "gemma3": 131_072,
    "phi3": 4_096,
    "phi3:mini-128k": 131_072,
    "phi3:medium-128k": 131_072,
    "phi3.5": 131_072,
    "phi4": 16_384,
    "deepseek-r1": 131_072,
    "codellama": 16_384,
    # rollchat's built-in offline model.
    OFFLINE: OFFLINE_CONTEXT_WINDOW,
}


def context_window(model: str, override: int | None = None) -> int:
    """The context window of ``model``: ``override`` if given, else the table, else 128K.

    A vendor prefix such as ``openai/`` or ``anthropic/`` (OpenRouter-style names) is ignored.
    """
    if override is not None and override > 0:
        return override
    name = model.strip().lower()
    for candidate in dict.fromkeys((name, name.rsplit("/", 1)[-1])):
        if candidate in CONTEXT_WINDOWS:
            return CONTEXT_WINDOWS[candidate]
        prefixes = [key for key in CONTEXT_WINDOWS if candidate.startswith(key)]
        if prefixes:
            return CONTEXT_WINDOWS[max(prefixes, key=len)]
    return DEFAULT_CONTEXT_WINDOW


# ---------------------------------------------------------------- encodings

_LOCK = threading.Lock()
_ENCODINGS: dict[str, Any] = {}  # encoding name -> tiktoken Encoding, or None when unloadable
_MODEL_ENCODINGS: dict[str, str | None] = {}  # model -> encoding name from encoding_for_model
_FALLBACK_ENCODINGS = ("cl100k_base",)  # vendored (models/encodings.py): no download


def _vendored() -> frozenset[str]:
    """The encodings read from rollchat's own files (models/data), never downloaded."""
    from rollchat.models.encodings import VENDORED

    return frozenset(VENDORED)

# Overheads in the manner of OpenAI's cookbook recipe for chat models.
PER_MESSAGE_TOKENS = 4
PER_TOOL_CALL_TOKENS = 4
PER_TOOL_SPEC_TOKENS = 8
REPLY_PRIMING_TOKENS = 3


def _load_encoding(name: str) -> Any:
    """The tiktoken encoding ``name`` (cached, also when it failed: None), never raising."""
    with _LOCK:
        if name not in _ENCODINGS:
            try:
                from rollchat.models import encodings  # (tiktoken's, parsed once, cached)

                _ENCODINGS[name] = encodings.load(name)
            except Exception:  # tiktoken may fail in any way offline: catch everything
                _ENCODINGS[name] = None
        return _ENCODINGS[name]


def _model_encoding(model: str) -> Any:
    """The model's own encoding via ``tiktoken.encoding_for_model`` (may download), or None."""
    with _LOCK:
        if model not in _MODEL_ENCODINGS:
            _MODEL_ENCODINGS[model] = None
            try:
                import tiktoken

                encoding = tiktoken.encoding_for_model(model)
                _ENCODINGS.setdefault(encoding.name, encoding)
                _MODEL_ENCODINGS[model] = encoding.name
            except Exception:  # unknown model, no network, no cache ...
                pass
        name = _MODEL_ENCODINGS[model]
        return _ENCODINGS.get(name) if name else None


def estimate_tokens(text: str) -> int:
    """A conservative estimate without a tokenizer: ~4 ASCII characters per token, and one
    token per 2 bytes of non-ASCII text (CJK, emoji and accents tokenize poorly)."""
    if not text:
        return 0
    ascii_chars = sum(1 for ch in text if ord(ch) < 128)
    other_bytes = len(text.encode("utf-8", "replace")) - ascii_chars
    return math.ceil(ascii_chars / 4 + other_bytes / 2)


def _own_encoding_name(model: str) -> str | None:
    """The encoding tiktoken associates with ``model`` (a table lookup, no download; an
    "org/" prefix, as OpenRouter's openai/gpt-4o, is not part of the name)."""
    try:
        import tiktoken.model

        return str(tiktoken.model.encoding_name_for_model(model.rsplit("/", 1)[-1]))
    except Exception:  # unknown to tiktoken (Claude, local models ...)
        return None


class TokenCounter:
    """Counts tokens for one model, never raising.

    Tries, in order: the model's own encoding from the files vendored in models/data
    (o200k_base for gpt-4o, gpt-4.1, the o-series and gpt-5; cl100k_base; sha256 checked),
    else tiktoken's (``encoding_for_model``, which may download the file once and is skipped
    when ``allow_download`` is False), then ``cl100k_base`` from its vendored file, and
    finally a character estimate. Encodings load lazily on the first count, once per process.
    For Claude and local models cl100k is an approximation (their tokenizers are not
    public or differ); ``exact`` is True only when the model's own encoding is used.
    """

    def __init__(self, model: str = "", *, allow_download: bool = True) -> None:
        self.model = model
        self._allow_download = allow_download
        self._resolved = False
        self._encoding: Any = None
        self._method = "estimate"
        self._exact = False
        self._memo: dict[str, int] | None = None  # large texts' counts, while ``remembering``

    def use_model(self, model: str) -> None:
        """Count for ``model`` from now on (``model NAME`` in a chat)."""
        self.model, self._resolved = model, False
        if self._memo is not None:
            self._memo.clear()

    @contextlib.contextmanager
    def remembering(self) -> Iterator[None]:
        """Within it, the count of each text of ``REMEMBERED_CHARS`` or more is kept and not
        encoded again (a plan sizes every turn, then cuts the ones over a request's size:
        each huge answer was encoded twice, 0.3 s a megabyte each time); forgotten at the
        end, so no text outlives its use."""
        outer = self._memo
        if outer is None:
            self._memo = {}
        try:
            yield
        finally:
            if outer is None:
                self._memo = None

    @property
    def exact(self) -> bool:
        self._resolve()
        return self._exact

    @property
    def method(self) -> str:
        """"tiktoken:<encoding>" or "estimate"."""
        self._resolve()
        return self._method

    def _resolve(self) -> None:
        if self._resolved:
            return
        own = _own_encoding_name(self.model) if self.model else None
        encoding = None
        if own in _vendored():  # gpt-4o and later (o200k_base), gpt-4: no download
            encoding = _load_encoding(own)
        elif own and self._allow_download:
            encoding = _model_encoding(self.model)
        candidates = iter(_FALLBACK_ENCODINGS)
        while encoding is None:
            name = next(candidates, None)
            if name is None:
                break
            encoding = _load_encoding(name)
        if encoding is not None:
            name = str(getattr(encoding, "name", "unknown"))
            self._encoding = encoding
            self._method = f"tiktoken:{name}"
            self._exact = own is not None and name.removesuffix("_offline") == own
        self._resolved = True

    def count_text(self, text: str) -> int:
        """Tokens in ``text`` (special-token text such as ``<|endoftext|>`` counts as text)."""
        if not text:
            return 0
        memo = self._memo
        if memo is not None and len(text) >= REMEMBERED_CHARS:
            known = memo.get(text)
            if known is None:
                known = memo[text] = self._count(text)
            return known
        return self._count(text)

    def _count(self, text: str) -> int:
        self._resolve()
        if self._encoding is not None:
            try:
                return len(self._encoding.encode(text, disallowed_special=()))
            except Exception:  # a broken encoding must not break the chat
                pass
        return estimate_tokens(text)

    def count_messages(
        self, system: str, messages: Sequence[Message], tools: Sequence[ToolSpec] = ()
    ) -> int:
        """Tokens of a whole prompt: system prompt, messages (tool calls and their JSON
        arguments included), tool definitions, and the per-message overheads."""
        total = REPLY_PRIMING_TOKENS
        if system:
            total += PER_MESSAGE_TOKENS + self.count_text(system)
        for message in messages:
            total += self.count_message(message)
        for spec in tools:
            total += PER_TOOL_SPEC_TOKENS + self.count_text(spec.name)
            total += self.count_text(spec.description) + self.count_text(_dumps(spec.parameters))
        return total

    def count_message(self, message: Message) -> int:
        """Tokens of one message with its overhead (for incremental estimates)."""
        total = PER_MESSAGE_TOKENS + self.count_text(message.content)
        for call in message.tool_calls:
            total += PER_TOOL_CALL_TOKENS + self.count_text(call.name) + self.count_text(call.id)
            total += self.count_text(_dumps(call.arguments))
        if message.role == "tool":
            total += self.count_text(message.name or "") + self.count_text(
                message.tool_call_id or ""
            )
        # what is sent back with it as it came: thinking with its signature, reasoning
        # items, signed compaction blocks (counted whole: an upper estimate keeps it safe)
        total += sum(self.count_text(b.data) for b in message.extra)
        return total + IMAGE_TOKENS * len(message.images)


# What one image is counted as: Anthropic bills about width x height / 750 tokens and scales
# images down to about 1.15 megapixels (some 1,600 tokens); OpenAI's high detail is of the
# same order. The bytes are not decoded to measure it: an upper estimate keeps the budget safe.
IMAGE_TOKENS = 1600


def _dumps(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except Exception:  # circular or otherwise unserializable: count its repr
        return repr(value)

