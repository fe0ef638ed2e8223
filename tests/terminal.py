"""The chat as a terminal runs it, in this process: ``rollchat ARGS`` parsed by the real CLI,
stdin and stdout taken for a terminal, prompt_toolkit reading keys from a pipe and drawing into
the same screen buffer that rich writes to. A test script types and waits (``expect``, as with
pexpect) from a thread of its own while the chat runs in the main thread (signal handlers and
prompt_toolkit need it); every wait has a deadline, and a failed script ends the chat.

For chat flows (commands, questions, compaction, resume, what is shown and saved), where a
real terminal and a new process are not what the test proves: those stay in tests/e2e.py's
``spawn`` (Ctrl-C and signals, terminal modes, start-up, exit codes of a process)."""

from __future__ import annotations

import io
import os
import re
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.e2e import clean_env

_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07|\x1b[=>78]|\r")


class Screen(io.StringIO):
    """What the chat wrote (rich and prompt_toolkit both), with a cursor that ``expect``
    moves past each match, as pexpect does."""

    def __init__(self) -> None:
        super().__init__()
        self.changed = threading.Condition()
        self.seen = 0  # where the next expect starts (in the text without escapes)
        self.seen_raw = 0  # (in the bytes as written)
        self.before = ""  # the text between the previous match and the last one
        self.ended = False  # the chat ended: nothing more will be written

    def close_screen(self) -> None:
        with self.changed:
            self.ended = True
            self.changed.notify_all()

    def isatty(self) -> bool:
        return True

    def fileno(self) -> int:
        raise io.UnsupportedOperation("fileno")  # no file descriptor: no termios

    def write(self, s: str) -> int:
        with self.changed:
            written = super().write(s)
            self.changed.notify_all()
        return written

    def text(self) -> str:
        """Everything written so far, without escape sequences."""
        with self.changed:
            return _ANSI.sub("", self.getvalue())

    def expect(self, pattern: str | re.Pattern[str], timeout: float = 30, *,
               raw: bool = False) -> re.Match[str]:
        """Wait until ``pattern`` (a regex) appears after the cursor in the text without
        escape sequences (``raw``: in the bytes as written, with a cursor of their own); move
        the cursor past it. AssertionError at ``timeout``, or once the chat ended without it."""
        regex = re.compile(pattern) if isinstance(pattern, str) else pattern
        deadline = time.monotonic() + timeout
        with self.changed:
            while True:
                text = self.getvalue() if raw else _ANSI.sub("", self.getvalue())
                start = self.seen_raw if raw else self.seen
                found = regex.search(text, start)
                if found is not None:
                    self.before = text[start:found.start()]
                    if raw:
                        self.seen_raw = found.end()
                    else:
                        self.seen = found.end()
                    return found
                left = deadline - time.monotonic()
                if left <= 0 or self.ended:
                    raise AssertionError(f"{regex.pattern!r} not shown (within {timeout} s, "
                                         f"or before the chat ended); "
                                         f"after the cursor: {text[start:][-3000:]!r}")
                self.changed.wait(left)

    def expect_exact(self, text: str, timeout: float = 30, *,
                     raw: bool = False) -> re.Match[str]:
        return self.expect(re.escape(text), timeout, raw=raw)

    def expect_any(self, patterns: list[str], timeout: float = 30) -> int:
        """Which of ``patterns`` (regexes) appears first after the cursor, as pexpect's
        ``expect`` of a list; the cursor moves past it."""
        found = self.expect("|".join(f"(?P<p{i}>{p})" for i, p in enumerate(patterns)),
                            timeout)
        return next(i for i in range(len(patterns)) if found.group(f"p{i}") is not None)


class _TypedStdin(io.StringIO):
    """sys.stdin of a chat in a terminal: a terminal, but without a descriptor (the keys come
    through prompt_toolkit's pipe input)."""

    def isatty(self) -> bool:
        return True

    def fileno(self) -> int:
        raise io.UnsupportedOperation("fileno")


class Terminal:
    """The keyboard and screen of one in-process chat."""

    def __init__(self, keys: Any, screen: Screen) -> None:
        self.keys, self.screen = keys, screen

    def send(self, text: str) -> None:
        self.keys.send_text(text)

    def sendline(self, text: str = "") -> None:
        self.keys.send_text(text + "\r")

    def expect(self, pattern: str | re.Pattern[str], timeout: float = 30, *,
               raw: bool = False) -> re.Match[str]:
        return self.screen.expect(pattern, timeout, raw=raw)

    def expect_exact(self, text: str, timeout: float = 30, *,
                     raw: bool = False) -> re.Match[str]:
        return self.screen.expect_exact(text, timeout, raw=raw)

    def expect_any(self, patterns: list[str], timeout: float = 30) -> int:
        return self.screen.expect_any(patterns, timeout)

    @property
    def before(self) -> str:
        return self.screen.before


@contextmanager
def _as_a_terminal(cwd: Path, env: dict[str, str]) -> Iterator[Terminal]:
    """The process's environment, directory, standard streams and prompt_toolkit's session
    those of a terminal running ``rollchat`` in ``cwd``; all put back afterwards."""
    from prompt_toolkit.application import create_app_session
    from prompt_toolkit.data_structures import Size
    from prompt_toolkit.input import create_pipe_input
    from prompt_toolkit.output.vt100 import Vt100_Output

    screen = Screen()
    with pytest.MonkeyPatch.context() as monkeypatch, ExitStack() as stack:
        _take_over(monkeypatch, screen, cwd, env)
        output = Vt100_Output(screen, lambda: Size(rows=40, columns=120), term="xterm",
                              enable_cpr=False)
        keys = stack.enter_context(create_pipe_input())
        stack.enter_context(create_app_session(input=keys, output=output))
        yield Terminal(keys, screen)


def _take_over(monkeypatch: pytest.MonkeyPatch, screen: Screen, cwd: Path,
               env: dict[str, str]) -> None:
    for name in [n for n in os.environ if n not in env]:
        monkeypatch.delenv(name)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.chdir(cwd)
    monkeypatch.setattr(sys, "path", list(sys.path))  # an agent file's folder is put first
    monkeypatch.setattr(sys, "stdout", screen)
    monkeypatch.setattr(sys, "stderr", screen)  # one terminal shows both
    monkeypatch.setattr(sys, "stdin", _TypedStdin())


def run_chat(cwd: Path, args: list[str], script: Callable[[Terminal], None], *,
             env: dict[str, str] | None = None, timeout: float = 120) -> int:
    """Run ``rollchat ARGS`` in ``cwd`` as a terminal would, while ``script`` types into it
    from another thread; its exit status once both ended. An exception in the script is
    raised here, after the chat was ended (its input closed)."""
    from rollchat.cli.agents import alias_args
    from rollchat.cli.app import build_cli
    from rollchat.cli.argv import chat_args, chat_only

    failed: list[BaseException] = []
    ended = threading.Event()
    try:
        with _as_a_terminal(cwd, env or clean_env(cwd / "home")) as term:
            def typist() -> None:
                try:
                    script(term)
                    if not ended.wait(timeout):
                        raise AssertionError(f"the chat did not end: {term.screen.text()}")
                except BaseException as exc:  # handed to the test's thread
                    failed.append(exc)
                    term.keys.close()  # end of input: the chat ends as with Ctrl-D

            thread = threading.Thread(target=typist, name="typist", daemon=True)
            thread.start()
            argv = alias_args(chat_args(args))
            try:
                build_cli(subcommands=not chat_only(argv))(args=argv, prog_name="rollchat")
                code = 0
            except SystemExit as done:
                code = done.code if isinstance(done.code, int) else 1
            finally:
                ended.set()
                term.screen.close_screen()  # a wait for more output fails at once now
                thread.join(timeout)
            if failed:
                raise failed[0]
            assert not thread.is_alive(), f"the script still ran: {term.screen.text()}"
    finally:
        for name in [n for n in sys.modules if n.startswith("rollchat_agent_")]:
            del sys.modules[name]  # the agent files this chat loaded
    return code
