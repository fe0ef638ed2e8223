"""The first prompt before the session core: what is imported before it, and the chat built
behind it (``ui.starting.Starting``): notices drawn once, in the caller's thread; errors re-raised
there; the warm-up run once the chat exists."""

from __future__ import annotations

import sys
import threading
from pathlib import Path

import pexpect
import pytest
from rich.console import Console

from rollchat.ui.render import Renderer
from rollchat.ui.starting import Starting
from tests.e2e import PROMPT, clean_env, default_signals, spawn

# Run in a terminal with the REPL replaced: reports which modules were loaded when the first
# prompt would be drawn, and whether the chat can still be built and answer.
PROBE = """
import sys
import rollchat.ui.repl as repl

def report(chat, **kwargs):
    heavy = sorted(m for m in sys.modules if m.startswith(
        ("rich", "rollchat.session.core", "rollchat.engine.core", "rollchat.storage.store",
        "rollchat.events",
         "rollchat.providers.offline", "rollchat.compaction", "openai", "anthropic",
         "pydantic", "docstring_parser", "rollchat.agents.file", "rollchat.tools.python",
         "rollchat.memory", "sqlite3", "rollchat.domain", "rollchat.cli.sessions",
         "rollchat.cli.reading", "rollchat.cli.importing", "rollchat.cli.compact",
         "rollchat.cli.memory", "rollchat.cli.prune", "rollchat.cli.setup", *FRAMEWORKS)))
    print("LOADED", heavy, flush=True)
    app = chat.get()
    repl.handle_line(app, "my favourite colour is teal")
    print("BUILT", type(app.session).__name__, app.session.state.queries, flush=True)
    print("FRAMEWORKS", sorted(m for m in sys.modules if m.startswith(FRAMEWORKS)), flush=True)

# a chat of a rollchat agent imports no agent framework, nor rollchat's adapters of them
FRAMEWORKS = ("strands", "agents", "pydantic_ai", "langgraph", "langchain", "google.adk",
              "rollchat.agents.frameworks")

repl.run_interactive = report
sys.argv = ["rollchat", "--sessions-dir", "s"]
from rollchat.__main__ import main
main()
"""


def test_nothing_heavy_is_imported_before_the_first_prompt(tmp_path: Path) -> None:
    child = pexpect.spawn(sys.executable, ["-c", PROBE], cwd=str(tmp_path),
                          env=clean_env(tmp_path / "home"), encoding="utf-8", timeout=30,
                          preexec_fn=default_signals)
    child.expect("· Assistant · offline model")
    child.expect(r"LOADED \[(.*)\]")
    assert child.match.group(1) == ""
    child.expect("teal")
    child.expect("BUILT Session 1")
    child.expect(r"FRAMEWORKS \[(.*)\]")
    assert child.match.group(1) == ""
    child.expect(pexpect.EOF)


def _renderer() -> tuple[Renderer, Console]:
    console = Console(file=__import__("io").StringIO(), width=200, color_system=None)
    return Renderer(console, interactive=False), console


def test_starting_builds_once_in_the_background_and_draws_notices_in_the_caller() -> None:
    out, console = _renderer()
    app_object = object()  # Starting hands over whatever the build made
    builds: list[str] = []
    release = threading.Event()

    def build():  # type: ignore[no-untyped-def]
        builds.append(threading.current_thread().name)
        release.wait(5)
        return app_object, ["the sessions directory is read-only"]

    chat = Starting(build, label=" starting · Rollo · offline ", out=out)
    warmed: list[str] = []
    chat.start(then=lambda app: warmed.append(threading.current_thread().name))
    assert chat.ready is None  # still building: the toolbar shows the label
    assert console.file.getvalue() == ""  # nothing drawn from the background
    release.set()
    assert chat.get() is app_object and chat.get() is app_object and builds == ["rollchat-start"]
    assert console.file.getvalue().count("read-only") == 1  # drawn once, by get
    chat.start(then=lambda app: warmed.append("again"))  # started twice: built once
    for _ in range(100):
        if len(warmed) == 2:
            break
        threading.Event().wait(0.02)
    assert sorted(warmed) == ["again", "rollchat-start"] and builds == ["rollchat-start"]


def test_starting_builds_in_the_caller_when_not_started_and_reraises_errors() -> None:
    out, _ = _renderer()
    made: list[str] = []
    chat = Starting(lambda: (made.append(threading.current_thread().name) or "app", []),
                    label="", out=out)
    assert chat.get() == "app" and made == [threading.current_thread().name]

    def broken():  # type: ignore[no-untyped-def]
        raise RuntimeError("no provider")

    failing = Starting(broken, label="", out=out)
    failing.start()
    with pytest.raises(RuntimeError, match="no provider"):
        failing.get()


def test_pty_the_chat_built_behind_the_prompt_answers_and_warns(tmp_path: Path) -> None:
    """A sessions directory that cannot be used is still said (once the chat is built), and
    the first message typed right away is answered and kept in memory."""
    sessions = tmp_path / "taken"
    sessions.write_text("a file where the sessions directory should be")
    child = spawn(tmp_path, "--sessions-dir", str(sessions))
    child.sendline("hello, my name is Ada")  # typed before the chat is ready
    child.expect(r"Warning:.*exists\s+and\s+is\s+not\s+a\s+directory")  # (wrapped at words)
    child.expect(r"the\s+chat\s+goes\s+on\s+in\s+memory")
    child.expect("your name is Ada")
    child.expect(PROMPT)
    child.sendline("exit")
    child.expect("Goodbye!")
    child.expect(pexpect.EOF)
    assert sessions.read_text() == "a file where the sessions directory should be"


def test_direct_lines_wrap_at_words_like_rich(capsys, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("COLUMNS", "30")
    monkeypatch.setenv("NO_COLOR", "1")
    Renderer(interactive=True).warn("the configured window leaves no room for the answer")
    assert capsys.readouterr().out == ("Warning: the configured window\n"
                                       "leaves no room for the answer\n")


def test_an_interrupted_build_in_the_caller_is_built_again() -> None:
    """A Ctrl-C or an ending signal while the chat is built in the caller's thread (piped
    input, --resume) stops that build only: the chat is still needed to save and exit."""
    out, _ = _renderer()
    attempts: list[int] = []

    def build():  # type: ignore[no-untyped-def]
        attempts.append(1)
        if len(attempts) == 1:
            raise KeyboardInterrupt
        return "app", []

    chat = Starting(build, label="", out=out)
    with pytest.raises(KeyboardInterrupt):
        chat.get()
    assert chat.ready is None
    assert chat.get() == "app" and len(attempts) == 2


@pytest.mark.parametrize(("args", "only"), [
    ([], True),
    (["--sessions-dir", "s", "--resume", "3", "-y"], True),
    (["--model=gpt-4o", "-c", "--no-save", "--pick"], True),
    (["--agent-file", "agent.py", "--show-tools"], True),
    (["sessions"], False),
    (["--config", "c.yml", "search", "x"], False),
    (["--help"], False),
    (["--install-completion"], False),
])
def test_the_subcommands_are_registered_only_when_the_line_may_name_one(
        args: list[str], only: bool) -> None:
    from rollchat.cli.argv import chat_only

    assert chat_only(args) is only


def test_through_the_entry_point_subcommands_and_help_still_work(tmp_path: Path) -> None:
    import subprocess

    env = clean_env(tmp_path / "home")
    listed = subprocess.run([sys.executable, "-m", "rollchat", "--sessions-dir", "s", "sessions",
                             "--json"], cwd=tmp_path, env=env, capture_output=True, text=True,
                            timeout=60)
    assert listed.returncode == 0 and '"sessions": []' in listed.stdout, listed.stderr
    helped = subprocess.run([sys.executable, "-m", "rollchat", "--help"], cwd=tmp_path,
                            env=env, capture_output=True, text=True, timeout=60)
    assert helped.returncode == 0
    for name in ("sessions", "search", "show", "export", "compact", "mcp", "import", "memory",
                 "prune", "fork", "pick"):
        assert name in helped.stdout, name
