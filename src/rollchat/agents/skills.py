"""Skills, in the Agent Skills convention: a folder of ``NAME/SKILL.md`` files whose YAML
front matter has ``name`` and ``description``. The names and descriptions go into the system
prompt (sorted, so the prefix stays byte-stable); the model reads a skill's body with the
read-only ``load_skill`` tool when it needs it (progressive disclosure)."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from rollchat.errors import ConfigError
from rollchat.providers.base import ToolSpec
from rollchat.tools import SKILL_TOOL_NAME, Tool

MAX_SKILL_BYTES = 256 * 1024
_FRONT = re.compile(r"\A---[ \t]*\r?\n(.*?)\r?\n---[ \t]*(?:\r?\n|\Z)", re.DOTALL)
_NAME = re.compile(r"[a-z0-9][a-z0-9-]{0,63}")
SKILLS_HEADING = "## Skills"


@dataclass(frozen=True)
class Skill:
    name: str
    description: str
    path: Path  # its SKILL.md


def load_skills(folder: Path) -> list[Skill]:
    """The skills in ``folder`` (one per ``*/SKILL.md``), sorted by name; ConfigError naming
    the file for a folder that is missing or a SKILL.md without valid front matter."""
    if not folder.is_dir():
        raise ConfigError(f"{folder}: the skills folder does not exist")
    skills: dict[str, Skill] = {}
    for path in sorted(folder.glob("*/SKILL.md")):
        text = _read(path)
        name, description = _front_matter(path, text)
        if name in skills:
            raise ConfigError(f"{path}: a second skill named {name!r} (also {skills[name].path})")
        skills[name] = Skill(name, description, path)
    return [skills[n] for n in sorted(skills)]


def _read(path: Path) -> str:
    try:
        data = path.read_bytes()[:MAX_SKILL_BYTES]
        return data.decode("utf-8-sig", errors="replace")
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read it: {exc.strerror or exc}") from None


def _front_matter(path: Path, text: str) -> tuple[str, str]:
    import yaml

    match = _FRONT.match(text)
    if match is None:
        raise ConfigError(f"{path}:1: a SKILL.md starts with front matter (---, name:, "
                          "description:, ---)")
    try:
        data = yaml.safe_load(match[1])
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: invalid front matter: {getattr(exc, 'problem', exc)}") \
            from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: the front matter must be a mapping with name and "
                          "description")
    name, description = data.get("name"), data.get("description")
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise ConfigError(f"{path}: name: must be 1-64 lowercase letters, digits or '-' "
                          f"(got {name!r})")
    if not isinstance(description, str) or not description.strip():
        raise ConfigError(f"{path}: description: must be a non-empty string")
    return name, " ".join(description.split())


def skills_prompt(skills: Sequence[Skill]) -> str:
    """The system prompt's section listing the skills (empty when there are none)."""
    if not skills:
        return ""
    lines = [SKILLS_HEADING,
             "You have skills: instructions for particular tasks, kept out of this prompt "
             f"until needed. When a task matches a skill's description, call {SKILL_TOOL_NAME} "
             "with the skill's name first, then follow its instructions.",
             "<available_skills>"]
    lines += [f"- {s.name}: {s.description}" for s in skills]
    lines.append("</available_skills>")
    return "\n".join(lines)


def skill_tool(skills: Sequence[Skill]) -> Tool:
    """The read-only ``load_skill`` tool over ``skills``."""
    by_name: Mapping[str, Skill] = {s.name: s for s in skills}
    spec = ToolSpec(SKILL_TOOL_NAME, "Load a skill's full instructions by name (see the "
                    "skills listed in the system prompt).", {
                        "type": "object",
                        "properties": {"name": {"type": "string", "enum": sorted(by_name),
                                                "description": "The skill's name."}},
                        "required": ["name"], "additionalProperties": False})

    def run(arguments: Mapping[str, object]) -> str:
        name = arguments.get("name")
        skill = by_name.get(name) if isinstance(name, str) else None
        if skill is None:
            raise ConfigError(f"no skill named {name!r}; skills: {', '.join(by_name)}")
        text = _read(skill.path)
        match = _FRONT.match(text)
        body = text[match.end():] if match else text
        others = sorted(p.name for p in skill.path.parent.iterdir()
                        if p.name != "SKILL.md") if skill.path.parent.is_dir() else []
        extra = (f"\n\n(Files alongside this skill in {skill.path.parent}: "
                 f"{', '.join(others)})" if others else "")
        return f"# Skill: {skill.name}\n\n{body.strip()}{extra}"

    return Tool(spec, run, read_only=True, source="skills")
