"""``copy``: the last answer, one of its code blocks, or the whole session as markdown, put on
the clipboard (see ui/clipboard.py), saying which way it went and how many characters."""

from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING

from rollchat.domain import Turn
from rollchat.errors import UsageError
from rollchat.text.wording import plural
from rollchat.ui import clipboard

if TYPE_CHECKING:
    from rollchat.ui.app import ChatApp

USAGE = "usage: copy [code [N] | all] (the last answer, its last or Nth code block, the session)"
# a fenced code block: ``` or ~~~ (3 or more), its info string, its lines, the same fence
_FENCE = re.compile(r"^ {0,3}(?P<fence>`{3,}|~{3,})[^\n]*\n(?P<code>.*?)(?:^ {0,3}(?P=fence)"
                    r"[`~]*[ \t]*$|\Z)", re.MULTILINE | re.DOTALL)


def code_blocks(text: str) -> list[str]:
    """The fenced code blocks of markdown ``text``, their code only, in order (an unclosed
    last fence runs to the end, as markdown reads it)."""
    return [m["code"].removesuffix("\n") for m in _FENCE.finditer(text)]


def session_markdown(turns: list[Turn], agent: str) -> str:
    """The conversation as markdown: each message and answer under who said it."""
    parts: list[str] = []
    for turn in turns:
        if turn.kind == "restored":
            parts.append(f"*{turn.context}*" if turn.context else "*Resumed*")
        elif turn.kind == "handoff":
            parts.append(f"*{turn.context}*")
            continue
        elif turn.user:
            parts.append(f"**You:** {turn.user}")
        if turn.assistant:
            parts.append(f"**{agent}:** {turn.assistant}")
    return "\n\n".join(parts) + "\n" if parts else ""


def _chosen(app: ChatApp, arg: str) -> tuple[str, str]:
    """(what is copied, in words; its text) for ``copy ARG``. UsageError when there is
    nothing of that kind."""
    words = arg.lower().split()
    state = app.session.state
    if words == ["all"]:
        text = session_markdown(list(state.turns), app.session.agent.name)
        if not text:
            raise UsageError("nothing to copy: this session has no messages yet")
        return "the session as markdown", text
    answers = [t.assistant for t in state.turns if t.assistant and t.kind != "handoff"]
    if not words:
        if not answers:
            raise UsageError("nothing to copy: no answer yet in this session")
        return "the last answer", answers[-1]
    if words[0] != "code" or len(words) > 2 or (len(words) == 2 and not (
            words[1].isascii() and words[1].isdigit() and int(words[1]) > 0)):
        raise UsageError(USAGE)
    blocks = code_blocks(answers[-1]) if answers else []
    if not blocks:
        raise UsageError("nothing to copy: the last answer has no code block")
    if len(words) == 1:
        return (f"code block {len(blocks)} of {len(blocks)}" if len(blocks) > 1 else
                "the code block"), blocks[-1]
    number = int(words[1])
    if number > len(blocks):
        raise UsageError(f"the last answer has {plural(len(blocks), 'code block')}: "
                         f"copy code 1..{len(blocks)}")
    return f"code block {number} of {len(blocks)}", blocks[number - 1]


def run_copy(app: ChatApp, arg: str) -> bool:
    what, text = _chosen(app, arg)
    env = os.environ
    went, failed = clipboard.copy(
        text, env=env, terminal=app.out.control if app.out.interactive else None,
        command=clipboard.local_command(env))
    size = plural(len(text), "character")
    for line in failed:
        app.out.warn(f"the clipboard command failed ({line})")
    if not went:
        app.out.error(f"{what} ({size}) not copied: no terminal to send OSC 52 to and no "
                      "clipboard command (wl-copy, xclip, xsel, pbcopy) that worked")
        return False
    app.out.info(f"Copied {what} ({size}) through {' and '.join(went)}.")
    if went == ["the terminal (OSC 52)"]:
        app.out.dim("The terminal must allow OSC 52 (in tmux: set -g set-clipboard on).")
    return False
