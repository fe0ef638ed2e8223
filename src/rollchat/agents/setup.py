"""Which agent a run uses once the config is read: an agent file named on the command line
(``rollchat path/to/agent.py``) or by the config (``agents: NAME: file: PATH``) is loaded and
its settings applied; and the example agent ``rollchat init-agent PATH`` writes."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from rollchat.config.settings import Config, ConfigOverrides
from rollchat.errors import UsageError

if TYPE_CHECKING:
    from rollchat.agents.file import LoadedAgent


def config_with_agent_file(config: Config, agent_file: Path | None, overrides: ConfigOverrides,
                    env: Mapping[str, str], cwd: Path) -> tuple[Config, LoadedAgent | None]:
    """The config whose agent is the agent file's (when there is one), and what it loaded."""
    agent = config.agent
    path = agent_file if agent_file is not None else agent.file
    if path is None:
        return config, None
    from rollchat.agents.file import agent_key, apply_agent_file, load_agent_file, split_target

    target, attribute = split_target(str(path))
    path = Path(target)
    if agent_file is not None:
        if overrides.agent is not None:
            raise UsageError("give --agent or an agent file, not both")
        path = (cwd / os.path.expanduser(target)).resolve()
        key = agent_key(path)
        agent = dataclasses.replace(config.agents.get(key, agent), key=key,
                                    name=key.replace("-", " ").replace("_", " ").title())
    shown = str(agent_file) if agent_file is not None else str(path)
    loaded = load_agent_file(path, shown, attribute)
    keep = frozenset(name for name, var in (("provider", "ROLLCHAT_PROVIDER"),
                                            ("model", "ROLLCHAT_MODEL"))
                     if getattr(overrides, name) is not None or env.get(var))
    agent = apply_agent_file(agent, loaded, keep)
    agents = {**config.agents, agent.key: agent}
    return dataclasses.replace(config, agents=agents, default_agent=agent.key), loaded


TEMPLATE = '''"""{title}: an agent for rollchat (run it with `rollchat {path}`).

Settings are module-level names (all optional); tools are plain typed functions. rollchat
builds each tool's JSON schema from its signature and docstring, checks the model's
arguments against it before the call, and asks you before running it (approval: ask).
"""

from __future__ import annotations

from typing import Literal

name = "{title}"
system_prompt = (
    "You are a helpful assistant. Use the tools when they help, and say which you used."
)
# provider = "anthropic"        # auto | anthropic | openai | offline (default: auto)
# model = "claude-sonnet-5-5"   # default: the provider's default model
approval = "ask"                # ask | auto | never: what a tool call needs
allow: list[str] = []           # tools (names or globs) that run without asking
deny: list[str] = []            # tools that never run
max_tool_rounds = 25            # model calls with tool results in one turn
# skills = "skills"             # a folder of skills/NAME/SKILL.md (Agent Skills)


def word_count(text: str, unit: Literal["words", "characters", "lines"] = "words") -> str:
    """Count the words, characters or lines of a text.

    Args:
        text: The text to count.
        unit: What to count.
    """
    if unit == "characters":
        return f"{{len(text)}} characters"
    if unit == "lines":
        return f"{{len(text.splitlines())}} lines"
    return f"{{len(text.split())}} words"


tools = [word_count]            # default: every public function defined in this file
'''


def init_agent(path: Path) -> str:
    """Write the example agent at ``path`` (never over an existing file); the line to show."""
    title = path.stem.replace("_", " ").replace("-", " ").title() or "My Agent"
    text = TEMPLATE.format(title=title, path=path)
    try:
        with path.open("x", encoding="utf-8") as handle:
            handle.write(text)
    except FileExistsError:
        raise UsageError(f"{path} already exists; not overwritten") from None
    except OSError as exc:
        raise UsageError(f"cannot write {path}: {exc.strerror or exc}") from None
    return f"Wrote {path}: an agent with one tool (word_count). Run it with: rollchat {path}"
