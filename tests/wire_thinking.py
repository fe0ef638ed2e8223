"""Anthropic's documented thinking rules, for the local Messages server (tests/wire_servers.py):
a model that thinks (by default, as current Claude models do, or because ``thinking`` asks)
answers with a signed thinking block before its text and tool_use, and a request whose last
tool-use turn lacks its thinking, or carries it altered, is refused with the API's own 400.

Wordings: "Expected `thinking` or `redacted_thinking`, but found `tool_use`. When `thinking` is
enabled, a final `assistant` message must start with a thinking block ..." (e.g.
anomalyco/opencode#3077, deepset-ai/haystack-core-integrations#2146) and "Invalid `signature`
in `thinking` block"; redacted_thinking data the server never issued is refused alike.

Preserved thinking (platform.claude.com "Prefix checks on thinking blocks" and "Fix a thinking
block bound to a different conversation", stored 2026-12): on the models listed there (BOUND) a
block's signature is bound to its prefix, "`system`, `tools`, or an earlier message": "A prefix
check fails if `system`, `tools`, or an earlier message changed after Claude produced a block",
refused with "Invalid `signature` in `thinking` block. The block is bound to a different
conversation. ..." unless ``thinking.block_binding.prefix_mismatch_behavior`` is "drop_block"
with the beta header ``anthropic-beta: thinking-binding-controls-2026-08-01`` (the block is then
dropped). Here the signature carries an HMAC of the thinking and one of thinking + prefix digest
(cache_control marks left out of the digest: they mark cache breakpoints, not content).

Compaction and preserved thinking (platform.claude.com "Compaction and preserved thinking",
beta compact-2026-09-04, stored 2026-12): the check "accepts the swap when the API wrote the
summary": a block kept after a compaction block stays valid while every compaction since it
was made ran on a model with preserved thinking, the kept turns immediately follow the
summarized messages, sent unchanged (the first kept message of another role than the last
summarized one), and ``system`` and ``tools`` are unchanged; otherwise nothing fails at the
compaction, and the first later request that sends the kept thinking gets the 400 (or the
block dropped with ``drop_block``). Here the server that wrote the compaction gives, for a
request that starts with its block, the message lists the block may stand for
(``stand_ins``): a signature is taken when it matches the prefix as sent or with one of them
in the block's place.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
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
BOUND_ELSEWHERE = ("messages.{i}.content.{j}: Invalid `signature` in `thinking` block. The block "
                   "is bound to a different conversation. Remove the block, or set "
                   "`thinking.block_binding.prefix_mismatch_behavior` to \"drop_block\".")
# the models whose thinking is bound to its prefix (the docs' supportedModels list)
BOUND = ("claude-sonnet-5-5", "claude-opus-5-5", "claude-haiku-5-5", "claude-fable-5-1",
         "claude-fable-5-2", "claude-mythos-5-1", "claude-mythos-5-2")
BINDING_BETA = "thinking-binding-controls-2026-08-01"
NEEDS_BETA = ("thinking.block_binding: this field requires the beta header "
              f"`anthropic-beta: {BINDING_BETA}`")  # this server's wording (not documented)


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


# Thinking display (platform.claude.com "Controlling thinking display"; the anthropic SDK's
# ThinkingConfigAdaptiveParam / ThinkingConfigEnabledParam: ``display`` "summarized" returns the
# thinking normally, "omitted" returns the block with empty thinking text and a signature "for
# multi-turn continuity"; "the default depends on the model"): "omitted" by default on Claude
# Opus 4.7 (its docs, quoted in anthropics/claude-code#49268) and the Opus models after it
# and Fable 5 (docker-agent#3415: "Newer Claude models (Opus 4.7+, Fable 5) hide thinking
# content by default"), Mythos, Sonnet 5 and Sonnet 5.5 (the Claude Sonnet 5.5 migration
# guide's table: default display "omitted"; "What's new in Claude Sonnet 5.5": an application
# "goes quiet between tool calls until it sets a display value that returns the text");
# "summarized" on earlier models.
# ``display`` belongs to the adaptive and enabled configurations only.
OMITTED_BY_DEFAULT = ("claude-opus-4-7", "claude-opus-4-8", "claude-opus-5", "claude-sonnet-5",
                      "claude-fable", "claude-mythos")
DISPLAYS = ("summarized", "omitted")
BAD_DISPLAY = ("thinking.display: Input should be 'summarized' or 'omitted'")
NO_DISPLAY = "thinking.{kind}.display: Extra inputs are not permitted"


def shown(body: Mapping[str, Any]) -> bool:
    """Whether the reply's thinking text is returned (display summarized, asked or the
    model's default) or omitted (empty thinking, the signature only)."""
    display = (body.get("thinking") or {}).get("display")
    if display is None:
        return not str(body.get("model") or "").startswith(OMITTED_BY_DEFAULT)
    return bool(display == "summarized")


def thinking_type_refusal(body: dict[str, Any]) -> str | None:
    """The 400 message for a ``thinking`` type (or ``display``) the request's model does not
    take, or None."""
    model = str(body.get("model") or "")
    kind = (body.get("thinking") or {}).get("type")
    if kind is None:
        return None
    display = (body.get("thinking") or {}).get("display")
    if display is not None and kind not in ("adaptive", "enabled"):
        return NO_DISPLAY.format(kind=kind)
    if display is not None and display not in DISPLAYS:
        return BAD_DISPLAY
    if model.startswith(BETWEEN_TOOLS) and kind == "disabled":
        return USE_BETWEEN_TOOLS
    if kind == "between_tools" and not model.startswith(BETWEEN_TOOLS):
        return NOT_SUPPORTED.format(kind=kind)
    if (kind == "enabled" and model.startswith(ADAPTIVE_ONLY)) or (
            kind == "disabled" and model.startswith(ALWAYS_ON)):
        return NOT_SUPPORTED.format(kind=kind)
    return None


def sign(thinking: str, prefix: str | None = None) -> str:
    """The signature this server gives a thinking text (and checks when it comes back); on a
    BOUND model, bound to the digest of its ``prefix`` too (``prefix_digest``)."""
    digest = hmac.new(_SECRET, thinking.encode(), hashlib.sha256).digest()
    if prefix is None:
        return base64.b64encode(digest * 3).decode()  # as long as a real one, roughly
    bound = hmac.new(_SECRET, f"{thinking}\0{prefix}".encode(), hashlib.sha256).digest()
    return base64.b64encode(digest + bound + digest).decode()


def bound(body: Mapping[str, Any]) -> bool:
    """Whether the request's model binds its thinking blocks to their prefix."""
    return str(body.get("model") or "").startswith(BOUND)


def unmarked(value: Any) -> Any:
    """``value`` without its cache_control marks."""
    if isinstance(value, dict):
        return {k: unmarked(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [unmarked(v) for v in value]
    return value


def prefix_digest(body: Mapping[str, Any], i: int, j: int,
                  stand_in: Sequence[Any] | None = None) -> str:
    """The digest of what comes before block ``j`` of message ``i`` (message ``i`` being the
    reply when ``i`` is past the messages sent): system, tools, the earlier messages and the
    blocks before it in its own message; ``stand_in``: the messages in place of the first one
    (the compaction block that summarized them)."""
    messages = list(body.get("messages") or [])
    own = messages[i].get("content") if i < len(messages) else []
    earlier = messages[:i] if stand_in is None or i == 0 else [*stand_in, *messages[1:i]]
    before = [*earlier, {"role": "assistant",
                         "content": own[:j] if isinstance(own, list) else []}]
    text = json.dumps(unmarked({"system": body.get("system"), "tools": body.get("tools"),
                              "messages": before}), sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


def issued_signature(thinking: str, body: Mapping[str, Any]) -> str:
    """The signature of a thinking block this server answers ``body`` with (first in its
    reply)."""
    if not bound(body):
        return sign(thinking)
    return sign(thinking, prefix_digest(body, len(body.get("messages") or []), 0))


def drops_mismatched(body: Mapping[str, Any], headers: Mapping[str, str]) -> bool | str:
    """True when the request asks for mismatched blocks to be dropped (with the beta header),
    a refusal message when it asks without the header, False otherwise."""
    binding = (body.get("thinking") or {}).get("block_binding") or {}
    if binding.get("prefix_mismatch_behavior") != "drop_block":
        return False
    betas = ",".join(v for k, v in headers.items() if k.lower() == "anthropic-beta")
    return True if BINDING_BETA in [b.strip() for b in betas.split(",")] else NEEDS_BETA


def thinks(body: dict[str, Any], by_default: bool) -> bool:
    """Whether the model thinks for this request: ``thinking`` enabled or adaptive, or not
    sent to a model that thinks by default."""
    kind = (body.get("thinking") or {}).get("type")
    return kind in ("enabled", "adaptive") or (kind is None and by_default)


def _signature_refusal(body: dict[str, Any], i: int, j: int, block: dict[str, Any],
                       stand_ins: Sequence[Sequence[Any]] = ()) -> str | None:
    thought, signature = block.get("thinking", ""), str(block.get("signature") or "")
    if not bound(body):
        return None if signature == sign(thought) else ALTERED.format(i=i, j=j)
    try:
        raw = base64.b64decode(signature, validate=True)
    except ValueError:
        return ALTERED.format(i=i, j=j)
    if raw[:32] != hmac.new(_SECRET, thought.encode(), hashlib.sha256).digest():
        return ALTERED.format(i=i, j=j)
    prefixes = [None, *stand_ins] if i > 0 else [None]
    if all(signature != sign(thought, prefix_digest(body, i, j, p)) for p in prefixes):
        return BOUND_ELSEWHERE.format(i=i, j=j)
    return None


def thinking_refusal(body: dict[str, Any], by_default: bool,
                     headers: Mapping[str, str] | None = None,
                     stand_ins: Sequence[Sequence[Any]] = ()) -> str | None:
    """The 400 message for a request that breaks the rules, or None. A block whose prefix
    changed is dropped (left out of the checks) when the request asks for it
    (``drops_mismatched``), as the API drops it. ``stand_ins``: what the compaction block
    the request starts with may stand for (see the module docstring)."""
    refused = thinking_type_refusal(body)
    if refused is not None:
        return refused
    drop = drops_mismatched(body, headers or {})
    if isinstance(drop, str):
        return drop
    messages = body.get("messages") or []
    dropped: set[int] = set()
    for i, m in enumerate(messages):
        content = m.get("content") if isinstance(m.get("content"), list) else []
        if m.get("role") != "assistant":
            continue
        for j, b in enumerate(content):
            if b.get("type") == "thinking":
                wrong = _signature_refusal(body, i, j, b, stand_ins)
                if wrong is not None and drop and wrong == BOUND_ELSEWHERE.format(i=i, j=j):
                    dropped.add(i)
                elif wrong is not None:
                    return wrong
            if b.get("type") == "redacted_thinking" and b.get("data") != REDACTED:
                return NOT_ISSUED.format(i=i, j=j)
    if not thinks(body, by_default) or len(messages) < 2 or len(messages) - 2 in dropped:
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


def thinking_frames(thought: str, redacted: bool, body: Mapping[str, Any],
                    ) -> list[tuple[dict[str, Any], list[dict[str, Any]]]]:
    """The content blocks of a reply's thinking (start block, deltas) to ``body``: the thinking
    streamed in pieces then its signature, as the API streams them (with display omitted: no
    thinking text, the signature alone; here the signature of the empty text the client holds,
    which is what it must send back); and a redacted block if asked."""
    from tests.wire_servers import split_text

    if not shown(body):
        thought = ""
    deltas = [{"type": "thinking_delta", "thinking": p} for p in split_text(thought)]
    deltas.append({"type": "signature_delta", "signature": issued_signature(thought, body)})
    blocks = [({"type": "thinking", "thinking": "", "signature": ""}, deltas)]
    if redacted:
        blocks.append(({"type": "redacted_thinking", "data": REDACTED}, []))
    return blocks


@dataclass(frozen=True)
class Summarized:
    """What a compaction the server wrote summarized: the compaction request's model, system,
    tools and messages (kept by the server under the block's signature)."""

    model: str
    system: Any
    tools: Any
    messages: tuple[Any, ...]

    @staticmethod
    def of(body: Mapping[str, Any]) -> Summarized:
        return Summarized(str(body.get("model") or ""), unmarked(body.get("system")),
                          unmarked(body.get("tools")), tuple(body.get("messages") or ()))

    def holds(self, body: Mapping[str, Any], following: Sequence[Any]) -> bool:
        """Whether the swap is accepted for ``body`` whose messages after the block start with
        ``following``: the compaction ran on a model with preserved thinking, system and tools
        are unchanged, and the first kept message is not of the last summarized one's role
        (else the API merges it into that one)."""
        kept_role = following[0].get("role") if following else None
        last_role = self.messages[-1].get("role") if self.messages else None
        return (self.model.startswith(BOUND) and unmarked(body.get("system")) == self.system
                and unmarked(body.get("tools")) == self.tools
                and (kept_role is None or kept_role != last_role))


def compaction_signature(message: Any) -> str | None:
    """The signature of the compaction block a message starts with (None: it does not)."""
    if not isinstance(message, Mapping) or message.get("role") != "assistant":
        return None
    content = message.get("content")
    first = content[0] if isinstance(content, list) and content else None
    if not isinstance(first, Mapping) or first.get("type") != "compaction":
        return None
    return str(first.get("signature") or "")


def stand_ins(body: Mapping[str, Any], summarized: Mapping[str, Summarized],
              ) -> list[list[Any]]:
    """What the compaction block ``body`` starts with may stand for in a thinking block's
    prefix: the messages it summarized (and, when those start with an earlier block, what that
    one summarized too), each while the conditions hold (``Summarized.holds``). A signature
    is the content's here: a summary written twice is kept for its latest compaction."""
    messages = list(body.get("messages") or [])
    found: list[list[Any]] = []
    head, after, following = (messages[0], [], messages[1:2]) if messages else (None, [], [])
    while head is not None and len(found) < len(summarized):  # (a block met again: done)
        swap = summarized.get(compaction_signature(head) or "")
        if swap is None or not swap.holds(body, following) or not swap.messages:
            break
        found.append([*swap.messages, *after])
        head, after, following = swap.messages[0], [*swap.messages[1:], *after], \
            list(swap.messages[1:2])
    return found
