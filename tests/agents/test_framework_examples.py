"""The framework examples in examples/ run as their docstrings say: the Strands and OpenAI
Agents SDK ones against an OpenAI-compatible server (here the local wire server, through
OPENAI_BASE_URL), the plain function offline."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e import clean_env, run_piped
from tests.framework_agents import (
    calls_and_results,
    framework_env,
    one_worker,
    preloaded,
    sessions,
    tool_messages,
    turns,
)
from tests.wire_servers import WireServer, openai_server, text, tool

__all__ = ["openai_server"]
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.mark.parametrize(("folder", "module"), [
    pytest.param("strands_agent", "strands", marks=one_worker("strands")),
    pytest.param("openai_agents_agent", "agents", marks=one_worker("openai-agents"))])
def test_a_framework_example_runs_its_tool(openai_server: WireServer, tmp_path: Path,
                                           folder: str, module: str) -> None:
    pytest.importorskip(module)
    openai_server.push(tool("word_count", {"text": "one two"}), text("Two words."))
    agent = EXAMPLES / folder / "agent.py"
    preload = preloaded(agent.read_text(encoding="utf-8"))  # (forked with its framework)
    env = framework_env(tmp_path / "home", preload, OPENAI_BASE_URL=openai_server.url,
                        OPENAI_API_KEY="test", EXAMPLE_MODEL="wire-model")
    done = run_piped(tmp_path, "count one two\n", str(agent), "--yes", env=env, preload=preload)
    assert done.returncode == 0, done.stderr
    assert "Two words." in done.stdout
    assert [m["content"] for m in tool_messages(openai_server.bodies[1])] == ["2 words"]
    [turn] = turns(sessions(tmp_path)[0])
    _, [result] = calls_and_results(turn)
    assert result.content == "2 words"


def test_the_function_example_runs_offline(tmp_path: Path) -> None:
    done = run_piped(tmp_path, "the cat and the dog\nagain\n",
                     str(EXAMPLES / "function_agent" / "agent.py"),
                     env=clean_env(tmp_path / "home"))
    assert done.returncode == 0, done.stderr
    assert "5 words, most often 'the'. You asked 0 times before." in done.stdout
    assert "1 word, most often 'again'. You asked 1 time before." in done.stdout
