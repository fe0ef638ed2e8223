"""The Runner seam: what runs one turn's model calls and tools when an agent framework (Strands,
the OpenAI Agents SDK, a plain function, ...) does instead of rollchat's own tool loop.

How an adapter plugs in (agents/frameworks/, one module per framework, the only importer of it):

1. It implements ``Runner``: ``run(request)`` is given the history rollchat decided on
   (``RunRequest.history``: the restoration exchange, carried turns and the turns since, as
   rollchat ``Message`` values, already trimmed and repaired) and the user's message, converts
   them to the framework's own messages, runs the framework and yields ``RunEvent`` values as
   they come: ``TextDelta``/``ThinkingDelta`` pieces, ``ToolCalled`` before a tool runs,
   ``ToolReturned`` after it, ``UsageEvent`` per model call. It returns nothing: the Engine
   records the turn's ordered blocks (Text, Thinking, ToolUse, ToolResult) from these events,
   so the transcript, ``show``, compaction and resume never know which Runner ran the turn.
2. Before the framework runs a tool, the adapter calls ``request.approve(call)`` through the
   framework's own mechanism (a hook, an interruption): None lets it run, a string is the
   refusal the model reads (rollchat's gate: ask/auto/never, allow/deny, PreToolUse hooks).
   ``approve`` may ask the user: call it on the thread iterating ``run`` (agents/frameworks/
   bridge.py carries it there from a framework's event loop).
   After a call the framework ran, ``request.after`` (when set: the PostToolUse hooks) gives
   what to add to the result the model reads, on the same thread.
3. Ctrl-C: the Engine closes the iterator (``close()``, GeneratorExit inside ``run``); the
   adapter stops the framework's run in its ``finally``. What was yielded is kept. A framework
   failure is raised as ``FrameworkError`` (one line; the chat goes on).
4. For summaries and the restoration's acknowledgment the adapter also offers a plain model
   call (no tools) as a ``providers.base.Provider`` (EngineSettings.provider), so compaction
   writes the summary through the agent's own model unless ``summary.provider`` is set.

rollchat's own agents have no Runner (EngineSettings.runner is None): the Engine's own loop
over its Provider runs them, unchanged.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal, Protocol, runtime_checkable

from rollchat.domain import FrameworkState, Message, ToolCall
from rollchat.providers.base import ProviderError, TextDelta, ThinkingDelta, UsageEvent
from rollchat.storage.transcript.framework_state import freeze, thawed

ToolStatus = Literal["ok", "error", "refused", "interrupted"]


@dataclass(frozen=True)
class ToolCalled:
    """The framework is about to run ``call`` (after ``approve`` let it through, or not)."""

    call: ToolCall


@dataclass(frozen=True)
class ToolReturned:
    """The framework ran ``call`` (or refused it: ``status`` "refused"); ``content`` is the
    result as the model reads it."""

    call: ToolCall
    content: str
    status: ToolStatus = "ok"
    elapsed: float = 0.0


RunEvent = TextDelta | ThinkingDelta | ToolCalled | ToolReturned | UsageEvent
Approve = Callable[[ToolCall], "str | None"]  # None: the call may run; else the refusal
# PostToolUse hooks of a call that ran (its result as the model would read it, its status):
# what to add to that result
After = Callable[[ToolCall, str, str], str]


@dataclass(frozen=True)
class RunRequest:
    """One turn for a Runner: the system prompt rollchat built (the agent's instructions, the
    project instructions, the memory profile), the ``history`` before this turn, the
    ``user`` message (its context block included: the date, relevant facts), ``query``
    (what the user typed, without the block: for an agent that takes only that), the
    ``purpose`` ("chat"; "restore": the restoration prompt, answered without tools) and the
    approval of each tool call; ``after``: the PostToolUse hooks, to run (on the thread
    iterating ``run``) after each call the framework ran, adding their word to the result the
    model reads where the framework lets a result be changed (None: no hook wants any)."""

    system: str
    history: tuple[Message, ...]
    user: Message
    approve: Approve
    query: str = ""
    purpose: Literal["chat", "restore"] = "chat"
    after: After | None = None


class FrameworkError(ProviderError):
    """The framework's run failed (its own exception, shown as one line)."""

    label = "agent framework error"


class Runner(Protocol):
    """Runs one turn of a framework agent; see the module's docstring."""

    framework: str  # "strands", "openai-agents", "function", ...

    def run(self, request: RunRequest) -> Iterator[RunEvent]: ...


@runtime_checkable
class KeepsState(Protocol):
    """A Runner whose framework keeps state besides the conversation (Strands
    ``agent.state``, LangGraph state keys, ADK ``session.state``): rollchat writes it to the
    session file with the summary and gives it back at ``resume``."""

    framework: str

    def kept_state(self) -> Mapping[str, Any]:
        """The framework's state now (a JSON object when it can be saved; {}: none)."""
        ...

    def give_state(self, state: Mapping[str, Any]) -> None:
        """The state a resumed session saved, given to the framework its own way."""
        ...


def framework_state(runner: Runner | None) -> tuple[FrameworkState | None, str]:
    """The state of ``runner``'s framework as the session file keeps it, or None and why not
    ("" when there is none: no framework, or one that keeps no state)."""
    if not isinstance(runner, KeepsState):
        return None, ""
    return freeze(runner.framework, runner.kept_state())


def give_framework_state(runner: Runner | None, state: FrameworkState | None) -> str:
    """The state a resumed session saved, given to ``runner``'s framework (None: it starts
    empty); the line saying why it was not ("" when given, or there was none)."""
    if not isinstance(runner, KeepsState):
        return "" if state is None else (f"the session's {state.framework} state is not "
                                         "given to this agent (another kind of agent)")
    if state is not None and state.framework != runner.framework:
        runner.give_state({})
        return (f"the session's {state.framework} state is not given to this "
                f"{runner.framework} agent")
    runner.give_state({} if state is None else thawed(state))
    return ""
