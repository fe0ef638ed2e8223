"""One model turn: build the request from the working context, stream it, run tools, record.

No terminal and no disk: ``chat`` and ``restore`` are generators that yield events as they
happen and return an ``Answer`` (the finished turn, and the provider error if one ended it).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Generator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone

from rollchat.compaction.policy import ACK_TOKENS
from rollchat.domain import (
    ROUND_SEPARATOR,
    Block,
    FrameworkState,
    Image,
    Message,
    ProviderBlock,
    Text,
    ThinkingSetting,
    ToolCall,
    ToolResult,
    ToolUse,
    Turn,
    TurnKind,
    TurnStatus,
    Usage,
)
from rollchat.engine.context import WorkingContext
from rollchat.engine.framed import approver, history_of, post_hooks, run_framed
from rollchat.engine.hygiene import as_sent, repair
from rollchat.engine.model import ModelChoice
from rollchat.engine.rounds import INTERRUPTED_NOTE, run_round, trailing
from rollchat.engine.runner import Runner, RunRequest, framework_state
from rollchat.engine.thinking import Split, took
from rollchat.events import Event, Notice, Retrying, ServersStarting
from rollchat.interrupts import Terminated
from rollchat.memory.layers import with_block
from rollchat.providers.base import (
    ChatRequest,
    Done,
    Provider,
    ProviderError,
    Purpose,
    RetryNotice,
    RetryPolicy,
    TextDelta,
    ThinkingDelta,
    ToolCallEvent,
    ToolSpec,
    UsageEvent,
    stream_with_retries,
)
from rollchat.providers.names import binds_thinking
from rollchat.text.normalize import StreamCleaner, clean, clean_value
from rollchat.tools import Tool
from rollchat.tools.approval import Gate
from rollchat.tools.runner import CallOutcome, run_call
from rollchat.tools.sources import ToolSource

REFUSED = ("the model declined to answer (stop reason: refusal); the exchange is left out of "
           "what the model sees next")


class ModelRefused(ProviderError):
    """The model stopped with a refusal: shown as one, and the exchange left out of the
    context (the provider's advice: do not send the refused turn back)."""

    label = "refused"
MAX_TOOL_ROUNDS = 25  # the default of an agent's max_tool_rounds
LIVE_SECONDS = 0.5  # how often the line of the tool servers still starting is drawn again


@dataclass(frozen=True)
class CallResult:
    text: str
    usage: Usage
    status: TurnStatus
    error: ProviderError | None
    note: str | None
    blocks: tuple[Block, ...]  # what happened, in order (see domain.Turn)
    elapsed: float
    last: str = ""  # the text of the last round (after the last tool calls)
    calls: tuple[Usage, ...] = ()  # each model call's usage, in order (tool rounds, pauses)


@dataclass(frozen=True)
class Answer:
    """A finished turn and, when the provider failed, its error (to choose what to do)."""

    turn: Turn
    error: ProviderError | None = None
    # the usage of each model call the turn made (one per tool round or paused answer), in
    # order: each is billed as its own call; () for none (the turn's usage is their sum)
    calls: tuple[Usage, ...] = ()


Stream = Generator[Event, None, Answer]


def _now() -> datetime:
    return datetime.now(timezone.utc).astimezone()


@dataclass(frozen=True)
class EngineSettings:
    """What an agent's engine is built with: its provider and model, its system prompt (skills
    included), its tools in the order they are offered (so the request prefix is stable), the
    approval gate every call passes, its limits, and the sources of tools that come later."""

    provider: Provider
    model: str
    system: str
    max_output_tokens: int
    temperature: float | None
    retry: RetryPolicy
    tools: tuple[Tool, ...] = ()
    gate: Gate = field(default_factory=Gate)  # approval (tools/approval.py)
    max_tool_rounds: int = MAX_TOOL_ROUNDS
    tool_sources: tuple[ToolSource, ...] = ()  # tools that come later (MCP servers)
    clock: Callable[[], datetime] = _now
    sleep: Callable[[float], None] = time.sleep
    thinking: ThinkingSetting = None  # how much the model thinks (None: its default)
    # an agent framework that runs the chat's turns (engine/runner.py); None: this engine's
    # own tool loop over ``provider``. With a runner, ``provider`` is the agent's plain model
    # call (summaries, the restoration's acknowledgment).
    runner: Runner | None = None


class Engine(ModelChoice):
    """Runs model calls against one provider, keeping the working context up to date.

    Built with its settings and what the session measures with: the working context (None:
    an empty one with the settings' system prompt), ``count`` (the token counter the budget
    is measured with), ``tool_room`` (tokens a new tool result may take now; None: no limit)
    ``max_output_tokens`` (None: the settings') and ``ack_tokens``, the restoration
    acknowledgment's (None: at most ACK_TOKENS; see compaction.policy.Budget.ack_tokens)."""

    def __init__(self, settings: EngineSettings, *, context: WorkingContext | None = None,
                 count: Callable[[str], int] | None = None,
                 tool_room: Callable[[], int] | None = None,
                 max_output_tokens: int | None = None, ack_tokens: int | None = None,
                 ) -> None:
        self.settings = settings
        self.provider = settings.provider
        self.model = settings.model
        self.context = context if context is not None else WorkingContext(settings.system)
        self.max_output_tokens = max_output_tokens or settings.max_output_tokens
        self.ack_tokens = ack_tokens or min(self.max_output_tokens, ACK_TOKENS)
        self.thinking = settings.thinking  # ``thinking on|off|N`` in the chat changes it
        self.tools = {t.name: t for t in settings.tools}
        self.gate = settings.gate
        self.tool_room = tool_room
        self.count = count
        self.current: list[Block] = []  # the turn in flight's blocks, results whole
        # Tools that come later (MCP servers): collected when a context starts, and before a
        # message when a source changed (a server joined or left): the prefix changes only then.
        self._collect: str | None = "wait" if settings.tool_sources else None  # "due", "done"
        self._sourced: dict[int, set[str]] = {}  # id(source) -> the names it added
        self._state_kept = ""  # a framework's state as this session's file last got it

    @property
    def tool_sources(self) -> tuple[ToolSource, ...]:
        return self.settings.tool_sources

    @property
    def max_tool_rounds(self) -> int:
        return self.settings.max_tool_rounds

    def think(self, setting: ThinkingSetting) -> None:
        """How much the model thinks from the next request on (``thinking`` in the chat)."""
        self.thinking = setting

    def limit_output(self, tokens: int, ack_tokens: int) -> None:
        """The most tokens an answer, and the restoration's acknowledgment, may take from now
        on (another window was learned)."""
        self.max_output_tokens, self.ack_tokens = tokens, ack_tokens

    def new_context(self, system: str, tools: Sequence[Tool] = (), withdrawn: Sequence[str] = (),
                    *, cache_key: str | None = None) -> None:
        """A new working context begins (the session's start, a compaction, resume, fork or
        clear) with the system prompt ``system`` and the session's own ``tools`` (the archive,
        memory search), each in the place it had, new ones last, and those ``withdrawn`` gone
        (too large for the window); ``cache_key``: its chain's (None: the same chain). Before
        ``restore``/``clear``."""
        self.context.system = system
        self.context.cache_key = cache_key or self.context.cache_key
        for name in withdrawn:
            self.tools.pop(name, None)
        for tool in tools:
            self.tools[tool.name] = tool

    def offered(self) -> tuple[ToolSpec, ...]:
        """The tools' specs sent with chat requests: none when only companions are registered
        (tools offered alongside others, like the archive tool of a session with no parent)."""
        tools = list(self.tools.values())
        if all(t.companion for t in tools):
            return ()
        return tuple(t.spec for t in tools)

    def _collect_tools(self) -> Generator[Event, None, None]:
        """Add the tools of the sources that are ready (the first time, after waiting for
        those still starting, unless Ctrl-C stops the wait); new names go after the existing
        ones, none is replaced."""
        wait, self._collect = self._collect == "wait", "done"
        for source in self.settings.tool_sources:
            starting = source.waiting_for() if wait else []
            try:
                if starting:
                    yield Notice("detail", f"Waiting for MCP servers to start: "
                                           f"{', '.join(starting)}")
                    while not source.settle(LIVE_SECONDS):  # a live line meanwhile
                        yield ServersStarting(tuple(source.starting()))
                    yield ServersStarting(())
                tools, lines = source.collect(bool(starting))
            except KeyboardInterrupt as exc:  # those not ready join at the next compaction
                if isinstance(exc, Terminated):  # a SIGTERM ends the chat
                    raise
                wait = False
                tools, lines = source.collect(False)
            for line in lines:
                yield Notice("warning", line)
            before = self._sourced.get(id(source), set())
            for name in before - set(tools):
                self.tools.pop(name, None)  # withdrawn (its server went away)
            mine: set[str] = set()
            for name, tool in tools.items():  # a name of this source's keeps its place and
                if name in before or name not in self.tools:  # takes the new tool; another
                    self.tools[name] = tool  # source's or a built-in's is never replaced
                    mine.add(name)
            self._sourced[id(source)] = mine

    def request(self, messages: Sequence[Message], purpose: Purpose = "chat") -> ChatRequest:
        return ChatRequest(
            model=self.model,
            system=self.context.system,
            messages=tuple(messages),
            max_output_tokens=(self.max_output_tokens if purpose != "restore"
                               else min(self.max_output_tokens, self.ack_tokens)),
            temperature=self.settings.temperature,
            # the restoration offers the tools the turns after it will (one request prefix)
            tools=self.offered() if purpose in ("chat", "restore") else (),
            purpose=purpose,
            cache_prefix_messages=self.context.prefix_len, cache_key=self.context.cache_key,
            thinking=self.thinking)

    def chat(self, text: str, block: str = "", images: tuple[Image, ...] = ()) -> Stream:
        """Send the user's ``text`` in the working context; yields events, returns the answer.

        ``block``: the turn's context block (see memory/layers.py), sent at the start of the
        same user message and kept with it, so later requests repeat it byte for byte.
        ``images``: the images the user attached to the message.

        The turn's messages join the context as they happen (the user message, each round's
        tool calls and results, as sent), so the next request starts with this one. The user
        message stays only when the model answered (fully or partly): an unanswered message
        stays in the transcript, to be sent again by the user.
        """
        if self._collect in ("wait", "due") or any(s.changed() for s in self.tool_sources):
            yield from self._collect_tools()
        started = self.settings.clock()
        context = self.context
        mark = context.mark()
        self.current = []
        context.append(Message("user", with_block(block, text), images=images))
        if self.settings.runner is None:
            result = yield from self._call(self._add, context.request_messages, "chat")
        else:
            result = yield from self._framed(self.settings.runner, text)
        if result.status == "unanswered":
            context.rollback(mark)
        else:
            context.close_calls(append_only=binds_thinking(self.model))
            content = result.last
            note = {"interrupted": INTERRUPTED_NOTE,
                    "error": f"[answer cut off: {result.note}]"}.get(result.status)
            if note:  # the model must not take a partial answer for a whole one
                content = f"{content}\n\n{note}" if content else note
            if content:
                context.append(Message("assistant", content, extra=trailing(result.blocks)))
        turn = replace(self._turn("query", started, text, result), context_block=block,
                       attached=images, framework_state=self._state_changed())
        return Answer(turn, result.error, result.calls)

    def _state_changed(self) -> FrameworkState | None:
        """A framework's state after the turn when it differs from what the session file last
        got (its turns and the summary keep it for resume; one not kept is said at summary)."""
        kept = framework_state(self.settings.runner)[0]
        if kept is None or kept.data == self._state_kept:
            return None
        self._state_kept = kept.data
        return kept

    def restore(self, prompt: str, extra: tuple[ProviderBlock, ...] = ()) -> Stream:
        """A restoration prompt (after ``extra``: a signed block) in a fresh context: the prefix."""
        started = self.settings.clock()
        user = Message("user", prompt, extra=extra)
        flight = [user]
        self.current = [*extra]  # the turn keeps the signed block, first
        self._state_kept = ""  # a new session file: its first turn keeps the state again
        result = yield from self._call(flight.append, lambda: repair(flight), "restore")
        ack = result.text or "(no acknowledgment: " + (result.note or "interrupted") + ")"
        self.context.reset([user, Message("assistant", ack)], prefix_len=2)
        if self._collect == "done":  # a new context: servers ready since then join now
            self._collect = "due"
        return Answer(self._turn("restored", started, "", result), result.error,
                      result.calls)

    def clear(self) -> None:
        """An empty working context (``clear``): the system prompt and the tools only."""
        self.context.reset([], prefix_len=0)
        if self._collect == "done":  # a new context: servers ready since then join now
            self._collect = "due"

    def saved(self) -> tuple[WorkingContext, dict[str, Tool]]:
        """A copy of the working context and of the tools, for ``put_back``."""
        return self.context.copy(), dict(self.tools)

    def put_back(self, context: WorkingContext, tools: Mapping[str, Tool]) -> None:
        """The working context and tools ``saved`` earlier, again (``undo`` of a compact)."""
        self.context.revert_to(context)
        self.tools.clear()
        self.tools.update(tools)

    def _turn(self, kind: TurnKind, started: datetime, user: str, result: CallResult) -> Turn:
        return Turn(kind=kind, number=0, started=started, user=user, blocks=result.blocks,
                    status=result.status, elapsed=round(result.elapsed, 1), usage=result.usage,
                    error=result.note)

    def turn_so_far(self) -> tuple[Block, ...]:
        """The blocks of the turn in flight so far, in order (text, calls, results whole): what
        the session checkpoints after each tool call (session/checkpoint.py)."""
        return tuple(self.current)

    def _call(self, add: Callable[[Message], None], messages_now: Callable[[], list[Message]],
              purpose: Purpose) -> Generator[Event, None, CallResult]:
        """One exchange: the call, then tool rounds. Each round's tool calls and results are
        given to ``add``; ``messages_now`` is what the next round sends. What happens is
        recorded in ``self.current`` as it happens (text, calls, results, in order)."""
        t0 = time.monotonic()
        text: list[str] = []
        thought: list[str] = []  # this round's thinking, kept apart from its text
        usage = Usage()
        made: list[Usage] = []  # each model call's usage
        status: TurnStatus = "ok"
        note: str | None = None
        error: ProviderError | None = None
        blocks = self.current
        mark, extra = 0, list[ProviderBlock]()  # extra: the round's provider blocks
        try:
            rounds = self.settings.max_tool_rounds
            paused: list[Message] = []  # a paused answer, sent back so the model goes on
            for round_number in range(rounds + 1):
                if round_number and not paused and "".join(text).strip():
                    text.append(ROUND_SEPARATOR)  # the text before a tool call stays its own
                    yield TextDelta(ROUND_SEPARATOR)  # paragraph, on screen and on disk
                if not paused:
                    mark, extra = len(text), []
                calls, _, stop = yield from self._stream_once(
                    [*messages_now(), *paused], purpose, text, thought, extra, made)
                if stop == "refusal":
                    raise ModelRefused(REFUSED)
                paused = [Message("assistant", "".join(text[mark:]), extra=tuple(extra))] \
                    if stop == "pause_turn" and not calls and round_number < rounds else []
                if paused:  # the server paused a long turn: its content so far goes back
                    continue  # as it came, and the model continues it (the same round)
                if stop == "max_tokens" and not calls:  # the model was stopped mid-answer
                    status, note = "error", self._cut_off_note(purpose)
                    yield Notice("warning", self._cut_off_warning(purpose))
                if not calls:
                    break
                if purpose == "restore":  # an acknowledgment runs no tool: its calls dropped
                    break
                if round_number == rounds:  # the model wants more: the limit answers it
                    note = f"stopped after {rounds} tool rounds (max_tool_rounds)"
                    yield Notice("warning", f"The agent stopped after {rounds} rounds of tool "
                                            "calls (max_tool_rounds); its last calls were not "
                                            "run.")
                    break
                said = "".join(text[mark:])
                blocks += [*extra, *took(thought), *([Text(said)] if said else []),
                           *(ToolUse(c) for c in calls)]
                add(Message("assistant", said, tool_calls=tuple(calls), extra=tuple(extra)))
                mark, extra = len(text), []
                yield from run_round(calls, add, blocks.append, self._run_tool)
        except KeyboardInterrupt:
            status = "interrupted"
        except ProviderError as exc:
            error = exc
            note = exc.one_line()
            status = "error" if ("".join(text) or blocks) and not isinstance(
                exc, ModelRefused) else "unanswered"
        for spent in made:  # every call's, an interrupted or failed one's too
            usage = usage + spent
        last = "".join(text[mark:])
        blocks += [*extra, *took(thought)]
        if last:
            blocks.append(Text(last))
        return CallResult("".join(text), usage, status, error, note, tuple(blocks),
                          time.monotonic() - t0, last, tuple(made))

    def _add(self, message: Message) -> None:
        """Add a message of the turn in flight to the context; append-only (nothing sent is
        rewritten) for a model whose thinking is bound to what precedes it."""
        self.context.append(message, append_only=binds_thinking(self.model))

    def _framed(self, runner: Runner, query: str) -> Generator[Event, None, CallResult]:
        """The turn in flight (``query``: the user's words) run by an agent framework
        (engine/framed.py)."""
        history, user = history_of(self.context.request_messages())
        request = RunRequest(self.context.system, history, user,
                             approver(self.gate, self.tools, runner.framework), query=query,
                             after=post_hooks(self.gate))
        self.current = []
        done = yield from run_framed(runner, request, self.current, self._add,
                                     self.context.reported)
        note = done.error.one_line() if done.error is not None else None
        return CallResult(done.text, done.usage, done.status, done.error, note,
                          tuple(self.current), done.elapsed, done.last, done.calls)

    def _cut_off_note(self, purpose: Purpose) -> str:
        """What the turn records of an answer stopped at the output limit of ``purpose``."""
        if purpose == "restore":
            return (f"acknowledgment limit of {min(self.max_output_tokens, self.ack_tokens):,} "
                    "tokens reached (a share of the window, max_output_tokens)")
        return f"output limit of {self.max_output_tokens:,} tokens reached (max_output_tokens)"

    def _cut_off_warning(self, purpose: Purpose) -> str:
        """The line shown when an answer of ``purpose`` was stopped at its output limit."""
        if purpose == "restore":
            return (f"The acknowledgment was cut off at its limit "
                    f"({min(self.max_output_tokens, self.ack_tokens):,} tokens, kept small to "
                    "leave the window to the chat): the context is restored; go on.")
        return (f"Output limit reached: the answer was cut off at {self.max_output_tokens:,} "
                "tokens; ask it to go on, or raise max_output_tokens.")

    def _stream_once(self, messages: Sequence[Message], purpose: Purpose, text: list[str],
                     thought: list[str], extra: list[ProviderBlock], made: list[Usage],
                     ) -> Generator[Event, None, tuple[list[ToolCall], Usage, str | None]]:
        """One model call: its calls, usage and stop reason (None: none came). Text, thinking,
        provider blocks go into ``text``, ``thought``, ``extra`` as they come (kept on Ctrl-C);
        its usage is added to ``made`` when it ends, however it ends (a call interrupted or
        failed after its usage came is billed too)."""
        request = self.request(messages, purpose)
        calls: list[ToolCall] = []
        usage = Usage()
        stop: str | None = None
        cleaner = StreamCleaner()  # the model's text is cleaned as it arrives
        split = Split(text, thought)
        events = stream_with_retries(self.provider, request, self.settings.retry,
                                     sleep=self.settings.sleep,
                                     announce=True)
        try:
            for event in events:
                if isinstance(event, RetryNotice):
                    yield Retrying(event.attempt, event.wait, event.error.one_line())
                elif isinstance(event, TextDelta):
                    yield from split.text(cleaner.feed(event.text))
                elif isinstance(event, ThinkingDelta):
                    yield from split.thinking(event.text)
                elif isinstance(event, ToolCallEvent):
                    call = event.call
                    calls.append(ToolCall(clean(call.id), clean(call.name),
                                          clean_value(call.arguments)))
                elif isinstance(event, ProviderBlock):
                    extra.append(event)
                elif isinstance(event, UsageEvent):
                    usage = usage + event.usage
                    if purpose == "chat":
                        self.context.reported(event.usage.input_tokens)
                    yield event
                elif isinstance(event, Done):
                    stop = event.stop_reason
                    break
        except BaseException:
            split.keep(cleaner.flush())  # a CR or half a pair held back is kept
            raise
        finally:
            made.append(usage)
        yield from split.end(cleaner.flush())
        return calls, usage, stop

    def _run_tool(self, call: ToolCall) -> tuple[ToolResult, str, CallOutcome]:
        """Approval, the call and its failures (tools/runner.py); the result as recorded and
        as sent (hygiene.as_sent)."""
        outcome = run_call(call, self.tools, self.gate)
        result = clean(outcome.result)  # tool output (and files tools read) enters here
        sent, keep = (result, None) if self.tool_room is None else as_sent(
            result, call.id, self.tool_room(), self.count or self._counter())
        return (ToolResult(call.id, result, outcome.status != "ok", outcome.images, keep),
                sent, outcome)

    def _counter(self) -> Callable[[str], int]:
        from rollchat.models.tokens import TokenCounter

        return TokenCounter(self.model).count_text
