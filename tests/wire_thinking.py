"""Anthropic's documented thinking rules, for the local Messages server (tests/wire_servers.py):
a model that thinks (by default, as current Claude models do, or because ``thinking`` asks)
answers with a signed thinking block before its text and tool_use, and a request whose last
tool-use turn lacks its thinking, or carries it altered, is refused with the API's own 400.

Wordings: "Expected `thinking` or `redacted_thinking`, but found `tool_use`. When `thinking` is
enabled, a final `assistant` message must start with a thinking block ..." (e.g.
anomalyco/opencode#3077, deepset-ai/haystack-core-integrations#2146) and "Invalid `signature`
in `thinking` block"; redacted_thinking data the server never issued is refused alike.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
from typing import Any

_SECRET = b"rollchat-wire-thinking"
REDACTED = "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpP"  # opaque, issued

MISSING = ("messages.{i}.content.0.type: Expected `thinking` or `redacted_thinking`, but found "
           "`{found}`. When `thinking` is enabled, a final `assistant` message must start with "
           "a thinking block (preceeding the lastmost set of `tool_use` and `tool_result` "
           "blocks). We recommend you include thinking blocks from previous turns. To avoid "
           "this requirement, disable `thinking`. Please consult our documentation at "
           "https://docs.claude.com/en/docs/build-with-claude/extended-thinking")
ALTERED = "messages.{i}.content.{j}: Invalid `signature` in `thinking` block"
NOT_ISSUED = "messages.{i}.content.{j}: Invalid `data` in `redacted_thinking` block"


# The ``thinking`` types each current model refuses (platform.claude.com, "What's new in Claude
# Opus 5.5": "On Claude Opus 5.5, thinking is always on: a request that sets thinking:
# {type: disabled}, or one that sets a manual budget with {type: enabled, budget_tokens: N},
# returns a 400 invalid_request_error", the first three breaking changes "also apply on Claude
# Fable 5.1"; "What's new in Claude Sonnet 5.5": disabled returns 400 "whose message points to
# between_tools", the lowest setting there; the adaptive-thinking docs: Claude Opus 4.7 and
# Mythos Preview take only adaptive (enabled refused), Mythos Preview has no opt-out; Fable 5
# and Mythos 5 are Mythos-class, adaptive always on). ``between_tools`` is documented for
# Sonnet 5.5 only.
ALWAYS_ON = ("claude-opus-5-5", "claude-fable", "claude-mythos")
ADAPTIVE_ONLY = ("claude-opus-4-7", *ALWAYS_ON)
BETWEEN_TOOLS = ("claude-sonnet-5-5",)
NOT_SUPPORTED = ('"thinking.type.{kind}" is not supported for this model. Use '
                 '"thinking.type.adaptive" and "output_config.effort" to control thinking '
                 "behavior.")
USE_BETWEEN_TOOLS = ('"thinking.type.disabled" is not supported for this model. Use '
                     '"thinking.type.between_tools" to turn off up-front thinking.')


def thinking_type_refusal(body: dict[str, Any]) -> str | None:
    """The 400 message for a ``thinking`` type the request's model does not take, or None."""
    model = str(body.get("model") or "")
    kind = (body.get("thinking") or {}).get("type")
    if kind is None:
        return None
    if model.startswith(BETWEEN_TOOLS) and kind == "disabled":
        return USE_BETWEEN_TOOLS
    if kind == "between_tools" and not model.startswith(BETWEEN_TOOLS):
        return NOT_SUPPORTED.format(kind=kind)
    if (kind == "enabled" and model.startswith(ADAPTIVE_ONLY)) or (
            kind == "disabled" and model.startswith(ALWAYS_ON)):
        return NOT_SUPPORTED.format(kind=kind)
    return None


def sign(thinking: str) -> str:
    """The signature this server gives a thinking text (and checks when it comes back)."""
    digest = hmac.new(_SECRET, thinking.encode(), hashlib.sha256).digest()
    return base64.b64encode(digest * 3).decode()  # as long as a real one, roughly


def thinks(body: dict[str, Any], by_default: bool) -> bool:
    """Whether the model thinks for this request: ``thinking`` enabled or adaptive, or not
    sent to a model that thinks by default."""
    kind = (body.get("thinking") or {}).get("type")
    return kind in ("enabled", "adaptive") or (kind is None and by_default)


def thinking_refusal(body: dict[str, Any], by_default: bool) -> str | None:
    """The 400 message for a request that breaks the rules, or None."""
    refused = thinking_type_refusal(body)
    if refused is not None:
        return refused
    messages = body.get("messages") or []
    for i, m in enumerate(messages):
        content = m.get("content") if isinstance(m.get("content"), list) else []
        if m.get("role") != "assistant":
            continue
        for j, b in enumerate(content):
            if b.get("type") == "thinking" and b.get("signature") != sign(b.get("thinking", "")):
                return ALTERED.format(i=i, j=j)
            if b.get("type") == "redacted_thinking" and b.get("data") != REDACTED:
                return NOT_ISSUED.format(i=i, j=j)
    if not thinks(body, by_default) or len(messages) < 2:
        return None
    last = messages[-1]
    content = last.get("content") if isinstance(last.get("content"), list) else []
    if last.get("role") != "user" or not any(b.get("type") == "tool_result" for b in content):
        return None
    i = len(messages) - 2  # the assistant message of the lastmost tool_use set
    blocks = messages[i].get("content")
    first = blocks[0] if isinstance(blocks, list) and blocks else {"type": "text"}
    if first.get("type") not in ("thinking", "redacted_thinking"):
        return MISSING.format(i=i, found=first.get("type"))
    return None


def thinking_frames(thought: str, redacted: bool) -> list[tuple[dict[str, Any],
                                                              list[dict[str, Any]]]]:
    """The content blocks of a reply's thinking (start block, deltas): the thinking streamed
    in pieces then its signature, as the API streams them; and a redacted block if asked."""
    from tests.wire_servers import split_text

    deltas = [{"type": "thinking_delta", "thinking": p} for p in split_text(thought)]
    deltas.append({"type": "signature_delta", "signature": sign(thought)})
    blocks = [({"type": "thinking", "thinking": "", "signature": ""}, deltas)]
    if redacted:
        blocks.append(({"type": "redacted_thinking", "data": REDACTED}, []))
    return blocks
