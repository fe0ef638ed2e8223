"""Strands Agents (``strands.Agent``, package strands-agents), the only importer of strands:
each turn the agent is given rollchat's history as its ``messages`` and rollchat's system
prompt, streamed with ``stream_async``; a ``BeforeToolCallEvent`` hook asks rollchat's approval
and sets ``cancel_tool`` with the refusal, an ``AfterToolCallEvent`` hook adds the PostToolUse
hooks' word to the result; Ctrl-C sets the run's ``cancel_signal``; ``agent.state`` is saved
with the summary and given back at resume. The agent's model (``agent.model.stream``, no
tools) writes summaries."""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from rollchat.agents.frameworks import FrameworkAgent
from rollchat.agents.frameworks.bridge import NO_TOOLS, Channel, bridged, plain_call
from rollchat.domain import Message, ToolCall, Usage
from rollchat.engine.runner import After, RunEvent, RunRequest, ToolCalled, ToolReturned
from rollchat.providers.base import (
    ChatRequest,
    StreamEvent,
    TextDelta,
    ThinkingDelta,
    UsageEvent,
)


def adapt(obj: object, name: str) -> FrameworkAgent:
    from strands.hooks import AfterToolCallEvent, BeforeToolCallEvent

    runner = StrandsRunner(obj)
    obj.add_hook(runner.before_tool, BeforeToolCallEvent)  # type: ignore[attr-defined]
    obj.add_hook(runner.after_tool, AfterToolCallEvent)  # type: ignore[attr-defined]
    config = obj.model.get_config() or {}  # type: ignore[attr-defined]
    model = str(config.get("model_id") or type(obj.model).__name__)  # type: ignore[attr-defined]
    prompt = obj.system_prompt  # type: ignore[attr-defined]
    return FrameworkAgent("strands", str(getattr(obj, "name", None) or name), model, runner,
                          StrandsModel(obj), instructions=prompt if isinstance(prompt, str)
                          else "", has_tools=bool(obj.tool_names))  # type: ignore[attr-defined]


def to_strands(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """rollchat's messages as Strands' (Bedrock's shape): tool results in a user message."""
    out: list[dict[str, Any]] = []
    for m in messages:
        if m.role == "tool":
            block = {"toolResult": {"toolUseId": m.tool_call_id or "", "status": "error"
                                    if m.is_error else "success",
                                    "content": [{"text": m.content}]}}
            if out and out[-1]["role"] == "user" and all(
                    "toolResult" in b for b in out[-1]["content"]):
                out[-1]["content"].append(block)
            else:
                out.append({"role": "user", "content": [block]})
            continue
        content: list[dict[str, Any]] = [{"text": m.content}] if m.content else []
        content += [{"toolUse": {"toolUseId": c.id, "name": c.name, "input": dict(c.arguments)}}
                    for c in m.tool_calls]
        if not content:
            continue
        role = "assistant" if m.role == "assistant" else "user"
        if out and out[-1]["role"] == role:  # Bedrock wants roles to alternate
            out[-1]["content"].extend(content)
        else:
            out.append({"role": role, "content": content})
    return out


def _usage(chunk: Any) -> Usage | None:
    if not isinstance(chunk, dict):
        return None
    usage = (chunk.get("metadata") or {}).get("usage")
    if not usage:
        return None
    return Usage(int(usage.get("inputTokens") or 0), int(usage.get("outputTokens") or 0),
                 int(usage.get("cacheReadInputTokens") or 0),
                 int(usage.get("cacheWriteInputTokens") or 0))


def _text_of(result: dict[str, Any]) -> str:
    return "\n".join(str(c["text"]) for c in result.get("content") or []
                     if isinstance(c, dict) and "text" in c) or str(
        result.get("content") or "")


def _added(content: list[Any], added: str) -> list[Any]:
    """A tool result's content with ``added`` at the end of its last text."""
    for k in range(len(content) - 1, -1, -1):
        if isinstance(content[k], dict) and isinstance(content[k].get("text"), str):
            return [*content[:k], {**content[k], "text": content[k]["text"] + added},
                    *content[k + 1:]]
    return [*content, {"text": added}]


class StrandsRunner:
    framework = "strands"

    def __init__(self, agent: Any) -> None:
        self.agent = agent
        self.channel: Channel | None = None  # the run in flight's
        self.after: After | None = None  # its PostToolUse hooks
        self.refused: dict[str, str] = {}

    def kept_state(self) -> Mapping[str, Any]:
        """The agent's ``agent.state`` (Strands keeps it JSON)."""
        state: dict[str, Any] = self.agent.state.get()
        return state

    def give_state(self, state: Mapping[str, Any]) -> None:
        """``agent.state`` as a resumed session saved it, through its own set and delete."""
        kept = self.agent.state
        for key in kept.get():
            kept.delete(key)
        for key, value in state.items():
            kept.set(key, value)

    async def before_tool(self, event: Any) -> None:
        """Strands' BeforeToolCallEvent: rollchat's approval, a refusal as ``cancel_tool``."""
        use = event.tool_use
        channel = self.channel
        call = ToolCall(str(use.get("toolUseId")), str(use.get("name")),
                        dict(use.get("input") or {}))
        refusal = NO_TOOLS if channel is None else await channel.ask(call)
        if refusal is not None:
            self.refused[call.id] = refusal
            event.cancel_tool = refusal

    async def after_tool(self, event: Any) -> None:
        """Strands' AfterToolCallEvent: the PostToolUse hooks after a call that ran, their
        word added to the result's text (Strands sends the event's ``result`` on)."""
        channel, after = self.channel, self.after
        use = event.tool_use
        key = str(use.get("toolUseId"))
        if channel is None or after is None or key in self.refused or (
                event.cancel_message is not None):
            return
        call = ToolCall(key, str(use.get("name")), dict(use.get("input") or {}))
        result = event.result
        status = "error" if result.get("status") == "error" else "ok"
        added = await channel.on_chat(functools.partial(after, call, _text_of(result), status))
        if added:
            event.result = {**result, "content": _added(list(result.get("content") or []),
                                                        added)}

    def run(self, request: RunRequest) -> Iterator[RunEvent]:
        cancel = threading.Event()
        self.refused = {}
        self.after = request.after

        async def work(channel: Channel) -> None:
            self.channel = channel
            agent = self.agent
            agent.messages = to_strands(request.history)
            agent.system_prompt = request.system
            started: dict[str, float] = {}
            try:
                async for event in agent.stream_async(request.user.content,
                                                      cancel_signal=cancel):
                    for out in self._events(event, started):
                        channel.put(out)
            finally:
                self.channel = None

        yield from bridged(work, request.approve, stop=cancel.set)

    def _events(self, event: Any, started: dict[str, float]) -> Iterator[RunEvent]:
        if not isinstance(event, dict):
            return
        if "data" in event and isinstance(event["data"], str):
            yield TextDelta(event["data"])
        elif "reasoningText" in event and isinstance(event["reasoningText"], str):
            yield ThinkingDelta(event["reasoningText"])
        elif "event" in event and (usage := _usage(event["event"])) is not None:
            yield UsageEvent(usage)
        elif isinstance(event.get("message"), dict):
            for block in event["message"].get("content") or []:
                if "toolUse" in block:
                    use = block["toolUse"]
                    started[use["toolUseId"]] = time.monotonic()
                    yield ToolCalled(ToolCall(str(use["toolUseId"]), str(use["name"]),
                                              dict(use.get("input") or {})))
                elif "toolResult" in block:
                    result = block["toolResult"]
                    key = str(result.get("toolUseId"))
                    refused = key in self.refused
                    yield ToolReturned(
                        ToolCall(key, "", {}), self.refused.get(key) or _text_of(result),
                        "refused" if refused else "error" if result.get("status") == "error"
                        else "ok", time.monotonic() - started.get(key, time.monotonic()))


class StrandsModel:
    """The Strands agent's model as a plain call (no tools): summaries, acknowledgments."""

    name = "strands"

    def __init__(self, agent: Any) -> None:
        self.agent = agent

    def stream(self, request: ChatRequest) -> Iterator[StreamEvent]:
        async def work(channel: Channel) -> None:
            async for chunk in self.agent.model.stream(to_strands(request.messages), None,
                                                       request.system):
                delta = (chunk.get("contentBlockDelta") or {}).get("delta") or {}
                if isinstance(delta.get("text"), str):
                    channel.put(TextDelta(delta["text"]))
                elif (usage := _usage(chunk)) is not None:
                    channel.put(UsageEvent(usage))

        yield from plain_call(work)
