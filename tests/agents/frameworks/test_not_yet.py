"""An agent of a framework rollchat recognizes but has no adapter for yet (Google ADK) stops
with one line saying so, not a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e import run_piped

ADK = '''
from google.adk.agents import LlmAgent

root_agent = LlmAgent(name="helper", model="gemini-2.0-flash", instruction="Be brief.")
'''


def test_an_adk_agent_stops_with_one_line(tmp_path: Path) -> None:
    pytest.importorskip("google.adk.agents")
    agent = tmp_path / "agent.py"
    agent.write_text(ADK, encoding="utf-8")
    done = run_piped(tmp_path, "hi\n", str(agent), timeout=120)
    assert done.returncode != 0
    assert "Traceback" not in done.stderr
    [line] = done.stderr.strip().splitlines()
    assert "root_agent is a Google ADK agent" in line and "cannot run yet" in line
