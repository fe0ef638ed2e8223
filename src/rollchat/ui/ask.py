"""The one way rollchat asks the user in a terminal: a letter, then Enter (the prompt shows the
letters, e.g. ``[y/N, Enter]``), wrapped at words, never answered by what was typed before it."""

from __future__ import annotations

import os
import re
import shutil
import sys
import textwrap
from collections.abc import Mapping
from typing import TYPE_CHECKING, TypeVar

from rollchat.ui.sanitize import harmless

if TYPE_CHECKING:
    from prompt_toolkit.input import Input
    from prompt_toolkit.output import Output

    from rollchat.ui.render import Renderer

T = TypeVar("T")
# What was typed before a question appeared (type-ahead): never its answer, never sent on
# its own; put back, unsent, in the next ``You:`` prompt (repl.py takes it with ``take_held``).
_HELD: list[str] = []
# keys that are no text (arrows: ESC [ A; a cursor report: ESC [ 12;1 R) and control bytes
_ESCAPE = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|O.|.)?", re.S)
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
KEPT_NOTE = ("(What you typed before this question is not its answer: it is kept, unsent, "
             "in your next prompt.)")


def take_held() -> str:
    """The type-ahead put aside by the questions since the last call ("" when none)."""
    text = "\n".join(_HELD)
    _HELD.clear()
    return text


def typed_text(data: str) -> str:
    """The text in keys typed ahead: escape sequences and control keys dropped, Enter a
    newline, no newline at the end."""
    text = _ESCAPE.sub("", data.replace("\r\n", "\n").replace("\r", "\n"))
    return _CONTROL.sub("", text).strip("\n")


def _pending(fd: int) -> bytes:
    """What the terminal ``fd`` holds typed but not yet read, read without waiting. The line
    discipline is made non-canonical for the moment: a line typed without Enter is readable
    then (in canonical mode it would wait for Enter, then answer the question)."""
    import termios

    try:
        saved = termios.tcgetattr(fd)
    except (termios.error, OSError):
        return b""  # not a terminal
    attrs = termios.tcgetattr(fd)
    attrs[3] &= ~termios.ICANON
    attrs[6][termios.VMIN], attrs[6][termios.VTIME] = 0, 0
    chunks: list[bytes] = []
    try:
        termios.tcsetattr(fd, termios.TCSANOW, attrs)
        while data := os.read(fd, 4096):
            chunks.append(data)
    except OSError:  # (a non-blocking descriptor with nothing left)
        pass
    finally:
        termios.tcsetattr(fd, termios.TCSANOW, saved)
    return b"".join(chunks)


def hold_typeahead(input: Input | None = None) -> str:
    """Put aside whatever was typed before now, so a question cannot take it as its answer:
    the keys prompt_toolkit read past its last prompt, then the bytes the terminal holds.
    Returns the text put aside (also kept for the next prompt, see ``take_held``)."""
    from prompt_toolkit.input import create_input
    from prompt_toolkit.input.typeahead import get_typeahead

    try:
        source = input or create_input()
        keys = "".join(key.data for key in get_typeahead(source))
        fd = source.fileno() if input is not None else sys.stdin.fileno()
    except (OSError, ValueError):  # no terminal behind stdin (io.UnsupportedOperation too)
        return ""
    text = typed_text(keys + _pending(fd).decode("utf-8", "replace"))
    if text.strip():
        _HELD.append(text)
    return text


def wrapped(text: str, width: int) -> str:
    """``text`` wrapped at words to ``width`` columns (a word longer than a line stays whole),
    with its trailing space kept for the answer."""
    lines = textwrap.wrap(text, max(20, width - 1), break_long_words=False,
                          break_on_hyphens=False)
    return "\n".join(lines) + " "


def ask(question: str, answers: Mapping[str, T], letters: str, out: Renderer, *,
        safe: T, default: T | None = None, input: Input | None = None,
        output: Output | None = None) -> T:
    """Ask ``question`` until a word of ``answers`` (lowercase) is typed and Enter pressed;
    Enter alone answers ``default`` (None: asks again). The prompt ends with ``[letters,
    Enter]`` (the default's letter in capitals). Type-ahead is put aside first (see
    ``hold_typeahead``). Ctrl-D (end of input) answers ``safe``, the answer that changes
    nothing (no, later), saying so: a question never ends the chat. Ctrl-C raises
    KeyboardInterrupt (the caller decides what it interrupts)."""
    from prompt_toolkit import PromptSession

    if hold_typeahead(input):
        out.dim(KEPT_NOTE)
    width = output.get_size().columns if output is not None else \
        shutil.get_terminal_size().columns
    message = wrapped(harmless(f"{question.rstrip().rstrip(':')} [{letters}, Enter]:"), width)
    choices = ", ".join(dict.fromkeys(w for w in answers if len(w) == 1))
    session: PromptSession[str] = PromptSession(input=input, output=output)
    while True:
        try:
            answer = session.prompt(message).strip().lower()
        except EOFError:
            word = next((w for w, v in answers.items() if v == safe and len(w) > 1), "")
            out.dim(f"Ctrl-D: {word or safe}.")
            return safe
        if answer in answers:
            return answers[answer]
        if not answer and default is not None:
            return default
        out.dim(f"Type one of {choices}, then Enter.")
