"""A saved turn's messages again: what a query turn added to the working context, rebuilt from
its blocks byte for byte as they were sent (the user message with its context block, each
reply with its calls, each result as sent, the answer with its status note), so a request made
from saved turns starts as the original requests did and the provider's prompt cache holds."""

from __future__ import annotations

from dataclasses import dataclass, field

from rollchat.domain import (
    Block,
    Message,
    ProviderBlock,
    Text,
    ToolCall,
    ToolResult,
    ToolUse,
    Turn,
)
from rollchat.engine.hygiene import MISSING_RESULT, cut_result
from rollchat.engine.rounds import INTERRUPTED_NOTE
from rollchat.memory.layers import with_block


@dataclass
class _Round:
    """One reply being rebuilt: the text before its calls, the calls, their results."""

    text: str = ""
    calls: list[ToolCall] = field(default_factory=list)
    results: dict[str, ToolResult] = field(default_factory=dict)
    extra: list[ProviderBlock] = field(default_factory=list)  # sent back with the reply

    def messages(self) -> list[Message]:
        out = [Message("assistant", self.text, tool_calls=tuple(self.calls),
                       extra=tuple(self.extra))]
        for call in self.calls:
            r = self.results.get(call.id)
            if r is None:  # a call the turn ended without (see WorkingContext.close_calls)
                out.append(Message("tool", MISSING_RESULT, tool_call_id=call.id,
                                   name=call.name))
                continue
            sent = r.content if r.sent_keep is None else cut_result(r.content, r.sent_keep,
                                                                    call.id)
            out.append(Message("tool", sent, tool_call_id=call.id, name=call.name,
                               images=r.images, is_error=r.is_error))
        return out


def answer_messages(blocks: tuple[Block, ...],
                    ) -> tuple[list[Message], str, tuple[ProviderBlock, ...]]:
    """The replies with tool calls of an answer's ``blocks`` (with their results), and the
    text after the last results (the answer proper) with the provider blocks that came before
    it. A round ends where a text, a call or a provider block comes after a result."""
    out: list[Message] = []
    now = _Round()
    for b in blocks:
        if isinstance(b, (Text, ToolUse, ProviderBlock)) and now.results:
            out += now.messages()
            now = _Round()
        if isinstance(b, ProviderBlock):
            now.extra.append(b)
        elif isinstance(b, Text):
            now.text = b.text
        elif isinstance(b, ToolUse):
            now.calls.append(b.call)
        elif isinstance(b, ToolResult):
            now.results[b.call_id] = b
    if now.calls:
        out += now.messages()
        now = _Round()
    return out, now.text, tuple(now.extra)


def turn_messages(turn: Turn) -> list[Message]:
    """The messages query turn ``turn`` added to the working context, as the engine sent
    them (engine/core.py ``chat``); none for a turn the model never answered. A handed-over
    turn's context is not rebuilt: its message went with the other agent's summary."""
    if turn.status == "unanswered":
        return []
    user = Message("user", with_block(turn.context_block, turn.user), images=turn.attached)
    replies, answer, extra = answer_messages(turn.blocks)
    note = {"interrupted": INTERRUPTED_NOTE,
            "error": f"[answer cut off: {turn.error}]"}.get(turn.status)
    if note:  # as the engine marks a partial answer
        answer = f"{answer}\n\n{note}" if answer else note
    return [user, *replies, *([Message("assistant", answer, extra=extra)] if answer else [])]
