"""A Google ADK agent (an ``LlmAgent``, or a workflow such as ``SequentialAgent``: any
``BaseAgent``; package google-adk) behind the Runner seam, the only importer of google.adk:
each turn ADK's own ``Runner`` runs it on a fresh in-memory session holding rollchat's history
as ADK events and the kept session state; a plugin's ``before_tool_callback`` asks rollchat's
approval (a refusal is ADK's own ``{"error": ...}`` response) and its ``before_model_callback``
appends rollchat's additions to the instructions of each model call. The model of the agent
(a workflow's first ``LlmAgent``: ``canonical_model``, no tools) writes summaries."""

from __future__ import annotations

import asyncio
import json
import logging
import sys
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from google.adk.agents import BaseAgent, LlmAgent, RunConfig
from google.adk.agents.callback_context import CallbackContext
from google.adk.agents.run_config import StreamingMode  # type: ignore[attr-defined,unused-ignore]
from google.adk.apps import App
from google.adk.events import Event
from google.adk.models import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.plugins.base_plugin import BasePlugin
from google.adk.runners import Runner
from google.adk.sessions import InMemorySessionService
from google.adk.tools.base_tool import BaseTool
from google.adk.tools.tool_context import ToolContext
from google.genai import types

from rollchat.agents.frameworks import FrameworkAgent
from rollchat.agents.frameworks.bridge import Channel, bridged, plain_call, shared_loop
from rollchat.agents.frameworks.instructions import extra_instructions
from rollchat.domain import Message, ToolCall, Usage
from rollchat.engine.runner import After, RunEvent, RunRequest, ToolCalled, ToolReturned
from rollchat.errors import ConfigError
from rollchat.providers.base import (
    ChatRequest,
    ProviderError,
    StreamEvent,
    TextDelta,
    ThinkingDelta,
    UsageEvent,
)

APP = "rollchat"
USER = "user"
TEMP = "temp:"  # ADK's prefix of state that lasts one invocation
POST_TOOL_USE = "post_tool_use"  # the response's key for what PostToolUse hooks add
NO_MODEL = ("rollchat found no LlmAgent in this ADK agent to write a summary with "
            "(set summary.provider)")


def adapt(obj: object, name: str) -> FrameworkAgent:
    plugins: tuple[BasePlugin, ...] = ()
    if isinstance(obj, App):  # its root agent, run with the App's plugins after rollchat's
        plugins = tuple(obj.plugins)
        obj = obj.root_agent
        if not isinstance(obj, BaseAgent):
            raise ConfigError(f"{name} is an ADK App whose root_agent is a "
                              f"{type(obj).__name__} (an ADK 2 graph workflow, not a "
                              "BaseAgent), which rollchat cannot run")
    assert isinstance(obj, BaseAgent)
    # ADK logs a failed run with its traceback: the failure is rollchat's one line instead
    logging.getLogger("google_adk").addHandler(logging.NullHandler())
    # a workflow root (SequentialAgent, LoopAgent, ParallelAgent) has no instruction of its
    # own: rollchat's additions go to each of its LlmAgents' model calls
    own = obj.instruction if isinstance(obj, LlmAgent) and isinstance(obj.instruction,
                                                                      str) else ""
    first = first_llm(obj)
    return FrameworkAgent("google-adk", name, model_name(first), ADKRunner(obj, own, plugins),
                          PlainModel(first, obj.name), instructions=own,
                          has_tools=_has_tools(obj),
                          no_summaries=None if first is not None else NO_MODEL)


def _has_tools(agent: Any) -> bool:
    return bool(getattr(agent, "tools", None)) or any(
        _has_tools(sub) for sub in getattr(agent, "sub_agents", ()) or ())


def first_llm(agent: BaseAgent) -> LlmAgent | None:
    """The agent itself when it is an LlmAgent, else the first LlmAgent of its sub-agents
    (depth first): the model a workflow's summaries are written with."""
    if isinstance(agent, LlmAgent):
        return agent
    for sub in agent.sub_agents:
        found = first_llm(sub)
        if found is not None:
            return found
    return None


def model_name(agent: LlmAgent | None) -> str:
    """The model's own name (``openai/gpt-4o`` is ``gpt-4o``), as rollchat's windows and
    prices know it."""
    model = agent.model if agent is not None else ""
    name = model if isinstance(model, str) else str(getattr(model, "model", "") or "")
    return name.rsplit("/", 1)[-1] or "google-adk"


# ---------------------------------------------------------------- history


def _response(content: str) -> dict[str, Any]:
    """A tool result as ADK's function response: the JSON object it was, else ``result``."""
    try:
        value = json.loads(content)
    except ValueError:
        return {"result": content}
    return value if isinstance(value, dict) else {"result": value}


def _failed(response: object) -> bool:
    """ADK's shape of a failed call: a response that is only an ``error``."""
    return isinstance(response, dict) and set(response) == {"error"}


def _result_text(response: object) -> str:
    """A function response as the model reads it (as LiteLlm and Gemini serialize it)."""
    return response if isinstance(response, str) else json.dumps(response, ensure_ascii=False,
                                                                  default=str)


def to_events(history: Sequence[Message], author: str) -> list[Event]:
    """rollchat's messages as ADK events: the user's as ``user`` content, the agent's replies
    (text, function calls) as ``model`` content by ``author``, a run of tool results as one
    event of function responses."""
    out: list[Event] = []
    invocation = uuid.uuid4().hex
    for m in history:
        if m.role == "user":
            out.append(Event(invocation_id=invocation, author=USER, content=types.Content(
                role="user", parts=[types.Part(text=m.content)])))
        elif m.role == "assistant":
            parts = [types.Part(text=m.content)] if m.content else []
            parts += [types.Part(function_call=types.FunctionCall(
                id=c.id, name=c.name, args=dict(c.arguments))) for c in m.tool_calls]
            if parts:
                out.append(Event(invocation_id=invocation, author=author,
                                 content=types.Content(role="model", parts=parts)))
        elif m.role == "tool":
            part = types.Part(function_response=types.FunctionResponse(
                id=m.tool_call_id or "", name=m.name or "tool", response=_response(m.content)))
            last = out[-1] if out else None
            if last is not None and last.content is not None and last.get_function_responses() \
                    and last.author == author:
                last.content.parts = [*(last.content.parts or []), part]
            else:
                out.append(Event(invocation_id=invocation, author=author,
                                 content=types.Content(role="user", parts=[part])))
    return out


def _usage(meta: Any) -> Usage:
    """A model response's ``usage_metadata`` as rollchat's Usage. The output is the total less
    the prompt: Gemini counts thoughts apart from ``candidates_token_count``, LiteLlm's
    completion tokens already hold them (and it estimates ``thoughts_token_count`` besides)."""
    prompt = meta.prompt_token_count or 0
    total = meta.total_token_count
    output = total - prompt - (meta.tool_use_prompt_token_count or 0) if total else (
        meta.candidates_token_count or 0) + (meta.thoughts_token_count or 0)
    return Usage(input_tokens=prompt, output_tokens=max(output, 0),
                 cache_read_tokens=meta.cached_content_token_count or 0)


# ---------------------------------------------------------------- approval, instructions


class _Gate(BasePlugin):  # type: ignore[misc,unused-ignore]  # Any without google-adk
    """rollchat's part of the run, as an ADK plugin (its callbacks run before the agent's
    own): each tool call asks rollchat's approval; each model call gets rollchat's additions
    appended to the agent's instructions."""

    def __init__(self, channel: Channel, extra: str, refused: dict[str, str],
                 after: After | None = None) -> None:
        super().__init__(name="rollchat")
        self.channel, self.extra, self.refused, self.after = channel, extra, refused, after
        self.started: dict[str, float] = {}

    async def before_model_callback(self, *, callback_context: CallbackContext,
                                    llm_request: LlmRequest) -> LlmResponse | None:
        if self.extra:
            llm_request.append_instructions([self.extra])
        return None

    async def before_tool_callback(self, *, tool: BaseTool, tool_args: dict[str, Any],
                                   tool_context: ToolContext) -> dict[str, Any] | None:
        call_id = tool_context.function_call_id or ""
        refusal = await self.channel.ask(ToolCall(call_id, tool.name, dict(tool_args)))
        if refusal is None:
            self.started[call_id] = time.monotonic()
            return None
        self.refused[call_id] = refusal
        return {"error": refusal}  # ADK's own refusal shape ("This tool call is rejected.")

    async def after_tool_callback(self, *, tool: BaseTool, tool_args: dict[str, Any],
                                  tool_context: ToolContext, result: dict[str, Any]
                                  ) -> dict[str, Any] | None:
        """The PostToolUse hooks after a call that ran: their word joins the response."""
        after, call_id = self.after, tool_context.function_call_id or ""
        if after is None or call_id in self.refused:
            return None
        call = ToolCall(call_id, tool.name, dict(tool_args))
        # a tool's own value, before ADK wraps what is not a dict as {"result": ...}
        response = result if isinstance(result, dict) else {"result": result}
        status = "error" if _failed(response) else "ok"
        added = await self.channel.on_chat(lambda: after(call, _result_text(response), status))
        return {**response, POST_TOOL_USE: added.strip()} if added.strip() else None


# ---------------------------------------------------------------- the run


class ADKRunner:
    """Runs the agent with ADK's ``Runner`` on an in-memory session: rollchat's history is
    the session's events each turn; the session's ``state`` is kept from turn to turn."""

    framework = "google-adk"

    def __init__(self, agent: BaseAgent, own: str = "",
                 plugins: Sequence[BasePlugin] = ()) -> None:
        self.agent = agent  # any BaseAgent: an LlmAgent, or a workflow of them
        self.plugins = tuple(plugins)  # the plugins of the App the agent came in, if any
        self.own = own  # the agent's literal instruction, which ADK sends itself
        self.state: dict[str, Any] = {}  # the ADK session state, kept across turns

    def kept_state(self) -> Mapping[str, Any]:
        """The ADK session state the last turn left (its ``temp:`` keys dropped)."""
        return self.state

    def give_state(self, state: Mapping[str, Any]) -> None:
        """The session state a resumed session saved: the next turn's session starts with it."""
        self.state = dict(state)

    def run(self, request: RunRequest) -> Iterator[RunEvent]:
        abort = asyncio.Event()

        def stop() -> None:
            shared_loop().call_soon_threadsafe(abort.set)

        yield from bridged(lambda channel: self._run(request, channel, abort), request.approve,
                           stop)

    async def _run(self, request: RunRequest, channel: Channel, abort: asyncio.Event) -> None:
        _quiet_litellm()
        refused: dict[str, str] = {}
        gate = _Gate(channel, extra_instructions(request.system, self.own), refused,
                     request.after)
        service = InMemorySessionService()
        runner = Runner(app=App(name=APP, root_agent=self.agent,
                                    plugins=[gate, *self.plugins]),
                        session_service=service)
        session = await service.create_session(app_name=APP, user_id=USER,
                                               state=dict(self.state))
        for event in to_events(request.history, self.agent.name):
            await service.append_event(session, event)
        stream = _Stream(channel, refused, gate.started)
        message = types.Content(role="user", parts=[types.Part(text=request.user.content)])
        try:
            async for event in runner.run_async(
                    user_id=USER, session_id=session.id, new_message=message,
                    run_config=RunConfig(streaming_mode=StreamingMode.SSE),
                    abort_signal=abort):
                stream.take(event)
        finally:
            kept = await service.get_session(app_name=APP, user_id=USER,
                                             session_id=session.id)
            if kept is not None:
                self.state = {k: v for k, v in kept.state.items() if not k.startswith(TEMP)}
            await runner.close()


def _quiet_litellm() -> None:
    """An agent file that uses ADK's ``LiteLlm``: litellm prints a banner and hints to stdout
    with each failure, besides the exception rollchat shows as one line; it is told not to
    (imported here, in the run, where the model call would import it anyway)."""
    if "google.adk.models.lite_llm" in sys.modules:
        import litellm  # type: ignore[import-not-found,unused-ignore]

        litellm.suppress_debug_info = True


class _Stream:
    """ADK's events as RunEvents: partial events' text as it comes (the whole event that
    follows them repeats it), function calls and responses, usage per model response."""

    def __init__(self, channel: Channel, refused: Mapping[str, str],
                 started: Mapping[str, float]) -> None:
        self.channel, self.refused, self.started = channel, refused, started
        self.calls: dict[str, ToolCall] = {}
        self.streamed = False

    def take(self, event: Event) -> None:
        parts = (event.content.parts or []) if event.content is not None else []
        if event.partial:
            self.streamed = True
            self._text(parts)
            return
        if not self.streamed:
            self._text(parts)
        self.streamed = False
        if event.usage_metadata is not None and event.author != USER:
            self.channel.put(UsageEvent(_usage(event.usage_metadata)))
        for part in parts:
            if part.function_call is not None:
                fc = part.function_call
                call = ToolCall(fc.id or "", fc.name or "", dict(fc.args or {}))
                self.calls[call.id] = call
                self.channel.put(ToolCalled(call))
            elif part.function_response is not None:
                self._returned(part.function_response)

    def _text(self, parts: Sequence[types.Part]) -> None:
        for part in parts:
            if part.text:
                self.channel.put(ThinkingDelta(part.text) if part.thought
                                 else TextDelta(part.text))

    def _returned(self, fr: types.FunctionResponse) -> None:
        call_id = fr.id or ""
        call = self.calls.get(call_id) or ToolCall(call_id, fr.name or "", {})
        if call_id in self.refused:
            self.channel.put(ToolReturned(call, self.refused[call_id], "refused"))
            return
        response = fr.response
        failed = _failed(response)
        elapsed = time.monotonic() - self.started.get(call_id, time.monotonic())
        self.channel.put(ToolReturned(call, _result_text(response), "error" if failed else "ok",
                                      elapsed))


# ---------------------------------------------------------------- the plain model call


class PlainModel:
    """The agent's model as a plain call with no tools (summaries, the restoration's
    acknowledgment): its ``BaseLlm`` given ADK contents and a system instruction."""

    def __init__(self, agent: LlmAgent | None, author: str) -> None:
        self.agent = agent  # None: a workflow with no LlmAgent in it
        self.author = author  # the root's name: the author of the agent's side of history
        self.name = model_name(agent)

    def stream(self, request: ChatRequest) -> Iterator[StreamEvent]:
        if self.agent is None:
            raise ProviderError(NO_MODEL)
        model: BaseLlm = self.agent.canonical_model
        contents = [e.content for e in to_events(request.messages, self.author)
                    if e.content is not None]
        llm_request = LlmRequest(model=model.model, contents=contents,
                                 config=types.GenerateContentConfig(
                                     system_instruction=request.system or None))

        async def work(channel: Channel) -> None:
            streamed = False
            async for response in model.generate_content_async(llm_request, stream=True):
                parts = ((response.content.parts or []) if response.content is not None
                         else [])
                if response.partial or not streamed:
                    for part in parts:
                        if part.text:
                            channel.put(ThinkingDelta(part.text) if part.thought
                                        else TextDelta(part.text))
                streamed = bool(response.partial)
                if not response.partial and response.usage_metadata is not None:
                    channel.put(UsageEvent(_usage(response.usage_metadata)))

        yield from plain_call(work)
