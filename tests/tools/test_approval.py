"""Approval the way a user meets it: the prompt in a terminal (the chat in process,
tests/terminal.py: y once, a always, n no, with the refusal going back to the model), rules
that allow or deny, read-only built-ins, and Ctrl-C during a tool call in a pseudo-terminal."""

from __future__ import annotations

import time
from pathlib import Path

import pexpect

from rollchat.domain import ToolCall
from rollchat.providers.base import ToolSpec
from rollchat.storage.transcript import parse
from rollchat.tools import Tool
from rollchat.tools.approval import Gate
from tests.e2e import PROMPT, WORD_COUNT, agent_file, spawn
from tests.terminal import Terminal, run_chat

AGENT = agent_file('import time\n\nname = "Helper"\ndeny = ["wipe_*"]', WORD_COUNT, '''
def wipe_disk(path: str) -> str:
    """Never runs."""
    return "wiped"
''', '''
def nap(seconds: int) -> str:
    """Sleep.

    Args:
        seconds: How long.
    """
    open("napping", "w").close()
    time.sleep(seconds)
    return "rested"
''')


def test_ask_once_always_and_no_in_a_terminal(tmp_path: Path) -> None:
    (tmp_path / "helper.py").write_text(AGENT)

    def script(term: Terminal) -> None:
        term.expect(PROMPT)
        term.sendline('use word_count on "a b c"')
        term.expect(r"The agent wants to run word_count")
        term.expect(r'"text": "a b c"')
        term.expect(r"Allow\? y: yes, once; a: always for this tool in this session; n: no "
                    r"\[y/a/n, Enter\]:")
        term.sendline("n")
        term.expect("refused: the user declined to run word_count")
        term.expect(PROMPT)
        term.sendline('use word_count on "a b"')
        term.expect("Allow")
        term.sendline("maybe")
        term.expect("Type one of y, a, n, then Enter.")
        term.sendline("a")
        term.expect("Approved word_count for the rest of this session: clear, resume, fork "
                    "and a handoff start a new one, which asks again.")
        term.expect("2 words")
        term.expect(PROMPT)
        term.sendline('use word_count on "one"')  # always: no question this time
        assert term.expect_any(["Allow", "1 words"]) == 1
        term.expect(PROMPT)
        term.sendline('use wipe_disk on "/"')  # a deny rule: never asked, never run
        assert term.expect_any(["Allow", "denied by the agent's rules"]) == 1
        term.expect(PROMPT)
        term.sendline("exit")

    assert run_chat(tmp_path, ["helper.py"], script) == 0
    [session] = (tmp_path / "sessions").glob("*.md")
    results = [t.result for turn in parse(session.read_text()).turns for t in turn.tools]
    assert results[0] == "refused: the user declined to run word_count"
    assert results[1:3] == ["2 words", "1 words"]
    assert results[3].startswith("refused: the tool wipe_disk is denied")


HANDED_PROMPT = r"You → [^:\n]+:"  # the prompt after a handoff names the agent
TWO_AGENTS = """default_agent: one
ui:
  offline_word_delay: 0
agents:
  one:
    file: helper.py
  two:
    file: helper.py
"""


def _approve_always(term: Terminal, text: str, asked: bool) -> None:
    """Send ``use word_count on TEXT``; answer ``a`` when asked (which must be ``asked``)."""
    term.sendline(f'use word_count on "{text}"')
    index = term.expect_any(["Allow", r"\d+ words"])
    assert index == (0 if asked else 1), (text, term.before)
    if asked:
        term.sendline("a")
        term.expect(r"\d+ words")
    term.expect(PROMPT)


def test_always_means_this_session_clear_resume_fork_and_handoff_ask_again(tmp_path: Path) -> None:
    """Issue 24, point 7: after "a" a later session (clear, resume, fork, a handoff and back)
    asks again before running the tool; within a session (a compaction too) it does not."""
    (tmp_path / "helper.py").write_text(AGENT)
    (tmp_path / "rollchat.yml").write_text(TWO_AGENTS)

    def script(term: Terminal) -> None:
        term.expect(PROMPT)
        _approve_always(term, "staging", asked=True)
        _approve_always(term, "staging again", asked=False)
        term.sendline("compact")  # the same session goes on
        term.expect(PROMPT)
        _approve_always(term, "after compact", asked=False)
        # (resume 2: the session forked from; 1 is the fork, the current session)
        for command in ("clear", "fork", "resume 2"):
            term.sendline(command)
            term.expect(PROMPT)
            _approve_always(term, f"production after {command}", asked=True)
            _approve_always(term, "and again", asked=False)
        term.sendline('@two use word_count on "handed"')
        term.expect("Allow")
        term.sendline("a")
        term.expect(HANDED_PROMPT)
        term.sendline('@one use word_count on "back"')  # one's session again: asked again
        assert term.expect_any(["Allow", r"\d+ words"]) == 0
        term.sendline("y")
        term.expect(HANDED_PROMPT)
        term.sendline("exit")

    assert run_chat(tmp_path, ["--config", "rollchat.yml"], script) == 0


def test_ctrl_c_during_a_tool_call_cancels_it_and_records_it(tmp_path: Path) -> None:
    (tmp_path / "helper.py").write_text(AGENT.replace('deny = ["wipe_*"]', 'allow = ["nap"]'))
    child = spawn(tmp_path, "helper.py")
    child.expect(PROMPT)
    child.sendline("use nap seconds=30")
    child.expect(r"→ tool nap\(")
    deadline = 100
    while not (tmp_path / "napping").exists() and deadline:
        child.expect([pexpect.TIMEOUT], timeout=0.1)
        deadline -= 1
    child.sendintr()
    child.expect("interrupted")
    child.expect(PROMPT)
    child.sendline("exit")
    child.expect(pexpect.EOF, timeout=30)
    [session] = (tmp_path / "sessions").glob("*.md")
    [turn] = parse(session.read_text()).turns
    assert turn.status == "interrupted"
    [exchange] = turn.tools
    assert exchange.call.name == "nap" and exchange.call.arguments == {"seconds": 30}
    assert exchange.result.startswith("[interrupted by user")


def _tool(name: str, read_only: bool = False) -> Tool:
    return Tool(ToolSpec(name, "", {}), lambda args: "ran", read_only=read_only)


def test_the_gate_rules_in_order() -> None:
    asked: list[str] = []

    def ask(call: ToolCall, tool: Tool) -> None:
        asked.append(call.name)
        return None

    gate = Gate(mode="ask", allow=("github.*", "read_file"), deny=("github.delete*",),
                ask=ask)
    call = ToolCall("1", "x", {})
    assert gate.check(call, _tool("read_file")) is None
    assert gate.check(call, _tool("github.search")) is None
    refusal = gate.check(call, _tool("github.delete_repo"))
    assert refusal is not None and "denied" in refusal
    assert gate.check(call, _tool("session_archive_read", read_only=True)) is None
    refusal = gate.check(ToolCall("2", "shell", {}), _tool("shell"))
    assert refusal is not None and "no terminal" in refusal and asked == ["shell"]
    assert Gate(mode="never").check(call, _tool("shell")) is not None
    assert Gate(mode="never").check(call, _tool("memory_search", read_only=True)) is None
    assert Gate(mode="auto").check(call, _tool("shell")) is None
    assert Gate(mode="auto", deny=("*",)).check(call, _tool("shell")) is not None


def test_a_tools_time_leaves_out_the_wait_for_approval(tmp_path: Path) -> None:
    (tmp_path / "helper.py").write_text(AGENT)

    def script(term: Terminal) -> None:
        term.expect(PROMPT)
        term.sendline('use word_count on "a b c"')
        term.expect(r"Allow\? y: yes, once")
        time.sleep(3)  # the user reads the call before approving it
        term.sendline("y")
        found = term.expect(r"← word_count: \d+ chars in (\d+\.\d)s")
        assert float(found.group(1)) < 3  # counting the wait said 3.0s or more ("18.7s")
        term.expect(PROMPT)
        term.sendline("exit")

    assert run_chat(tmp_path, ["helper.py"], script) == 0
