"""One model turn: build the request from the working context, stream it, run tools, record.

No terminal and no disk: ``chat`` and ``restore`` are generators that yield events as they
happen and return an ``Answer`` (the finished turn, and the provider error if one ended it).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Generator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone

from rollchat.clean import StreamCleaner, clean, clean_value
from rollchat.context import Context
from rollchat.domain import Message, ToolCall, ToolExchange, Turn, TurnKind, TurnStatus, Usage
from rollchat.events import Event, Notice, Retrying, ToolFinished, ToolStarted
from rollchat.hygiene import repair
from rollchat.interrupts import Terminated
from rollchat.providers.base import (
    ChatRequest,
    Done,
    Provider,
    ProviderError,
    Purpose,
    RetryNotice,
    RetryPolicy,
    TextDelta,
    ToolCallEvent,
    UsageEvent,
    stream_with_retries,
)
from rollchat.tools import Tool
from rollchat.tools.approval import Gate
from rollchat.tools.runner import CallInterrupted, CallOutcome, run_call
from rollchat.tools.sources import ToolSource

INTERRUPTED_NOTE = "[interrupted by user]"
ROUND_SEPARATOR = "\n\n"
MAX_TOOL_ROUNDS = 25  # the default of an agent's max_tool_rounds
NOT_RUN = "[not run: the turn was interrupted before this call]"


@dataclass(frozen=True)
class CallResult:
    text: str
    usage: Usage
    status: TurnStatus
    error: ProviderError | None
    note: str | None
    tools: tuple[ToolExchange, ...]
    elapsed: float


@dataclass(frozen=True)
class Answer:
    """A finished turn and, when the provider failed, its error (to choose what to do)."""

    turn: Turn
    error: ProviderError | None = None


Stream = Generator[Event, None, Answer]


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
        count: Callable[[str], int] | None = None,
        tool_sources: Sequence[ToolSource] = (),
    ) -> None:
        self.provider = provider
        self.model = model
        self.context = context
        self.max_output_tokens = max_output_tokens
        self.temperature = temperature
        self.retry = retry
        self.tools = dict(tools or {})
        self.gate = Gate()  # approval: every tool call passes through it (tools/approval.py)
        self.max_tool_rounds = MAX_TOOL_ROUNDS
        self.clock = clock
        self.sleep = sleep
        self.tool_result_limit = tool_result_limit
        self.count = count  # the token counter the budget is measured with
        self._reported = False
        # Tools that come later (MCP servers): collected when a context starts, i.e. before the
        # first message, then after each compaction or resume; never in between, so the
        # request prefix (the tool specs among it) stays byte-stable.
        self.tool_sources = list(tool_sources)
        self._collect: str | None = "wait" if self.tool_sources else None  # "due", "done"

    def _collect_tools(self) -> Generator[Event, None, None]:
        """Add the tools of the sources that are ready (the first time, after waiting for
        those still starting, unless Ctrl-C stops the wait); new names go after the existing
        ones, none is replaced."""
        wait, self._collect = self._collect == "wait", "done"
        for source in self.tool_sources:
            starting = source.waiting_for() if wait else []
            try:
                if starting:
                    yield Notice("detail", f"Waiting for MCP servers to start: "
                                           f"{', '.join(starting)}")
                tools, lines = source.collect(bool(starting))
            except KeyboardInterrupt as exc:  # those not ready join at the next compaction
                if isinstance(exc, Terminated):  # a SIGTERM ends the chat
                    raise
                wait = False
                tools, lines = source.collect(False)
            for line in lines:
                yield Notice("warning", line)
            for name, tool in tools.items():
                self.tools.setdefault(name, tool)

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

    def chat(self, text: str) -> Stream:
        """Send the user's ``text`` in the working context; yields events, returns the answer.

        The user message joins the context only when the model answered (fully or partly):
        an unanswered message stays in the transcript, to be sent again by the user.
        """
        if self._collect in ("wait", "due"):
            yield from self._collect_tools()
        started = self.clock()
        user = Message("user", text)
        result = yield from self._call([user], "chat")
        if result.status != "unanswered":
            # What the last usage report covered is not counted again in the next estimate.
            self.context.append(user, counted=self._reported)
            for message in _tool_messages(result.tools):
                self.context.append(message, counted=self._reported)
            content = result.text
            note = {"interrupted": INTERRUPTED_NOTE,
                    "error": f"[answer cut off: {result.note}]"}.get(result.status)
            if note:  # the model must not take a partial answer for a whole one
                content = f"{content}\n\n{note}" if content else note
            self.context.append(Message("assistant", content))
        return Answer(self._turn("query", started, text, result), result.error)

    def restore(self, prompt: str) -> Stream:
        """Send a restoration prompt in a fresh context; the exchange becomes the prefix."""
        started = self.clock()
        user = Message("user", prompt)
        result = yield from self._call([user], "restore")
        ack = result.text or "(no acknowledgment: " + (result.note or "interrupted") + ")"
        self.context.reset([user, Message("assistant", ack)], prefix_len=2)
        if self._collect == "done":  # a new context: servers ready since then join now
            self._collect = "due"
        return Answer(self._turn("restored", started, "", result), result.error)

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
            error=result.note,
        )

    def _call(self, in_flight: list[Message], purpose: Purpose,
              ) -> Generator[Event, None, CallResult]:
        """One exchange: the call, then tool rounds. ``in_flight`` grows with the tool calls
        and results; chat calls send it after the working context, restore calls alone."""
        t0 = time.monotonic()
        text: list[str] = []
        usage = Usage()
        tools: list[ToolExchange] = []
        status: TurnStatus = "ok"
        note: str | None = None
        error: ProviderError | None = None
        self._reported = False
        try:
            rounds = self.max_tool_rounds
            for round_number in range(rounds + 1):
                if round_number and "".join(text).strip():
                    text.append(ROUND_SEPARATOR)  # the text before a tool call stays its own
                    yield TextDelta(ROUND_SEPARATOR)  # paragraph, on screen and on disk
                mark = len(text)
                messages = (self.context.request_messages(in_flight) if purpose == "chat"
                            else repair(in_flight))
                calls, round_usage = yield from self._stream_once(messages, purpose, text)
                usage = usage + round_usage
                if not calls:
                    break
                if round_number == rounds:  # the model wants more: the limit answers it
                    note = f"stopped after {rounds} tool rounds (max_tool_rounds)"
                    yield Notice("warning", f"The agent stopped after {rounds} rounds of tool "
                                            "calls (max_tool_rounds); its last calls were not "
                                            "run.")
                    break
                round_text = "".join(text[mark:])
                in_flight.append(Message("assistant", round_text, tool_calls=tuple(calls)))
                for index, call in enumerate(calls):  # several calls of one reply, in order
                    yield ToolStarted(call)
                    try:
                        exchange, outcome = self._run_tool(call, in_flight)
                    except CallInterrupted as stop:  # recorded as interrupted, and every
                        for rest, result in ((call, stop.outcome.result),  # call after it
                                             *((c, NOT_RUN) for c in calls[index + 1:])):
                            tools.append(ToolExchange(rest, result))  # as not run, so each
                            in_flight.extend(_tool_messages(tools[-1:])[1:])  # has a result
                        yield ToolFinished(call, stop.outcome.result, stop.outcome.elapsed,
                                           "interrupted")
                        raise KeyboardInterrupt from None
                    tools.append(exchange)  # recorded before it is shown: a Ctrl-C while
                    in_flight.extend(_tool_messages([exchange])[1:])  # it is drawn keeps it
                    yield ToolFinished(call, exchange.result, outcome.elapsed, outcome.status)
        except KeyboardInterrupt:
            status = "interrupted"
        except ProviderError as exc:
            error = exc
            note = exc.one_line()
            status = "error" if "".join(text) or tools else "unanswered"
        return CallResult("".join(text), usage, status, error, note, tuple(tools),
                          time.monotonic() - t0)

    def _stream_once(self, messages: Sequence[Message], purpose: Purpose, text: list[str],
                     ) -> Generator[Event, None, tuple[list[ToolCall], Usage]]:
        """One model call. Text deltas go into ``text`` as they arrive, so an interruption or
        an error mid-stream keeps what was received. Retries are announced as they happen."""
        request = self.request(messages, purpose)
        calls: list[ToolCall] = []
        usage = Usage()
        cleaner = StreamCleaner()  # the model's text is cleaned as it arrives
        events = stream_with_retries(self.provider, request, self.retry, sleep=self.sleep,
                                     announce=True)
        try:
            for event in events:
                if isinstance(event, RetryNotice):
                    yield Retrying(event.attempt, event.wait, event.error.one_line())
                elif isinstance(event, TextDelta):
                    piece = cleaner.feed(event.text)
                    if piece:
                        text.append(piece)
                        yield TextDelta(piece)
                elif isinstance(event, ToolCallEvent):
                    call = event.call
                    calls.append(ToolCall(clean(call.id), clean(call.name),
                                          clean_value(call.arguments)))
                elif isinstance(event, UsageEvent):
                    usage = usage + event.usage
                    self.context.reported(event.usage.input_tokens)
                    self._reported = True
                    yield event
                elif isinstance(event, Done):
                    break
        except BaseException:
            text.append(cleaner.flush())  # a CR or half a pair held back is kept
            raise
        rest = cleaner.flush()
        if rest:
            text.append(rest)
            yield TextDelta(rest)
        return calls, usage

    def _run_tool(self, call: ToolCall, messages: Sequence[Message],
                  ) -> tuple[ToolExchange, CallOutcome]:
        """Approval, the call and its failures: tools/runner.py; the result enters here."""
        outcome = run_call(call, self.tools, self.gate)
        result = clean(outcome.result)  # tool output (and files tools read) enters here
        if self.tool_result_limit is not None:
            result = self._fit(result, messages)
        return ToolExchange(call, result), outcome

    def _fit(self, result: str, messages: Sequence[Message]) -> str:
        assert self.tool_result_limit is not None
        from rollchat.hygiene import fit_tool_result

        count = self.count
        if count is None:
            from rollchat.tokens import TokenCounter

            count = TokenCounter(self.model).count_text
        return fit_tool_result(result, self.tool_result_limit(messages), count)


def quietly(flow: Stream) -> Stream:
    """A flow whose answer is not shown (the restoration of an automatic compaction): only
    its retry notices reach the caller, so a wait is never silent; its result is kept."""
    while True:
        try:
            event = next(flow)
        except StopIteration as stop:
            answer: Answer = stop.value
            return answer
        if isinstance(event, Retrying):
            yield event


def _tool_messages(tools: Sequence[ToolExchange]) -> list[Message]:
    """The assistant tool-call message followed by one tool-result message per call."""
    if not tools:
        return []
    out = [Message("assistant", "", tool_calls=tuple(t.call for t in tools))]
    out += [Message("tool", t.result, tool_call_id=t.call.id, name=t.call.name) for t in tools]
    return out


def describe_call(call: ToolCall, *, full: bool = False, limit: int = 100) -> str:
    """``name(arguments)``: compact (long values cut to ``limit`` characters), or ``full``."""
    args = json.dumps(dict(call.arguments), ensure_ascii=False, indent=2 if full else None)
    if not full and len(args) > limit:
        args = args[:limit - 1] + "…"
    return f"{call.name}({args})"
