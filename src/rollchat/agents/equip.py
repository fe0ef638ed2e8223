"""An agent's engine settings: the agent file's functions (in the file's order, so the request
prefix is stable), the skills' ``load_skill`` tool and listing in the system prompt, the
approval gate and the limits."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from rollchat.agents.skills import Skill, load_skills, skill_tool, skills_prompt
from rollchat.config.settings import AgentConfig
from rollchat.engine.core import EngineSettings
from rollchat.errors import ConfigError
from rollchat.providers.base import Provider, RetryPolicy
from rollchat.tools import Tool
from rollchat.tools.approval import Asker, Gate, Mode
from rollchat.tools.hooks import Hooks
from rollchat.tools.sources import ToolSource

if TYPE_CHECKING:
    from rollchat.agents.frameworks import FrameworkAgent


@dataclass(frozen=True)
class Equipment:
    """What the agent brings besides its settings: tools and skills, or the agent a framework
    built (agents/frameworks/), which runs its own tools."""

    tools: tuple[Tool, ...] = ()
    skills: tuple[Skill, ...] = field(default_factory=tuple)
    framework: FrameworkAgent | None = None


def gather(agent: AgentConfig, tools: Sequence[Tool],
           framework: FrameworkAgent | None = None) -> Equipment:
    """Read the skills folder (ConfigError on a mistake: checked before the chat starts)."""
    if framework is not None:
        return Equipment(framework=framework)
    skills = tuple(load_skills(agent.skills_dir)) if agent.skills_dir is not None else ()
    names = {t.name for t in tools}
    if skills and "load_skill" in names:
        raise ConfigError("a tool named load_skill clashes with the skills' own tool")
    return Equipment(tuple(tools), skills)


def engine_settings(agent: AgentConfig, equipment: Equipment, *, provider: Provider,
                    model: str, retry: RetryPolicy, ask: Asker,
                    tool_sources: Sequence[ToolSource] = (),
                    hooks: Hooks | None = None) -> EngineSettings:
    """The settings of ``agent``'s engine: its tools (the file's, then the skills' tool), its
    system prompt with the skills listed, its approval gate (with the user's tool ``hooks``)
    and limits."""
    tools, system = list(equipment.tools), agent.system_prompt
    if equipment.skills:
        tools.append(skill_tool(equipment.skills))
        system = f"{system}\n\n{skills_prompt(equipment.skills)}"
    mode: Mode = "auto" if agent.approval == "auto" else (
        "never" if agent.approval == "never" else "ask")
    return EngineSettings(
        provider, model=model, system=system, max_output_tokens=agent.max_output_tokens,
        temperature=agent.temperature, retry=retry, tools=tuple(tools), thinking=agent.thinking,
        gate=Gate(mode=mode, allow=agent.allow, deny=agent.deny, ask=ask, hooks=hooks),
        max_tool_rounds=agent.max_tool_rounds, tool_sources=tuple(tool_sources),
        runner=equipment.framework.runner if equipment.framework is not None else None)
