"""One model turn: build the request from the working context, stream it, run tools, record.

No terminal and no disk: output goes to an ``on_event`` callback, the result is a ``Turn``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone

from rollchat.domain import Message, ToolCall, ToolExchange, Turn, TurnKind, TurnStatus, Usage
from rollchat.hygiene import KEEP_TOOL_RESULTS, clean, repair, stub
from rollchat.providers.base import (
    ChatRequest,
    Done,
    Provider,
    ProviderError,
    Purpose,
    RetryPolicy,
    TextDelta,
    ToolCallEvent,
    UsageEvent,
    stream_with_retries,
)
from rollchat.tools import Tool

INTERRUPTED_NOTE = "[interrupted by user]"
ROUND_SEPARATOR = "\n\n"
MAX_TOOL_ROUNDS = 8


@dataclass(frozen=True)
class Retrying:
    attempt: int
    wait: float
    error: str


@dataclass(frozen=True)
class ToolStarted:
    call: ToolCall


@dataclass(frozen=True)
class ToolFinished:
    call: ToolCall
    result: str


EngineEvent = TextDelta | Retrying | ToolStarted | ToolFinished


@dataclass
class Context:
    """The model's working context: system prompt and messages, plus the size baseline.

    ``prefix_len`` leading messages are the stable prefix (a restored summary exchange).
    ``last_prompt_tokens`` is the prompt size the provider reported for the last call and
    ``added_since`` the messages appended after that call (issue: estimate = report + count).
    """

    system: str
    messages: list[Message] = field(default_factory=list)
    prefix_len: int = 0
    last_prompt_tokens: int | None = None
    added_since: list[Message] = field(default_factory=list)
    open_tools: list[int] = field(default_factory=list)  # tool results not yet stubbed

    def append(self, message: Message, *, counted: bool = False) -> None:
        """Add a message; ``counted``: it was part of the prompt the last report covers.

        Hygiene is kept incrementally, so the cost per call does not grow with the history:
        once a tool result is older than the last KEEP_TOOL_RESULTS it is stubbed here.
        """
        self.messages.append(message)
        if message.role == "tool":
            self.open_tools.append(len(self.messages) - 1)
            while len(self.open_tools) > KEEP_TOOL_RESULTS:
                i = self.open_tools.pop(0)
                self.messages[i] = stub(self.messages[i])
        if not counted:
            self.added_since.append(message)

    def reset(self, messages: Sequence[Message], prefix_len: int) -> None:
        """Replace the working context (after compact or resume); forget the baseline."""
        self.messages = clean(messages)
        self.open_tools = [i for i, m in enumerate(self.messages)
                           if m.role == "tool" and m != stub(m)][-KEEP_TOOL_RESULTS:]
        self.prefix_len = prefix_len
        self.last_prompt_tokens = None
        self.added_since = list(self.messages)

    def request_messages(self, in_flight: Sequence[Message]) -> list[Message]:
        """The context plus the messages of the call in flight, with the hygiene rules
        applied: in-flight messages repaired, only the last KEEP_TOOL_RESULTS results whole."""
        flight = repair(in_flight)
        out = [*self.messages, *flight]
        flight_tools = [len(self.messages) + i for i, m in enumerate(flight) if m.role == "tool"]
        tools = [*self.open_tools, *flight_tools]
        for i in tools[: max(len(tools) - KEEP_TOOL_RESULTS, 0)]:
            out[i] = stub(out[i])
        return out


@dataclass(frozen=True)
class CallResult:
    text: str
    usage: Usage
    status: TurnStatus
    error: str | None
    tools: tuple[ToolExchange, ...]
    elapsed: float


class Engine:
    """Runs model calls against one provider, keeping the working ``Context`` up to date."""

    def __init__(
        self,
        provider: Provider,
        *,
        model: str,
        context: Context,
        max_output_tokens: int,
        temperature: float | None,
        retry: RetryPolicy,
        tools: Mapping[str, Tool] | None = None,
        clock: Callable[[], datetime] = lambda: datetime.now(timezone.utc).astimezone(),
        sleep: Callable[[float], None] = time.sleep,
        # tokens a new tool result may take, given the messages of the call in flight
        tool_result_limit: Callable[[Sequence[Message]], int] | None = None,
    ) -> None:
        self.provider = provider
        self.model = model
        self.context = context
        self.max_output_tokens = max_output_tokens
        self.temperature = temperature
        self.retry = retry
        self.tools = dict(tools or {})
        self.clock = clock
        self.sleep = sleep
        self.tool_result_limit = tool_result_limit
        self.last_error: ProviderError | None = None
        self._reported = False

    def request(self, messages: Sequence[Message], purpose: Purpose = "chat") -> ChatRequest:
        return ChatRequest(
            model=self.model,
            system=self.context.system,
            messages=tuple(messages),
            max_output_tokens=self.max_output_tokens,
            temperature=self.temperature,
            tools=tuple(t.spec for t in self.tools.values()) if purpose == "chat" else (),
            purpose=purpose,
            cache_prefix_messages=self.context.prefix_len,
        )

    def chat(self, text: str, on_event: Callable[[EngineEvent], None]) -> Turn:
        """Send the user's ``text`` in the working context and return the finished turn.

        The user message joins the context only when the model answered (fully or partly):
        an unanswered message stays in the transcript, to be sent again by the user.
        """
        started = self.clock()
        user = Message("user", text)
        result = self._call([user], on_event, "chat")
        if result.status != "unanswered":
            # What the last usage report covered is not counted again in the next estimate.
            self.context.append(user, counted=self._reported)
            for message in _tool_messages(result.tools):
                self.context.append(message, counted=self._reported)
            content = result.text
            note = {"interrupted": INTERRUPTED_NOTE,
                    "error": f"[answer cut off: {result.error}]"}.get(result.status)
            if note:  # the model must not take a partial answer for a whole one
                content = f"{content}\n\n{note}" if content else note
            self.context.append(Message("assistant", content))
        return self._turn("query", started, text, result)

    def restore(self, prompt: str, on_event: Callable[[EngineEvent], None]) -> Turn:
        """Send a restoration prompt in a fresh context; the exchange becomes the prefix."""
        started = self.clock()
        user = Message("user", prompt)
        result = self._call([user], on_event, "restore")
        ack = result.text or "(no acknowledgment: " + (result.error or "interrupted") + ")"
        self.context.reset([user, Message("assistant", ack)], prefix_len=2)
        return self._turn("restored", started, "", result)

    def _turn(self, kind: TurnKind, started: datetime, user: str, result: CallResult) -> Turn:
        return Turn(
            kind=kind,
            number=0,
            started=started,
            user=user,
            assistant=result.text,
            status=result.status,
            elapsed=round(result.elapsed, 1),
            usage=result.usage,
            tools=result.tools,
            error=result.error,
        )

    def _call(
        self,
        in_flight: list[Message],
        on_event: Callable[[EngineEvent], None],
        purpose: Purpose,
    ) -> CallResult:
        """One exchange: the call, then tool rounds. ``in_flight`` grows with the tool calls
        and results; chat calls send it after the working context, restore calls alone."""
        t0 = time.monotonic()
        text: list[str] = []
        usage = Usage()
        tools: list[ToolExchange] = []
        status: TurnStatus = "ok"
        error: str | None = None
        self.last_error = None
        self._reported = False
        try:
            for round_number in range(MAX_TOOL_ROUNDS + 1):
                if round_number and "".join(text).strip():
                    text.append(ROUND_SEPARATOR)  # the text before a tool call stays its own
                    on_event(TextDelta(ROUND_SEPARATOR))  # paragraph, on screen and on disk
                mark = len(text)
                messages = (self.context.request_messages(in_flight) if purpose == "chat"
                            else repair(in_flight))
                calls, round_usage = self._stream_once(messages, on_event, purpose, text)
                usage = usage + round_usage
                if not calls:
                    break
                round_text = "".join(text[mark:])
                in_flight.append(Message("assistant", round_text, tool_calls=tuple(calls)))
                for call in calls:
                    exchange = self._run_tool(call, on_event, in_flight)
                    tools.append(exchange)
                    in_flight.extend(_tool_messages([exchange])[1:])
            else:
                error = f"stopped after {MAX_TOOL_ROUNDS} tool rounds"
        except KeyboardInterrupt:
            status = "interrupted"
        except ProviderError as exc:
            self.last_error = exc
            error = exc.one_line()
            status = "error" if "".join(text) or tools else "unanswered"
        return CallResult("".join(text), usage, status, error, tuple(tools), time.monotonic() - t0)

    def _stream_once(
        self,
        messages: Sequence[Message],
        on_event: Callable[[EngineEvent], None],
        purpose: Purpose,
        text: list[str],
    ) -> tuple[list[ToolCall], Usage]:
        """One model call. Text deltas go into ``text`` as they arrive, so an interruption or
        an error mid-stream keeps what was received."""
        request = self.request(messages, purpose)
        calls: list[ToolCall] = []
        usage = Usage()

        def retrying(attempt: int, wait: float, err: ProviderError) -> None:
            on_event(Retrying(attempt, wait, err.one_line()))

        events = stream_with_retries(
            self.provider, request, self.retry, sleep=self.sleep, on_retry=retrying
        )
        for event in events:
            if isinstance(event, TextDelta):
                text.append(event.text)
                on_event(event)
            elif isinstance(event, ToolCallEvent):
                calls.append(event.call)
            elif isinstance(event, UsageEvent):
                usage = usage + event.usage
                self.context.last_prompt_tokens = event.usage.input_tokens
                self.context.added_since = []
                self._reported = True
            elif isinstance(event, Done):
                break
        return calls, usage

    def _fit(self, result: str, messages: Sequence[Message]) -> str:
        assert self.tool_result_limit is not None
        from rollchat.hygiene import fit_tool_result
        from rollchat.tokens import TokenCounter

        count = TokenCounter(self.model).count_text  # the counter the budget is measured with
        return fit_tool_result(result, self.tool_result_limit(messages), count)

    def _run_tool(self, call: ToolCall, on_event: Callable[[EngineEvent], None],
                  messages: Sequence[Message]) -> ToolExchange:
        on_event(ToolStarted(call))
        tool = self.tools.get(call.name)
        if tool is None:
            result = f"error: unknown tool {call.name!r}"
        else:
            try:
                result = tool.run(call.arguments)
            except Exception as exc:  # a tool's failure is reported to the model, not raised
                result = f"error: {exc}"
        if self.tool_result_limit is not None:
            result = self._fit(result, messages)
        on_event(ToolFinished(call, result))
        return ToolExchange(call, result)


def _tool_messages(tools: Sequence[ToolExchange]) -> list[Message]:
    """The assistant tool-call message followed by one tool-result message per call."""
    if not tools:
        return []
    out = [Message("assistant", "", tool_calls=tuple(t.call for t in tools))]
    out += [Message("tool", t.result, tool_call_id=t.call.id, name=t.call.name) for t in tools]
    return out


def describe_call(call: ToolCall) -> str:
    return f"{call.name}({json.dumps(dict(call.arguments), ensure_ascii=False)})"
