"""A Pydantic AI ``Agent`` behind the Runner seam: rollchat's history as Pydantic AI's
``ModelRequest``/``ModelResponse`` messages, the run's events streamed
(``run_stream_events``), and every tool call deferred for approval (``ApprovalRequired``
answered by the run's one capability, ``_Approval``: a refusal is Pydantic AI's own
``ToolDenied``)."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from pydantic_ai import Agent
from pydantic_ai import messages as pm
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.exceptions import ApprovalRequired
from pydantic_ai.tools import (
    DeferredToolRequests,
    DeferredToolResults,
    RunContext,
    ToolApproved,
    ToolDenied,
)

from rollchat.agents.frameworks import FrameworkAgent
from rollchat.agents.frameworks.bridge import Channel, bridged, plain_call
from rollchat.agents.frameworks.instructions import extra_instructions
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
    assert isinstance(obj, Agent)
    agent: Agent[Any, Any] = obj
    has_tools = any(True for _ in _tool_names(agent))
    own = "\n\n".join(text for text in (getattr(i, "instruction", None) for i in getattr(
        agent, "_instructions", ())) if isinstance(text, str))  # its literal instructions
    return FrameworkAgent("pydantic-ai", name, model_name(agent.model),
                          PydanticAIRunner(agent, own), PlainModel(agent), instructions=own,
                          has_tools=has_tools)


def _tool_names(agent: Agent[Any, Any]) -> Iterator[str]:
    for toolset in agent.toolsets:
        yield from getattr(toolset, "tools", {})


def model_name(model: object) -> str:
    """The model's own name (``gpt-4o``), as rollchat's windows and prices know it."""
    if model is None:
        return "pydantic-ai"
    if isinstance(model, str):
        return model.split(":", 1)[-1]
    return str(getattr(model, "model_name", type(model).__name__))


# ---------------------------------------------------------------- history


def to_messages(history: Sequence[Message]) -> list[pm.ModelMessage]:
    """rollchat's messages as Pydantic AI's: a user message or a run of tool results is one
    ``ModelRequest``, an assistant message (text, tool calls) one ``ModelResponse``."""
    out: list[pm.ModelMessage] = []
    for m in history:
        if m.role == "assistant":
            parts: list[pm.ModelResponsePart] = []
            if m.content:
                parts.append(pm.TextPart(m.content))
            parts += [pm.ToolCallPart(c.name, dict(c.arguments), c.id) for c in m.tool_calls]
            if parts:
                out.append(pm.ModelResponse(parts=parts))
            continue
        part: pm.ModelRequestPart
        if m.role == "tool":
            part = pm.ToolReturnPart(m.name or "tool", m.content, m.tool_call_id or "",
                                     outcome="failed" if m.is_error else "success")
        elif m.role == "user":
            part = pm.UserPromptPart(m.content)
        else:
            continue
        last = out[-1] if out else None
        if isinstance(last, pm.ModelRequest) and m.role == "tool" and all(
                isinstance(p, pm.ToolReturnPart) for p in last.parts):
            out[-1] = pm.ModelRequest(parts=[*last.parts, part])
        else:
            out.append(pm.ModelRequest(parts=[part]))
    return out


def _call(part: pm.ToolCallPart) -> ToolCall:
    return ToolCall(part.tool_call_id, part.tool_name, part.args_as_dict())


def _usage(usage: Any) -> Usage:
    return Usage(input_tokens=usage.input_tokens, output_tokens=usage.output_tokens,
                 cache_read_tokens=usage.cache_read_tokens,
                 cache_write_tokens=usage.cache_write_tokens)


def _result_text(part: pm.ToolReturnPart | pm.RetryPromptPart) -> str:
    if isinstance(part, pm.RetryPromptPart):
        return part.model_response()
    content = part.content
    return content if isinstance(content, str) else json.dumps(content, default=str)


# ---------------------------------------------------------------- approval


class _Approval(AbstractCapability[Any]):
    """Every tool call waits for rollchat's approval: Pydantic AI defers it
    (``ApprovalRequired``) and this capability answers it in the run (a refusal is
    ``ToolDenied``, recorded in ``refused``); after a call that ran, the PostToolUse hooks'
    word is added to its result (``after``; None: no hook wants any). One capability, not one
    per hook: Pydantic AI wraps the run's every event in each capability given to the run."""

    def __init__(self, channel: Channel, refused: dict[str, str],
                 after: After | None = None) -> None:
        self.channel, self.refused, self.after = channel, refused, after

    async def before_tool_execute(self, ctx: RunContext[Any], *, call: pm.ToolCallPart,
                                  tool_def: Any, args: Any) -> Any:
        if not ctx.tool_call_approved:
            raise ApprovalRequired
        return args

    async def handle_deferred_tool_calls(self, ctx: RunContext[Any], *,
                                         requests: DeferredToolRequests
                                         ) -> DeferredToolResults | None:
        approvals: dict[str, bool | ToolApproved | ToolDenied] = {}
        for part in requests.approvals:
            refusal = await self.channel.ask(_call(part))
            if refusal is None:
                approvals[part.tool_call_id] = True
            else:
                self.refused[part.tool_call_id] = refusal
                approvals[part.tool_call_id] = ToolDenied(refusal)
        return DeferredToolResults(approvals=approvals)

    async def after_tool_execute(self, ctx: RunContext[Any], *, call: pm.ToolCallPart,
                                 tool_def: Any, args: Any, result: Any) -> Any:
        after = self.after
        if after is None:
            return result
        said = result if isinstance(result, str) else json.dumps(result, default=str)
        added = await self.channel.on_chat(lambda: after(_call(call), said, "ok"))
        return said + added if added else result


# ---------------------------------------------------------------- the run


class PydanticAIRunner:
    framework = "pydantic-ai"

    def __init__(self, agent: Agent[Any, Any], own: str = "") -> None:
        self.agent = agent
        self.own = own  # the agent's literal instructions, which Pydantic AI sends itself

    def run(self, request: RunRequest) -> Iterator[RunEvent]:
        yield from bridged(lambda channel: self._run(request, channel), request.approve)

    async def _run(self, request: RunRequest, channel: Channel) -> None:
        refused: dict[str, str] = {}
        calls: dict[str, ToolCall] = {}
        history = to_messages(request.history)
        async with self.agent.run_stream_events(
                request.user.content, message_history=history,
                instructions=extra_instructions(request.system, self.own) or None,
                capabilities=[_Approval(channel, refused, request.after)]) as run:
            reported = 0
            async for event in run:
                if isinstance(event, pm.FunctionToolCallEvent):  # a response ended: its usage
                    reported = _report_usage(run.all_messages(), len(history), reported,
                                             channel)
                _forward(event, channel, calls, refused)
            _report_usage(run.all_messages(), len(history), reported, channel)


def _report_usage(messages: Sequence[pm.ModelMessage], start: int, reported: int,
                  channel: Channel) -> int:
    """A UsageEvent for each model response of the run not reported yet; the count so far."""
    responses = [m for m in messages[start:] if isinstance(m, pm.ModelResponse)]
    for response in responses[reported:]:
        channel.put(UsageEvent(_usage(response.usage)))
    return len(responses)


def _forward(event: object, channel: Channel, calls: dict[str, ToolCall],
             refused: Mapping[str, str]) -> None:
    if isinstance(event, pm.PartStartEvent):
        if isinstance(event.part, pm.TextPart) and event.part.content:
            channel.put(TextDelta(event.part.content))
        elif isinstance(event.part, pm.ThinkingPart) and event.part.content:
            channel.put(ThinkingDelta(event.part.content))
    elif isinstance(event, pm.PartDeltaEvent):
        if isinstance(event.delta, pm.TextPartDelta) and event.delta.content_delta:
            channel.put(TextDelta(event.delta.content_delta))
        elif isinstance(event.delta, pm.ThinkingPartDelta) and event.delta.content_delta:
            channel.put(ThinkingDelta(event.delta.content_delta))
    elif isinstance(event, pm.FunctionToolCallEvent):
        call = _call(event.part)
        calls[call.id] = call
        channel.put(ToolCalled(call))
    elif isinstance(event, pm.FunctionToolResultEvent):
        part = event.part
        call = calls.get(part.tool_call_id) or ToolCall(part.tool_call_id, part.tool_name, {})
        if part.tool_call_id in refused:
            channel.put(ToolReturned(call, refused[part.tool_call_id], "refused"))
            return
        failed = isinstance(part, pm.RetryPromptPart) or getattr(part, "outcome", "") in (
            "failed", "retried")
        channel.put(ToolReturned(call, _result_text(part), "error" if failed else "ok"))


# ---------------------------------------------------------------- the plain model call


class PlainModel:
    """The agent's model as a plain call with no tools (summaries, the restoration's
    acknowledgment): a Pydantic AI ``Agent`` of the same model with no tools."""

    def __init__(self, agent: Agent[Any, Any]) -> None:
        self.name = model_name(agent.model)
        self.model = agent.model

    def stream(self, request: ChatRequest) -> Iterator[StreamEvent]:
        *earlier, last = request.messages or (Message("user", ""),)
        plain: Agent[None, str] = Agent(self.model, instructions=request.system or None)

        async def work(channel: Channel) -> None:
            history = to_messages(earlier)
            async with plain.run_stream_events(last.content, message_history=history) as run:
                reported = 0
                async for event in run:
                    reported = _report_usage(run.all_messages(), len(history), reported,
                                             channel)
                    _forward(event, channel, {}, {})
                _report_usage(run.all_messages(), len(history), reported, channel)

        yield from plain_call(work)
