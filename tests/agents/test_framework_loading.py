"""Which object of an agent file rollchat runs (root_agent, else agent, else the one framework
agent, or the one named with FILE:NAME or module:NAME), the one-line refusals (a framework not
installed, an object rollchat does not run), and a plain function run as the agent: its text
streamed, recorded and compacted with the local summary, its history given when it asks."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from rollchat.agents.file import AgentFileError, load_agent_file, split_target
from rollchat.domain import Text
from tests.e2e import clean_env, run_piped
from tests.framework_agents import one_worker, sessions, turns


def load(tmp_path: Path, source: str, attribute: str | None = None, name: str = "agent.py"):  # type: ignore[no-untyped-def]
    path = tmp_path / name
    path.write_text(source, encoding="utf-8")
    return load_agent_file(path, name, attribute)


STRANDS = ("from strands import Agent\nfrom strands.models.openai import OpenAIModel\n"
           "MODEL = OpenAIModel(client_args={'api_key': 'x', 'base_url': 'http://127.0.0.1:9'},"
           " model_id='m')\n")


def test_root_agent_comes_before_agent(tmp_path: Path) -> None:
    loaded = load(tmp_path, "def root_agent(q):\n    return 'root'\n\n"
                            "def agent(q):\n    return 'agent'\n")
    assert loaded.framework is not None and loaded.framework.framework == "function"
    assert loaded.framework.runner.fn.__name__ == "root_agent"  # type: ignore[attr-defined]
    assert loaded.tools == ()


@one_worker("strands")  # (it imports Strands: in the worker of Strands' other tests)
def test_agent_then_the_one_framework_agent_then_a_rollchat_agent_file(tmp_path: Path) -> None:
    loaded = load(tmp_path, "def agent(q):\n    return 'a'\n", name="a.py")
    assert loaded.framework is not None
    pytest.importorskip("strands")
    one = load(tmp_path, f"{STRANDS}my_bot = Agent(model=MODEL, callback_handler=None)\n",
               name="b.py")
    assert one.framework is not None and one.framework.framework == "strands"
    with pytest.raises(AgentFileError, match=r"defines 2 agents \(a, b\); name one: c.py:NAME"):
        load(tmp_path, f"{STRANDS}a = Agent(model=MODEL, callback_handler=None)\n"
                       "b = Agent(model=MODEL, callback_handler=None)\n", name="c.py")
    plain = load(tmp_path, 'name = "Helper"\n\ndef count(text: str) -> str:\n'
                           '    """Count.\n\n    Args:\n        text: The text.\n    """\n'
                           '    return text\n', name="d.py")
    assert plain.framework is None and [t.name for t in plain.tools] == ["count"]


def test_file_colon_name_and_module_colon_name(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    assert split_target("dir/agent.py:helper") == ("dir/agent.py", "helper")
    assert split_target("pkg.mod:agent") == ("pkg.mod", "agent")
    assert split_target("C:agent.py") == ("C:agent.py", None)  # a drive, not a name
    loaded = load(tmp_path, "def helper(q):\n    return 'h'\n\ndef root_agent(q):\n"
                            "    return 'r'\n", attribute="helper")
    assert loaded.framework is not None
    assert loaded.framework.runner.fn.__name__ == "helper"  # type: ignore[attr-defined]
    (tmp_path / "mypkg_agents.py").write_text("def bot(q):\n    return 'bot'\n",
                                              encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    by_module = load_agent_file(tmp_path / "mypkg_agents", "mypkg_agents:bot", "bot")
    assert by_module.framework is not None
    with pytest.raises(AgentFileError, match="defines no nothing_here"):
        load(tmp_path, "def root_agent(q):\n    return 'r'\n", attribute="nothing_here",
             name="e.py")
    sys.modules.pop("mypkg_agents", None)


def test_a_framework_not_installed_is_one_line_naming_the_package(tmp_path: Path) -> None:
    if any(m in sys.modules or _installed(m) for m in ("langgraph",)):
        pytest.skip("langgraph is installed here")
    with pytest.raises(AgentFileError) as caught:
        load(tmp_path, "from langgraph.prebuilt import create_react_agent\n"
                       "root_agent = create_react_agent(None, [])\n")
    assert str(caught.value) == ("agent.py:1: the agent needs langgraph, which is not "
                                 "installed (pip install langgraph)")


def _installed(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None


def test_an_object_rollchat_does_not_run_is_one_line_listing_what_it_runs(
        tmp_path: Path) -> None:
    with pytest.raises(AgentFileError) as caught:
        load(tmp_path, "class Bot:\n    pass\n\nroot_agent = Bot()\n")
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith("agent.py: root_agent is a ")
    for accepted in ("strands.Agent", "agents.Agent", "pydantic_ai.Agent", "LlmAgent",
                     "create_react_agent", "root_agent(query) -> str"):
        assert accepted in message


FUNCTIONS = '''
import asyncio

def root_agent(query, history):
    """You repeat."""
    yield f"heard {query!r} "
    yield f"after {len(history)} messages"
'''


def test_a_generator_function_streams_its_text_and_compacts_locally(tmp_path: Path) -> None:
    (tmp_path / "agent.py").write_text(FUNCTIONS, encoding="utf-8")
    done = run_piped(tmp_path, "hello\nagain\ncompact\nthird\n", "agent.py",
                     env=clean_env(tmp_path / "home"))
    assert done.returncode == 0, done.stderr
    assert "heard 'hello' after 0 messages" in done.stdout
    assert "heard 'again' after 2 messages" in done.stdout  # the history it was given
    out = done.stdout + done.stderr
    assert "summary failed" not in out  # a function has no model: local, and said so
    assert "The summary is the local one (the model was not asked: a function agent" in out
    first, second = sessions(tmp_path)[:2]
    [one, _] = turns(first)
    assert [b.text for b in one.blocks if isinstance(b, Text)] == [
        "heard 'hello' after 0 messages"]
    assert "SESSION_SUMMARY_START" in first.read_text(encoding="utf-8")
    assert "heard 'third' after 2 messages" in done.stdout  # the restoration exchange
    assert turns(second)


def test_an_async_function_and_a_failing_one(tmp_path: Path) -> None:
    (tmp_path / "agent.py").write_text(
        "import asyncio\n\nasync def root_agent(query):\n    await asyncio.sleep(0)\n"
        "    if query == 'boom':\n        raise ValueError('no such thing')\n"
        "    return query.upper()\n", encoding="utf-8")
    done = run_piped(tmp_path, "boom\nshout\n", "agent.py", env=clean_env(tmp_path / "home"))
    assert done.returncode == 0, done.stderr
    assert "agent framework error: ValueError: no such thing" in done.stdout + done.stderr
    assert "SHOUT" in done.stdout  # the chat went on


def test_one_shot_with_a_named_function(tmp_path: Path) -> None:
    (tmp_path / "bots.py").write_text("def shout(query):\n    return query.upper()\n\n"
                                      "def root_agent(query):\n    return 'root'\n",
                                      encoding="utf-8")
    done = run_piped(tmp_path, "", "-p", "hello", "--agent-file", "bots.py:shout",
                     env=clean_env(tmp_path / "home"))
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "HELLO"
