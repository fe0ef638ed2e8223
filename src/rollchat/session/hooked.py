"""A session's hooks (tools/hooks.py) at its fixed points: SessionStart (before the first message
of each new context), UserPromptSubmit, Stop (each answer done), PreCompact/PostCompact,
SessionEnd, and Notification (rollchat asks the user about a tool call); what they print goes
into the message's context block, never the system prompt, so the prompt cache holds."""

from __future__ import annotations

from collections.abc import Callable, Generator
from pathlib import Path

from rollchat.config.settings import NO_SAVE_LOCATION
from rollchat.domain import ToolCall
from rollchat.events import Event, Notice
from rollchat.memory.layers import BLOCK_CLOSE, BLOCK_OPEN
from rollchat.session.state import SessionState
from rollchat.storage.store import Store
from rollchat.tools import Tool
from rollchat.tools.approval import Asker, Reply
from rollchat.tools.hooks import HookOutcome, Hooks

Flow = Generator[Event, None, None]
HOOK_HEADING = "From the user's hooks:"


def with_hook_context(block: str, context: str) -> str:
    """``block`` (memory's context block, or "") with the hooks' ``context`` added inside one
    block (a closing tag in it is defused, so the block keeps its one end)."""
    if not context:
        return block
    lines = [HOOK_HEADING, *(line.replace(BLOCK_CLOSE, "</ context>")
                             for line in context.splitlines())]
    if not block:
        return "\n".join([BLOCK_OPEN, *lines, BLOCK_CLOSE])
    return "\n".join([block.removesuffix(BLOCK_CLOSE).rstrip("\n"), *lines, BLOCK_CLOSE])


def notifying(ask: Asker, hooks: Hooks | None) -> Asker:
    """``ask`` (a tool approval question) after the Notification hooks are told, as Claude
    Code tells them when it needs the user's permission."""
    if hooks is None or not hooks.wanted("Notification"):
        return ask

    def asking(call: ToolCall, tool: Tool) -> Reply | None:
        hooks.run("Notification", {"message": f"rollchat needs your permission to use "
                                               f"{call.name}", "notification_type":
                                   "permission_prompt"})
        return ask(call, tool)

    return asking


class SessionHooks:
    """The chat's ``hooks`` (None: none) told which session they run in (from ``store``)."""

    def __init__(self, hooks: Hooks | None, store: Store) -> None:
        self.hooks, self.store = hooks, store
        self.due: str | None = "startup"  # SessionStart's source before the next message
        self.added = ""  # the context the hooks gave the message being sent
        self.state: SessionState | None = None  # the session the chat is in now

    def new_context(self, state: SessionState) -> None:
        """The chat goes on in ``state`` (its start, a compaction, resume or fork)."""
        self.state, self.due = state, self.due or "resume"

    def _where(self, state: SessionState) -> Hooks | None:
        if self.hooks is not None:
            saved = self.store.location != NO_SAVE_LOCATION and state.session_id
            self.hooks.at(state.session_id, Path(self.store.location) /
                          f"{state.session_id}.md" if saved else None)
        return self.hooks

    def _said(self, outcome: HookOutcome) -> Flow:
        for line in outcome.lines:
            yield Notice("warning", line)

    def prompt(self, state: SessionState, text: str,
               ensure_file: Callable[[], Generator[Event, None, object]],
               ) -> Generator[Event, None, str | None]:
        """SessionStart when due, then UserPromptSubmit; the reason when a hook blocked the
        message (it is kept, unanswered), else None (their context: ``added``). The session's
        file is made first (``ensure_file``), so every hook is told its transcript path."""
        self.added = ""
        if self.hooks is None:
            return None
        yield from ensure_file()
        hooks = self._where(state)
        assert hooks is not None
        context = []
        if self.due is not None:
            started = hooks.run("SessionStart", {"source": self.due}, self.due)
            self.due = None
            yield from self._said(started)
            context.append(started.context)
        outcome = hooks.run("UserPromptSubmit", {"prompt": text})
        yield from self._said(outcome)
        self.added = "\n".join(c for c in (*context, outcome.context) if c)
        if outcome.blocked is not None:
            yield Notice("warning", f"A UserPromptSubmit hook blocked the message (it is kept "
                                    f"in the transcript, unanswered): {outcome.blocked}")
            return f"blocked by a UserPromptSubmit hook: {outcome.blocked}"
        return None

    def pre_compact(self, state: SessionState, trigger: str,
                    focus: str | None) -> Generator[Event, None, bool]:
        """PreCompact; False when a hook cancels a manual compaction (an automatic one goes
        on: the message waiting for it must fit the window)."""
        hooks = self._where(state)
        if hooks is None or not state.queries:
            return True
        outcome = hooks.run("PreCompact", {"trigger": trigger,
                                           "custom_instructions": focus or ""}, trigger)
        yield from self._said(outcome)
        if outcome.blocked is None:
            return True
        if trigger == "manual":
            yield Notice("warning", f"Compaction cancelled by a PreCompact hook: "
                                    f"{outcome.blocked}")
            return False
        yield Notice("warning", f"A PreCompact hook objected ({outcome.blocked}); an automatic "
                                "compaction goes on all the same")
        return True

    def automatic(self, state: SessionState, compaction: Generator[Event, None, bool],
                  ) -> Generator[Event, None, bool]:
        """An automatic ``compaction`` of ``state`` between PreCompact (which cannot stop it)
        and PostCompact (when it compacted); whether it did."""
        yield from self.pre_compact(state, "auto", None)
        compacted = yield from compaction
        if compacted:
            yield from self.post_compact("auto")
        return compacted

    def post_compact(self, trigger: str) -> Flow:
        """PostCompact, in the new session; the next message gets SessionStart (compact)."""
        self.due = "compact"
        hooks = self._where(self.state) if self.state is not None else None
        if hooks is not None:
            yield from self._said(hooks.run("PostCompact", {"trigger": trigger}, trigger))

    def stop(self, state: SessionState) -> Flow:
        """Stop: the answer to a message is over. A hook that blocks (asks the agent to go on,
        in Claude Code) is said in one line: rollchat waits for the user instead."""
        hooks = self._where(state)
        if hooks is None:
            return
        outcome = hooks.run("Stop", {"stop_hook_active": False})
        yield from self._said(outcome)
        if outcome.blocked is not None:
            yield Notice("warning", f"A Stop hook asked the agent to go on ({outcome.blocked}); "
                                    "rollchat does not go on by itself: send a message to")

    def end(self, state: SessionState, reason: str) -> Flow:
        hooks = self._where(state)
        if hooks is not None:
            yield from self._said(hooks.run("SessionEnd", {"reason": reason}, reason))

    def told(self) -> Flow:
        """The lines of hooks run inside a tool loop (a timeout, a failure)."""
        if self.hooks is not None:
            for line in self.hooks.take():
                yield Notice("warning", line)
