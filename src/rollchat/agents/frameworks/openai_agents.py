"""The OpenAI Agents SDK (``agents.Agent``, package openai-agents), the only importer of
``agents``: each turn ``Runner.run_streamed`` gets rollchat's history as input items and a clone
of the agent whose instructions are rollchat's system prompt. Each function tool's
``needs_approval`` asks rollchat's approval; a refused call interrupts the run and is rejected
with rollchat's refusal (``RunState.reject``), which the model reads. Ctrl-C cancels the run.
Summaries: a clone with no tools, through the agent's own model. The clone and the converted
history are kept from turn to turn (the first word's own cost: bench/bench_frameworks.py)."""

from __future__ import annotations

import copy
import functools
import json
import time
from collections.abc import Awaitable, Callable, Iterator, Sequence
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

MAX_TURNS = 25


def adapt(obj: object, name: str) -> FrameworkAgent:
    runner = AgentsRunner(obj)
    model = getattr(obj, "model", None)
    shown = model if isinstance(model, str) else getattr(model, "model", None)
    instructions = getattr(obj, "instructions", None)
    return FrameworkAgent("openai-agents", str(getattr(obj, "name", None) or name),
                          str(shown or "default"), runner, AgentsModel(obj),
                          instructions=instructions if isinstance(instructions, str) else "",
                          has_tools=bool(getattr(obj, "tools", None)))


def to_items(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """rollchat's messages as the SDK's input items (Responses-shaped)."""
    return [item for m in messages for item in _items_of(m)]


def _items_of(m: Message) -> list[dict[str, Any]]:
    """One message's input items (each value a string: a copy of an item is a whole one)."""
    if m.role == "tool":
        return [{"type": "function_call_output", "call_id": m.tool_call_id or "",
                 "output": m.content}]
    items = [{"role": "assistant" if m.role == "assistant" else "user",
              "content": m.content}] if m.content else []
    return items + [{"type": "function_call", "call_id": c.id, "name": c.name,
                     "arguments": json.dumps(dict(c.arguments))} for c in m.tool_calls]


class History:
    """rollchat's history as input items, each message converted once: the messages before a
    turn are the same objects as the turn before's (the working context keeps them), so only
    the new ones are converted. From the first message that is not the same object (the
    context compacted, restored at resume, cleared, an older tool result shortened) on, it is
    converted again. Each item is given to the SDK as a copy (it may change what it is given)."""

    def __init__(self) -> None:
        self.messages: list[Message] = []  # kept: an id is not reused while they live
        self.items: list[list[dict[str, Any]]] = []
        self.converted = 0  # messages converted so far (what the tests check)

    def __call__(self, history: Sequence[Message]) -> list[dict[str, Any]]:
        kept, known = 0, self.messages
        limit = min(len(known), len(history))
        while kept < limit and known[kept] is history[kept]:
            kept += 1
        del known[kept:], self.items[kept:]
        for m in history[kept:]:
            known.append(m)
            self.items.append(_items_of(m))
        self.converted += len(history) - kept
        return [dict(item) for items in self.items for item in items]


@functools.cache
def _run_config() -> Any:
    """Every run's configuration, made once (the SDK does not change the one it is given:
    it replaces it where it needs another)."""
    from agents import RunConfig

    return RunConfig(tracing_disabled=True)  # nothing leaves the machine but the model calls


def _clone(agent: Any, **changes: Any) -> Any:
    """``agent`` for one run: its model settings asking for usage (rollchat's budget and
    costs come from it; a Chat Completions stream sends it only when asked)."""
    from agents import ModelSettings

    settings = agent.model_settings
    if settings is not None and settings.include_usage is None:
        settings = settings.resolve(ModelSettings(include_usage=True))
    return agent.clone(model_settings=settings, **changes)


def _usage(data: Any) -> Usage | None:
    usage = getattr(getattr(data, "response", None), "usage", None)
    if usage is None:
        return None
    details = getattr(usage, "input_tokens_details", None)
    return Usage(int(usage.input_tokens or 0), int(usage.output_tokens or 0),
                 int(getattr(details, "cached_tokens", 0) or 0))


def _raw(data: Any) -> RunEvent | None:
    kind = getattr(data, "type", "")
    if kind == "response.output_text.delta":
        return TextDelta(str(data.delta))
    if kind in ("response.reasoning_summary_text.delta", "response.reasoning_text.delta"):
        return ThinkingDelta(str(data.delta))
    if kind == "response.completed" and (usage := _usage(data)) is not None:
        return UsageEvent(usage)
    return None


class AgentsRunner:
    framework = "openai-agents"

    def __init__(self, agent: Any) -> None:
        self.agent = agent
        self.channel: Channel | None = None  # the run in flight's
        self.after: After | None = None  # its PostToolUse hooks
        self.refused: dict[str, str] = {}
        self.decided: set[str] = set()
        self.history = History()
        self._made: tuple[tuple[Any, ...], Any] | None = None  # (what it was made of, clone)
        self.clones = 0  # clones made so far (what the tests check)

    def agent_for(self, system: str) -> Any:
        """The agent a run is given: a clone of the agent file's with ``system`` as its
        instructions and usage asked for, each function tool a copy whose ``needs_approval``
        asks rollchat's gate and whose invocation is followed by the PostToolUse hooks of the
        run in flight. Made again only when ``system`` or the agent changed: one of its
        attributes set anew, a tool added to or removed from its list (a clone costs the
        SDK's type-hint evaluation: a third of the first word's own CPU)."""
        import dataclasses

        agent = self.agent
        made = (system, *(getattr(agent, f.name) for f in dataclasses.fields(agent)),
                *agent.tools)
        if self._made is not None and _same(self._made[0], made):
            return self._made[1]
        clone = _clone(agent, instructions=system, tools=self._tools(agent.tools))
        self._made = (made, clone)
        self.clones += 1
        return clone

    def _tools(self, tools: Sequence[Any]) -> list[Any]:
        from agents import FunctionTool

        out = []
        for tool in tools:
            if isinstance(tool, FunctionTool):  # every call asks rollchat's gate first
                tool = copy.copy(tool)
                tool.needs_approval = self.policy(tool.name, tool.needs_approval)
                tool.on_invoke_tool = self._after_invoke(tool.name, tool.on_invoke_tool)
            out.append(tool)
        return out

    def _after_invoke(self, name: str, invoke: Callable[[Any, str], Awaitable[Any]]
                      ) -> Callable[[Any, str], Awaitable[Any]]:
        """A function tool's invocation, then the PostToolUse hooks of the run in flight
        (their word added to the result the model reads)."""
        async def invoked(context: Any, arguments: str) -> Any:
            result = await invoke(context, arguments)
            after, channel = self.after, self.channel
            if after is None or channel is None:
                return result
            said = result if isinstance(result, str) else str(result)
            call = ToolCall(str(getattr(context, "tool_call_id", "")), name,
                            _arguments(arguments))
            added = await channel.on_chat(functools.partial(after, call, said, "ok"))
            return said + added if added else result
        return invoked

    def policy(self, name: str, own: object) -> Callable[[Any, dict[str, Any], str],
                                                          Awaitable[bool]]:
        """A tool's ``needs_approval``: rollchat's gate (the tool's own policy first: a call
        it wants approved is asked too)."""
        async def needs_approval(context: Any, params: dict[str, Any], call_id: str) -> bool:
            refusal = await self.ask(ToolCall(call_id, name, dict(params or {})))
            return refusal is not None  # interrupted, then rejected with the refusal
        return needs_approval

    async def ask(self, call: ToolCall) -> str | None:
        if call.id in self.decided:
            return self.refused.get(call.id)
        refusal = NO_TOOLS if self.channel is None else await self.channel.ask(call)
        self.decided.add(call.id)
        if refusal is not None:
            self.refused[call.id] = refusal
        return refusal

    def run(self, request: RunRequest) -> Iterator[RunEvent]:
        self.refused, self.decided = {}, set()
        self.after = request.after

        async def work(channel: Channel) -> None:
            from agents import Runner

            self.channel = channel
            agent = self.agent_for(request.system)
            items: Any = [*self.history(request.history), {"role": "user",
                                                           "content": request.user.content}]
            try:
                while True:
                    result = Runner.run_streamed(agent, items, max_turns=MAX_TURNS,
                                                 run_config=_run_config())
                    try:
                        await self._stream(result, channel)
                    finally:
                        if not result.is_complete:
                            result.cancel()  # Ctrl-C: the run stops with the task
                    if not result.interruptions:
                        return
                    items = result.to_state()
                    for item in result.interruptions:
                        raw = item.raw_item
                        call = ToolCall(str(getattr(raw, "call_id", "")),
                                        str(item.tool_name or getattr(raw, "name", "")),
                                        _arguments(getattr(raw, "arguments", None)))
                        refusal = await self.ask(call)
                        if refusal is None:
                            items.approve(item)
                        else:
                            items.reject(item, rejection_message=refusal)
            finally:
                self.channel = None

        yield from bridged(work, request.approve)

    async def _stream(self, result: Any, channel: Channel) -> None:
        started: dict[str, float] = {}
        async for event in result.stream_events():
            kind = getattr(event, "type", "")
            if kind == "raw_response_event":
                if (out := _raw(event.data)) is not None:
                    channel.put(out)
            elif kind == "run_item_stream_event" and event.name == "tool_called":
                raw = event.item.raw_item
                call_id = str(getattr(raw, "call_id", ""))
                if call_id not in started:
                    started[call_id] = time.monotonic()
                    channel.put(ToolCalled(ToolCall(call_id, str(getattr(raw, "name", "")),
                                                    _arguments(getattr(raw, "arguments",
                                                                       None)))))
            elif kind == "run_item_stream_event" and event.name == "tool_output":
                raw = event.item.raw_item
                call_id = str(raw.get("call_id") if isinstance(raw, dict)
                              else getattr(raw, "call_id", ""))
                refused = self.refused.get(call_id)
                channel.put(ToolReturned(
                    ToolCall(call_id, "", {}), refused or str(event.item.output),
                    "refused" if refused else "ok",
                    time.monotonic() - started.get(call_id, time.monotonic())))


def _same(made: tuple[Any, ...], now: tuple[Any, ...]) -> bool:
    """The same system prompt, and the same objects in the agent's attributes and tools."""
    return len(made) == len(now) and made[0] == now[0] and all(
        a is b for a, b in zip(made[1:], now[1:], strict=True))


def _arguments(raw: object) -> dict[str, Any]:
    if isinstance(raw, dict):
        return raw
    try:
        value = json.loads(str(raw or "{}"))
    except ValueError:
        return {"arguments": str(raw)}
    return value if isinstance(value, dict) else {"arguments": value}


class AgentsModel:
    """The agent's model as a plain call (a clone with no tools): summaries, acknowledgments."""

    name = "openai-agents"

    def __init__(self, agent: Any) -> None:
        self.agent = agent

    def stream(self, request: ChatRequest) -> Iterator[StreamEvent]:
        async def work(channel: Channel) -> None:
            from agents import Runner

            plain = _clone(self.agent, instructions=request.system, tools=[], handoffs=[],
                           output_type=None)
            items: Any = to_items(request.messages)
            result = Runner.run_streamed(plain, items, max_turns=1, run_config=_run_config())
            try:
                event: Any
                async for event in result.stream_events():
                    if getattr(event, "type", "") == "raw_response_event" and (
                            out := _raw(event.data)) is not None:
                        channel.put(out)
            finally:
                if not result.is_complete:
                    result.cancel()

        yield from plain_call(work)
