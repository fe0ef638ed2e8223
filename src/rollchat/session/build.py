"""What a session builds its engine with and gives each new working context: the engine that
measures with the session's counter and limits, the session's own tools (the archive, memory
search), and the memory layers of its requests."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from rollchat.agents.instructions import Instructions
from rollchat.config.settings import Config
from rollchat.domain import exchanges
from rollchat.engine.context import WorkingContext
from rollchat.engine.core import Engine, EngineSettings
from rollchat.engine.tool_output import ToolOutput
from rollchat.memory.layers import MemoryLayers, system_prompt
from rollchat.models.tokens import TokenCounter
from rollchat.session.instructed import with_instructions
from rollchat.session.state import SessionState
from rollchat.storage.store import Store
from rollchat.tools import Tool

if TYPE_CHECKING:
    from rollchat.memory.keeper import Memory


def build_engine(settings: EngineSettings, config: Config, counter: TokenCounter,
                 output: ToolOutput, tool_room: Callable[[], int],
                 max_output_tokens: int, ack_tokens: int) -> Engine:
    """The engine of ``settings``, measuring with the session's ``counter``, its tool output
    limits (``output``, ``tool_room``) and its budget's ``max_output_tokens`` and
    ``ack_tokens``; a relevant history (session.history) chooses what each request sends."""
    select = None
    if config.session.history == "relevant":
        from rollchat.engine.history import RelevantHistory

        select = RelevantHistory()
    context = WorkingContext(settings.system, count=counter.count_text,
                             allowance=output.allowance, select=select)
    return Engine(settings, context=context, count=counter.count_text, tool_room=tool_room,
                  max_output_tokens=max_output_tokens, ack_tokens=ack_tokens)


def session_tools(engine: Engine, output: ToolOutput, store: Store, memory: Memory | None,
                  state: SessionState, parent_id: str | None, window: int,
                  count: Callable[[str], int]) -> tuple[list[Tool], list[str]]:
    """The session's own tools for a context starting now, as ``window`` can carry them
    (``fitted``): the archive (of the parent ``parent_id``, of ``state``'s turns and of the
    turn in flight) and, with ``memory``, memory search; and the names of those left out."""
    tools = [output.archive(store, parent_id, lambda: state.turns,
                            lambda: exchanges(engine.turn_so_far()))]
    if memory is not None:
        tools.append(memory.search_tool())
    kept = fitted(tools, window, count)
    return kept, [t.name for t in tools if t.name not in {k.name for k in kept}]


OWN_TOOLS_SHARE = 0.05  # of the window, at most, for the session's own tools' specs


def spec_cost(tools: Sequence[Tool], count: Callable[[str], int]) -> int:
    """About what the tools' specs add to every request, in tokens."""
    return sum(count(json.dumps({"name": t.spec.name, "description": t.spec.description,
                                 "parameters": t.spec.parameters}, ensure_ascii=False))
               for t in tools)


def fitted(tools: Sequence[Tool], window: int, count: Callable[[str], int]) -> list[Tool]:
    """The session's own ``tools`` as a small ``window`` can carry them: whole while they
    take at most OWN_TOOLS_SHARE of it (a 2K window gave them a fifth), else in their brief
    form, else those brief ones that fit: first those offered on their own (a companion,
    like the archive of a session with no parent, is sent only beside others), in order."""
    room = int(window * OWN_TOOLS_SHARE)
    if spec_cost(tools, count) <= room:
        return list(tools)
    brief = [replace(t, spec=t.brief) if t.brief is not None else t for t in tools]
    kept: list[Tool] = []
    for tool in sorted(brief, key=lambda t: t.companion):  # stable: in order otherwise
        if spec_cost([*kept, tool], count) <= room:
            kept.append(tool)
    return [t for t in brief if t in kept]


def memory_layers(config: Config, memory: Memory | None,
                  layers: MemoryLayers | None) -> MemoryLayers | None:
    """The memory layers of each request: ``layers``, else ``memory``'s store (None: off)."""
    if layers is None and memory is not None:
        layers = MemoryLayers(memory.store, share=config.memory.max_share)
    if layers is not None and config.session.history == "relevant":
        layers.dedupe = False  # an earlier message (and its block) may not be sent
    return layers


def stable_prompt(persona: str, instructions: Instructions | None, layers: MemoryLayers | None,
                  window: int, count: Callable[[str], int], refreeze: bool = True) -> str:
    """The system prompt of a working context, the stable part of every request: the agent's
    prompt, the project instructions, then the memory's user profile (frozen again now when
    ``refreeze``; else as it was)."""
    head = with_instructions(persona, instructions or Instructions())
    if layers is None:
        return head
    profile = layers.freeze(window, count) if refreeze else layers.profile
    return system_prompt(head, profile)
