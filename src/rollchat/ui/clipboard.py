"""The clipboard, two ways: the terminal's OSC 52 sequence (works over SSH; inside tmux sent
plain for ``set-clipboard on`` and wrapped for ``allow-passthrough on``) and a local clipboard
command where one exists (wl-copy, xclip, xsel, pbcopy)."""

from __future__ import annotations

import base64
import shutil
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence

COMMAND_SECONDS = 5.0  # a clipboard command that takes longer is given up on


def osc52(text: str) -> str:
    """The OSC 52 sequence that puts ``text`` on the clipboard (``c``), BEL-terminated."""
    return f"\x1b]52;c;{base64.b64encode(text.encode('utf-8')).decode('ascii')}\x07"


def tmux_passthrough(sequence: str) -> str:
    """``sequence`` wrapped in tmux's DCS passthrough (every ESC doubled), which tmux hands to
    the outer terminal when ``allow-passthrough`` is on (and drops silently when it is off)."""
    return "\x1bPtmux;" + sequence.replace("\x1b", "\x1b\x1b") + "\x1b\\"


def terminal_bytes(text: str, env: Mapping[str, str]) -> str:
    """What to write to the terminal: OSC 52, and inside tmux ($TMUX) the same again wrapped
    for passthrough (tmux takes the plain one itself with ``set-clipboard on``)."""
    sequence = osc52(text)
    return sequence + tmux_passthrough(sequence) if env.get("TMUX") else sequence


def local_command(env: Mapping[str, str], platform: str = sys.platform,
                  which: Callable[[str], str | None] = shutil.which) -> list[str] | None:
    """The local clipboard command for this desktop, or None when there is none (an SSH
    session without a display): pbcopy on macOS, wl-copy on Wayland, xclip or xsel on X."""
    candidates: list[list[str]] = []
    if platform == "darwin":
        candidates.append(["pbcopy"])
    if env.get("WAYLAND_DISPLAY"):
        candidates.append(["wl-copy"])
    if env.get("DISPLAY"):
        candidates += [["xclip", "-selection", "clipboard"], ["xsel", "--clipboard", "--input"]]
    for command in candidates:
        found = which(command[0])
        if found is not None:
            return [found, *command[1:]]
    return None


def run_local(command: Sequence[str], text: str) -> str | None:
    """Give ``text`` to the clipboard ``command``: None when it took it, else why not. Its
    output goes nowhere (xclip and wl-copy stay behind to serve the clipboard: waiting for
    their output would wait for ever)."""
    try:
        done = subprocess.run(list(command), input=text.encode("utf-8"),
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              timeout=COMMAND_SECONDS, check=False)
    except subprocess.TimeoutExpired:
        return f"did not finish in {COMMAND_SECONDS:.0f}s"
    except OSError as exc:
        return exc.strerror or str(exc)
    return None if done.returncode == 0 else f"exit status {done.returncode}"


def copy(text: str, *, env: Mapping[str, str], terminal: Callable[[str], None] | None,
         command: Sequence[str] | None) -> tuple[list[str], list[str]]:
    """Put ``text`` on the clipboard through the ``terminal`` (a writer to it; None: no
    terminal, as in piped runs) and the local ``command``: the ways it went, and what failed."""
    went: list[str] = []
    failed: list[str] = []
    if terminal is not None:
        terminal(terminal_bytes(text, env))
        went.append("the terminal (OSC 52)")
    if command is not None:
        name = command[0].rsplit("/", 1)[-1]
        why = run_local(command, text)
        if why is None:
            went.append(name)
        else:
            failed.append(f"{name}: {why}")
    return went, failed
