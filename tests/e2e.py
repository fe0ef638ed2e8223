"""Helpers for end-to-end tests: run rollchat in a pseudo-terminal or with piped input."""

from __future__ import annotations

import contextlib
import fcntl
import os
import signal
import struct
import subprocess
import sys
import tempfile
import termios
from collections.abc import Mapping
from pathlib import Path

import pexpect
from pexpect.fdpexpect import fdspawn

from tests import forkserver

PROMPT = "You:"
# Tools an agent file of a test holds (see agent_file): word_count answers "3 words", count_words
# answers "3"
WORD_COUNT = '''
def word_count(text: str) -> str:
    """Count words.

    Args:
        text: The text.
    """
    return f"{len(text.split())} words"
'''
COUNT_WORDS = '''
def count_words(text: str) -> str:
    """Count the words of a text.

    Args:
        text: The text.
    """
    return str(len(text.split()))
'''


def agent_file(head: str, *parts: str) -> str:
    """The source of an agent file: ``head`` (its docstring, imports, name, approval rules),
    then each of ``parts`` (a tool's function, the ``tools`` list) two blank lines apart."""
    return "\n" + head.strip("\n") + "\n" + "".join("\n\n" + p.strip("\n") + "\n" for p in parts)


# an agent file with one typed tool (`use word_count text="..."`), for the tests that run one
HELPER_AGENT = agent_file('name = "Helper"', WORD_COUNT)

# The compiled bytecode of every Python child the tests start (rollchat, helper scripts, MCP
# servers), shared by all of them and kept between runs: without it each child compiles
# everything again (~1.5 s of a piped offline chat). Safe under concurrent writers (CPython
# writes a .pyc to a temporary name, then renames it) and across checkouts (the cache mirrors
# each source file's absolute path).
PYCACHE = Path(tempfile.gettempdir()) / f"rollchat-tests-pycache-{os.getuid()}"
# The user directories a test's user dirs live in, each under its home (see user_dirs).
XDG_DIRS = {"XDG_CONFIG_HOME": "config", "XDG_DATA_HOME": "data", "XDG_STATE_HOME": "state",
            "XDG_CACHE_HOME": "cache"}


def user_dirs(home: Path) -> dict[str, str]:
    """HOME and the XDG directories, all inside ``home``."""
    return {"HOME": str(home), **{var: str(home / sub) for var, sub in XDG_DIRS.items()}}


def user_memory(home: Path) -> Path:
    """Where a chat run with ``user_dirs(home)`` keeps its memory by default (see
    rollchat.memory.location: the user data directory, for a project with none of its own)."""
    return home / XDG_DIRS["XDG_DATA_HOME"] / "rollchat" / "memory"


def child_env(base: Mapping[str, str] | None = None, **extra: str) -> dict[str, str]:
    """The environment for a Python child process: ``base`` (default: this process's) with
    the shared bytecode cache on, and ``extra``."""
    env = dict(os.environ if base is None else base)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(PYCACHE)
    env.update(extra)
    return env


def clean_env(home: Path, **extra: str) -> dict[str, str]:
    """An environment with no API keys and the user dirs inside ``home``."""
    return _clean_env(os.environ, home, **extra)


# This process's environment before any test changed it: the fork server's (see run_piped)
_STARTING_ENV = dict(os.environ)


def _clean_env(base: Mapping[str, str], home: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in base.items()
           if not k.endswith("_API_KEY") and not k.startswith(("ROLLCHAT_", "OPENAI_",
                                                                "ANTHROPIC_"))}
    home.mkdir(parents=True, exist_ok=True)
    env.update(user_dirs(home), PROMPT_TOOLKIT_NO_CPR="1", TERM="xterm", COLUMNS="120",
               LINES="40")
    return child_env(env, **extra)  # ``extra`` last: it may turn bytecode writing off


# What a server that preloads litellm (Google ADK's LiteLlm) starts with: the price list read
# from the package, not fetched at import (a call's env says the same: tests/framework_agents.py)
LITELLM_OFFLINE = {"LITELLM_LOCAL_MODEL_COST_MAP": "True"}


def _preload_env(preload: tuple[str, ...]) -> dict[str, str]:
    return LITELLM_OFFLINE if "litellm" in preload else {}


def default_signals() -> None:
    """In the child before exec: the signal dispositions of a process started from a terminal.
    pytest run in the background by a shell ignores SIGINT, the child would inherit that, and
    Python installs no Ctrl-C handler when SIGINT starts ignored."""
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, signal.SIG_DFL)


def spawn(cwd: Path, *args: str, env: dict[str, str] | None = None, timeout: float = 30,
          forked: bool = False, preload: tuple[str, ...] | None = None,
          ) -> pexpect.spawn | ForkedTerminal:
    """``python -m rollchat ARGS`` in a pseudo-terminal of 40x120, driven by pexpect: a new
    interpreter; or, ``forked`` or given ``preload`` (a tuple: the modules the chat imports
    anyway, an agent framework's), forked by the tests' fork server (the one that has them)
    with the terminal as its controlling terminal (see ForkedTerminal) when it can: for a test
    of what the chat does with a key or a signal, not of a new interpreter's start (an import
    under way). A Ctrl-C typed reaches the terminal's foreground process group, as with
    pexpect's child: the chat's, with the subprocesses it left in it."""
    env = env or clean_env(cwd / "home")
    if forked or preload is not None:
        preload = preload or ()
        master, slave = os.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
        process = forkserver.start_terminal(
            args, cwd, env, lambda home: _clean_env(_STARTING_ENV, home, **_preload_env(preload)),
            slave, preload=preload)
        if process is not None:
            return ForkedTerminal(master, process, timeout)
        os.close(master)
    return pexpect.spawn(sys.executable, ["-m", "rollchat", *args], cwd=str(cwd), env=env,
                         encoding="utf-8", timeout=timeout, dimensions=(40, 120),
                         preexec_fn=default_signals)


class ForkedTerminal(fdspawn):  # type: ignore[misc]
    """A chat forked by the tests' fork server in a pseudo-terminal of its own (its controlling
    terminal, in a session of its own, as pexpect.spawn's child): pexpect on the master end, and
    what the tests do with pexpect.spawn's process (sendintr, kill, close, exitstatus)."""

    def __init__(self, master: int, process: forkserver.Forked, timeout: float) -> None:
        super().__init__(master, args=process.args, timeout=timeout, encoding="utf-8")
        self.process, self.pid = process, process.pid
        self.exitstatus: int | None = None
        self.signalstatus: int | None = None

    def sendintr(self) -> None:
        """Ctrl-C typed: the terminal's interrupt character (the line discipline signals)."""
        self.send(chr(termios.tcgetattr(self.child_fd)[6][termios.VINTR][0]))

    def sendcontrol(self, char: str) -> int:
        """Ctrl and a letter typed: its control character (Ctrl-C at a prompt in raw mode: a
        key, not the interrupt), as pexpect.spawn's sendcontrol sends it."""
        code = ord(char.lower())
        if not ord("a") <= code <= ord("z"):
            raise ValueError(f"sendcontrol: not a letter: {char!r}")
        return int(self.send(chr(code - ord("a") + 1)))

    def sendeof(self) -> None:
        """Ctrl-D typed: the terminal's end-of-file character."""
        self.send(chr(termios.tcgetattr(self.child_fd)[6][termios.VEOF][0]))

    def getecho(self) -> bool:
        """Whether the terminal echoes what is typed (its ECHO mode)."""
        return bool(termios.tcgetattr(self.child_fd)[3] & termios.ECHO)

    def kill(self, sig: int) -> None:
        self.process.send_signal(sig)

    def isalive(self) -> bool:
        return self.process.poll() is None

    def close(self, force: bool = True) -> None:
        """The terminal closed (a chat still running gets its hangup), the chat's end waited
        for (killed if it outlives the hangup by 10 s; ``force``: as pexpect's, unused)."""
        if self.child_fd != -1:
            super().close()
        code: int | None = None
        for kill in (False, True):
            if kill:
                self.process.kill()
            with contextlib.suppress(subprocess.TimeoutExpired, forkserver.ServerFailed,
                                     OSError):
                code = self.process.wait(30 if kill else 10)
                break
        if code is not None:
            self.exitstatus, self.signalstatus = (code, None) if code >= 0 else (None, -code)


def run_piped(cwd: Path, text: str | None, *args: str, env: dict[str, str] | None = None,
              timeout: float = 60, fresh: bool = False,
              preload: tuple[str, ...] = ()) -> subprocess.CompletedProcess[str]:
    """``python -m rollchat ARGS`` with ``text`` on its stdin (None: /dev/null), its output
    captured, killed at ``timeout`` (subprocess.TimeoutExpired). Forked by the tests' fork
    server (tests/forkserver.py: a process of its own, without paying the imports again) unless
    ``fresh`` (what the test proves is about a new interpreter), ROLLCHAT_TESTS_NO_FORKSERVER=1,
    or ``env`` differs from the server's in what is read at start: then a new interpreter.
    ``preload``: modules the child imports anyway (an agent framework's, with rollchat's
    adapter: tests/framework_agents.py ``PRELOADS``), forked from a server that has them."""
    env = env or clean_env(cwd / "home")
    if not fresh:
        done = forkserver.run(args, cwd, text, env, timeout,
                              lambda home: _clean_env(_STARTING_ENV, home, **_preload_env(preload)),
                              preload=preload)
        if done is not None:
            return done
    return subprocess.run([sys.executable, "-m", "rollchat", *args], cwd=str(cwd), input=text,
                          stdin=subprocess.DEVNULL if text is None else None,
                          capture_output=True, text=True, timeout=timeout, env=env)


def start_piped(cwd: Path, *args: str, env: dict[str, str] | None = None, stdin: bool = True,
                merge_stderr: bool = False, preload: tuple[str, ...] = (),
                module: str = "rollchat") -> subprocess.Popen[str] | forkserver.Forked:
    """``python -m rollchat ARGS`` (or ``module``: a script in ``cwd``) left running with
    pipes, as ``subprocess.Popen(...,
    stdin=PIPE (``stdin`` False: /dev/null), stdout=PIPE, stderr=PIPE (``merge_stderr``:
    STDOUT), text=True)`` starts it, with the signal dispositions of a terminal's process:
    forked by the tests' fork server, or a new interpreter as in ``run_piped``. The test may
    signal it, feed it and read it (``send_signal``, ``communicate``, the streams); it is
    reaped at the test's end however the test ended."""
    env = env or clean_env(cwd / "home")
    child = forkserver.start(args, cwd, env,
                             lambda home: _clean_env(_STARTING_ENV, home, **_preload_env(preload)),
                             stdin=stdin, merge_stderr=merge_stderr, module=module,
                             preload=preload)
    if child is not None:
        return child
    return subprocess.Popen([sys.executable, "-m", module, *args], cwd=str(cwd), env=env,
                            stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
                            stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT if merge_stderr else subprocess.PIPE,
                            text=True, preexec_fn=default_signals)


def exit_chat(child: pexpect.spawn) -> None:
    """End a chat in a terminal as the user does: ``exit`` typed at the next prompt; the chat
    ends (EOF) and exits 0. (A test still closes the child in its ``finally``, for a failure
    before this.)"""
    child.expect_exact(PROMPT)
    child.sendline("exit")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0


def write_config(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path
