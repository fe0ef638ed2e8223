"""An agent's tools on the engine: the agent file's functions (in the file's order, so the
request prefix is stable), the skills' ``load_skill`` tool and listing, the approval gate
and the tool-round limit."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from rollchat.agents.skills import Skill, load_skills, skill_tool, skills_prompt
from rollchat.config.settings import AgentConfig
from rollchat.engine.core import Engine
from rollchat.errors import ConfigError
from rollchat.tools import Tool
from rollchat.tools.approval import Asker, Gate, Mode


@dataclass(frozen=True)
class Equipment:
    """What the agent brings besides its settings: tools and skills."""

    tools: tuple[Tool, ...] = ()
    skills: tuple[Skill, ...] = field(default_factory=tuple)


def gather(agent: AgentConfig, tools: Sequence[Tool]) -> Equipment:
    """Read the skills folder (ConfigError on a mistake: checked before the chat starts)."""
    skills = tuple(load_skills(agent.skills_dir)) if agent.skills_dir is not None else ()
    names = {t.name for t in tools}
    if skills and "load_skill" in names:
        raise ConfigError("a tool named load_skill clashes with the skills' own tool")
    return Equipment(tuple(tools), skills)


def equip(engine: Engine, agent: AgentConfig, equipment: Equipment, *, ask: Asker) -> None:
    for tool in equipment.tools:
        engine.tools[tool.name] = tool
    if equipment.skills:
        tool = skill_tool(equipment.skills)
        engine.tools[tool.name] = tool
        engine.context.system = f"{engine.context.system}\n\n{skills_prompt(equipment.skills)}"
    mode: Mode = "auto" if agent.approval == "auto" else (
        "never" if agent.approval == "never" else "ask")
    engine.gate = Gate(mode=mode, allow=agent.allow, deny=agent.deny, ask=ask)
    engine.max_tool_rounds = agent.max_tool_rounds
