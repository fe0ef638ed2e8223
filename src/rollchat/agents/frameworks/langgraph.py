"""A LangGraph compiled graph whose state has ``messages`` (LangChain's ``create_agent``,
LangGraph's ``create_react_agent``) behind the Runner seam: rollchat's history as LangChain
messages, the graph's ``messages`` and ``updates`` streams as events, and each tool call
stopped by LangGraph's human-in-the-loop breakpoint (``interrupt_before=["tools"]``) until
rollchat's gate answers; a refusal is a ``ToolMessage`` with ``status="error"``."""

from __future__ import annotations

import functools
import inspect
import json
import uuid
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langgraph.checkpoint.memory import InMemorySaver

from rollchat.agents.frameworks import FrameworkAgent
from rollchat.agents.frameworks.bridge import Channel, bridged, plain_call
from rollchat.agents.frameworks.instructions import extra_instructions
from rollchat.domain import Message, ToolCall, Usage
from rollchat.engine.runner import (
    After,
    FrameworkError,
    RunEvent,
    RunRequest,
    ToolCalled,
    ToolReturned,
)
from rollchat.providers.base import (
    ChatRequest,
    ProviderError,
    StreamEvent,
    TextDelta,
    ThinkingDelta,
    UsageEvent,
)

TOOLS = "tools"  # the tool node's name in create_agent and create_react_agent graphs
NO_MODEL = ("rollchat found no chat model in this graph to write a summary with "
            "(set summary.provider)")


def adapt(obj: object, name: str) -> FrameworkAgent:
    graph: Any = obj
    model = next((v for v in _held(graph) if isinstance(v, BaseChatModel)), None)
    prompt = next((v for v in _held(graph) if isinstance(v, SystemMessage)), None)
    own = prompt.content if prompt is not None and isinstance(prompt.content, str) else ""
    model_name = str(getattr(model, "model_name", None) or getattr(model, "model", None)
                     or "langgraph")
    return FrameworkAgent("langgraph", name, model_name, LangGraphRunner(graph, own),
                          PlainModel(model, model_name), instructions=own,
                          has_tools=TOOLS in graph.nodes)


def _held(graph: Any) -> Iterator[object]:
    """What the graph's node functions hold (create_agent's model node: its chat model and
    system message); a model with tools bound is given as the model."""
    for node in graph.nodes.values():
        bound = getattr(node, "bound", None)
        for fn in (getattr(bound, "func", None), getattr(bound, "afunc", None)):
            if inspect.isfunction(fn):
                for value in inspect.getclosurevars(fn).nonlocals.values():
                    yield getattr(value, "bound", value)


# ---------------------------------------------------------------- history


def to_messages(history: Sequence[Message]) -> list[BaseMessage]:
    out: list[BaseMessage] = []
    for m in history:
        if m.role == "user":
            out.append(HumanMessage(m.content))
        elif m.role == "assistant":
            out.append(AIMessage(m.content, tool_calls=[
                {"name": c.name, "args": dict(c.arguments), "id": c.id, "type": "tool_call"}
                for c in m.tool_calls]))
        elif m.role == "tool":
            out.append(ToolMessage(m.content, tool_call_id=m.tool_call_id or "",
                                   name=m.name, status="error" if m.is_error else "success"))
    return out


def _text(content: object) -> tuple[str, str]:
    """(text, thinking) of a message's content: a string, or a list of content blocks."""
    if isinstance(content, str):
        return content, ""
    text, thinking = [], []
    for block in content if isinstance(content, list) else ():
        if isinstance(block, str):
            text.append(block)
        elif isinstance(block, dict):
            if block.get("type") == "text":
                text.append(str(block.get("text", "")))
            elif block.get("type") in ("thinking", "reasoning"):
                thinking.append(str(block.get("thinking") or block.get("reasoning") or ""))
    return "".join(text), "".join(thinking)


def _usage(message: AIMessage) -> Usage | None:
    meta = message.usage_metadata
    if not meta:
        return None
    details = meta.get("input_token_details") or {}
    return Usage(input_tokens=meta.get("input_tokens", 0),
                 output_tokens=meta.get("output_tokens", 0),
                 cache_read_tokens=details.get("cache_read", 0) or 0,
                 cache_write_tokens=details.get("cache_creation", 0) or 0)


def _call(raw: Any) -> ToolCall:
    return ToolCall(str(raw.get("id") or ""), str(raw.get("name") or ""),
                    dict(raw.get("args") or {}))


def _content(message: ToolMessage) -> str:
    content = message.content
    return content if isinstance(content, str) else json.dumps(content, default=str)


# ---------------------------------------------------------------- the run


class LangGraphRunner:
    framework = "langgraph"

    def __init__(self, graph: Any, own: str = "") -> None:
        self.graph = graph
        self.own = own  # the graph's own system prompt, sent by its model node
        # the graph's state besides ``messages`` as the last turn that ended left it, given
        # to the next turn's run (kept across compactions: the runner outlives them)
        self.kept: dict[str, Any] = {}

    def kept_state(self) -> Mapping[str, Any]:
        """The graph's state keys besides ``messages`` as the last finished turn left them."""
        return self.kept

    def give_state(self, state: Mapping[str, Any]) -> None:
        """The state keys a resumed session saved, given to the next turn's run."""
        self.kept = dict(state)

    def run(self, request: RunRequest) -> Iterator[RunEvent]:
        yield from bridged(lambda channel: self._run(request, channel), request.approve)

    async def _run(self, request: RunRequest, channel: Channel) -> None:
        # rollchat's history is the truth: a fresh checkpoint per turn holds the run only
        graph = self.graph.copy(update={"checkpointer": InMemorySaver()})
        config: dict[str, Any] = {"configurable": {"thread_id": uuid.uuid4().hex}}
        gate = [TOOLS] if TOOLS in graph.nodes else None
        extra = extra_instructions(request.system, self.own)
        system = [SystemMessage(extra)] if extra else []
        inputs: Any = {**self.kept, "messages": [*system, *to_messages(request.history),
                                                 HumanMessage(request.user.content)]}
        calls: dict[str, ToolCall] = {}
        # with PostToolUse hooks, the graph also stops after its tool node: the results the
        # calls gave are held until the hooks have added their word
        post = gate if request.after is not None else None
        held: list[ToolMessage] | None = [] if post else None
        while True:
            model_node = ""
            async for mode, chunk in graph.astream(inputs, config, interrupt_before=gate,
                                                   interrupt_after=post,
                                                   stream_mode=["messages", "updates"]):
                if mode == "messages":
                    _delta(chunk[0], channel)
                    continue
                for node, update in (chunk or {}).items():
                    for message in _messages_of(update):
                        if isinstance(message, AIMessage) and not isinstance(
                                message, AIMessageChunk):
                            model_node = node
                        _update(message, channel, calls, held)
            state = await graph.aget_state(config)
            if held and request.after is not None:
                await _post(graph, config, state.values.get("messages", []), held,
                            request.after, channel, calls)
                held.clear()
                inputs = None
                continue
            if not state.next:
                self.kept = {k: v for k, v in state.values.items() if k != "messages"}
                return
            if TOOLS not in state.next or not model_node:
                raise FrameworkError(f"the graph stopped before {', '.join(state.next)} "
                                     "(an interrupt rollchat cannot answer)")
            pending, refusals = await _approve(state.values.get("messages", []), channel,
                                               calls)
            if refusals:  # written as the tool node when every call is refused (the graph
                # goes back to its model), else as the model node (create_agent then runs
                # the calls still pending)
                writer = TOOLS if len(refusals) == pending else model_node
                await graph.aupdate_state(config, {"messages": refusals}, as_node=writer)
            inputs = None


def _messages_of(update: object) -> list[Any]:
    if isinstance(update, dict):
        messages = update.get("messages") or []
        return messages if isinstance(messages, list) else [messages]
    return []


def _delta(message: object, channel: Channel) -> None:
    if isinstance(message, AIMessageChunk):
        text, thinking = _text(message.content)
        if thinking:
            channel.put(ThinkingDelta(thinking))
        if text:
            channel.put(TextDelta(text))


def _update(message: object, channel: Channel, calls: dict[str, ToolCall],
            held: list[ToolMessage] | None = None) -> None:
    """A message the graph's nodes added: its usage and calls, or a tool's result (``held``
    for the PostToolUse hooks when it ran)."""
    if isinstance(message, AIMessage):
        usage = _usage(message)
        if usage is not None:
            channel.put(UsageEvent(usage))
        for raw in message.tool_calls:
            call = _call(raw)
            if call.id not in calls:
                calls[call.id] = call
                channel.put(ToolCalled(call))
    elif isinstance(message, ToolMessage):
        if held is not None and message.status != "error":
            held.append(message)
            return
        call = calls.get(message.tool_call_id) or ToolCall(message.tool_call_id,
                                                           message.name or "", {})
        channel.put(ToolReturned(call, _content(message),
                                 "error" if message.status == "error" else "ok"))


async def _post(graph: Any, config: Any, messages: Sequence[Any], held: Sequence[ToolMessage],
                after: After, channel: Channel, calls: dict[str, ToolCall]) -> None:
    """The PostToolUse hooks of the calls that ran (``held``): what they add is written into
    the graph's state as the tool node (the same message ids), so the model reads it."""
    ids = {m.tool_call_id: m.id for m in messages if isinstance(m, ToolMessage)}
    changed = []
    for message in held:
        call = calls.get(message.tool_call_id) or ToolCall(message.tool_call_id,
                                                           message.name or "", {})
        content = _content(message)
        added = await channel.on_chat(functools.partial(after, call, content, "ok"))
        if added:
            content += added
            changed.append(ToolMessage(content, id=ids.get(message.tool_call_id),
                                       tool_call_id=message.tool_call_id, name=message.name,
                                       status=message.status))
        channel.put(ToolReturned(call, content))
    if changed:
        await graph.aupdate_state(config, {"messages": changed}, as_node=TOOLS)


async def _approve(messages: Sequence[Any], channel: Channel,
                   calls: dict[str, ToolCall]) -> tuple[int, list[ToolMessage]]:
    """Asks about each pending call of the last AIMessage: how many were pending, and the
    refused ones' ToolMessages."""
    answered = set()
    for message in reversed(messages):
        if isinstance(message, ToolMessage):
            answered.add(message.tool_call_id)
        elif isinstance(message, AIMessage):
            pending = [_call(raw) for raw in message.tool_calls if raw.get("id") not in answered]
            break
    else:
        return 0, []
    refusals = []
    for call in pending:
        refusal = await channel.ask(call)
        if refusal is not None:
            calls.setdefault(call.id, call)
            channel.put(ToolReturned(call, refusal, "refused"))
            refusals.append(ToolMessage(refusal, tool_call_id=call.id, name=call.name,
                                        status="error"))
    return len(pending), refusals


# ---------------------------------------------------------------- the plain model call


class PlainModel:
    """The graph's chat model as a plain call with no tools (summaries, the restoration's
    acknowledgment); a graph whose model rollchat cannot find has none."""

    def __init__(self, model: BaseChatModel | None, name: str) -> None:
        self.model = model
        self.name = name

    def stream(self, request: ChatRequest) -> Iterator[StreamEvent]:
        model = self.model
        if model is None:
            raise ProviderError(NO_MODEL)
        messages = [*([SystemMessage(request.system)] if request.system else []),
                    *to_messages(request.messages)]

        async def work(channel: Channel) -> None:
            async for chunk in model.astream(messages):
                _delta(chunk, channel)
                if isinstance(chunk, AIMessageChunk) and chunk.usage_metadata:
                    usage = _usage(chunk)
                    if usage is not None:
                        channel.put(UsageEvent(usage))

        yield from plain_call(work)
