"""What a session builds its engine with and gives each new working context: the engine that
measures with the session's counter and limits, the session's own tools (the archive, memory
search), and the memory layers of its requests."""

from __future__ import annotations

from collections.abc import Callable
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
                 max_output_tokens: int) -> Engine:
    """The engine of ``settings``, measuring with the session's ``counter``, its tool output
    limits (``output``, ``tool_room``) and its budget's ``max_output_tokens``; a relevant
    history (session.history) chooses what each request sends."""
    select = None
    if config.session.history == "relevant":
        from rollchat.engine.history import RelevantHistory

        select = RelevantHistory()
    context = WorkingContext(settings.system, count=counter.count_text,
                             allowance=output.allowance, select=select)
    return Engine(settings, context=context, count=counter.count_text, tool_room=tool_room,
                  max_output_tokens=max_output_tokens)


def session_tools(engine: Engine, output: ToolOutput, store: Store, memory: Memory | None,
                  state: SessionState, parent_id: str | None) -> list[Tool]:
    """The session's own tools for a context starting now: the archive (of the parent
    ``parent_id``, of ``state``'s turns and of the turn in flight) and, with ``memory``,
    memory search."""
    tools = [output.archive(store, parent_id, lambda: state.turns,
                            lambda: exchanges(engine.current))]
    if memory is not None:
        tools.append(memory.search_tool())
    return tools


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
