"""Asking the user in the terminal: may a tool call run (approval: ask; y once, a always for this
tool in this session, n no: the refusal goes back to the model), compact now (auto_compact: ask;
c now, l later, o off for this session), and the session's yes/no questions (``confirmer``)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING

from rollchat.ui.sanitize import harmless

if TYPE_CHECKING:
    from rollchat.domain import ToolCall
    from rollchat.session.core import CompactChoice
    from rollchat.tools import Tool
    from rollchat.tools.approval import Asker, Reply
    from rollchat.ui.render import Renderer

QUESTION = "Allow? [y]es once, [a]lways for this tool in this session, [n]o: "
# said once the user answers a: until when "always" holds (tools/approval.py)
ALWAYS_NOTE = ("Approved {name} for the rest of this session: clear, resume, fork and a "
               "handoff start a new one, which asks again.")


def terminal_asker(out: Renderer) -> Asker:
    """Ask in the terminal, showing the call's full arguments first."""

    def ask(call: ToolCall, tool: Tool) -> Reply | None:
        from prompt_toolkit import prompt

        streaming = out.suspend_answer()
        try:
            args = json.dumps(dict(call.arguments), ensure_ascii=False, indent=2)
            out.line((f"The agent wants to run {call.name}", "bold yellow"),
                     (f" ({tool.source})" if tool.source != "builtin" else "", "dim"))
            for line in args.splitlines():
                out.line(("  " + line, ""))
            while True:
                answer = prompt(harmless(QUESTION)).strip().lower()
                if answer in ("y", "yes", "a", "always", "n", "no"):
                    reply: Reply = "a" if answer.startswith("a") else (
                        "y" if answer.startswith("y") else "n")
                    if reply == "a":
                        out.dim(ALWAYS_NOTE.format(name=call.name))
                    return reply
                out.dim("Type y, a or n.")
        finally:
            if streaming:
                out.resume_answer()

    return ask


def piped_asker(*, yes: bool) -> Asker:
    """No terminal: --yes approves; otherwise nobody can be asked, so the call is refused (the
    one line saying so is the refused call's result line)."""

    def ask(call: ToolCall, tool: Tool) -> Reply | None:
        return "y" if yes else None

    return ask


_COMPACT_ANSWERS: dict[str, CompactChoice] = {
    "c": "compact", "compact": "compact", "l": "later", "later": "later", "o": "off",
    "off": "off"}


def terminal_compact_asker(out: Renderer) -> Callable[[str], CompactChoice | None]:
    """Ask the one-line compaction question at the prompt. Ctrl-C or Ctrl-D there means
    later: the message the user typed is sent either way."""

    def ask(question: str) -> CompactChoice | None:
        from prompt_toolkit import prompt

        while True:
            try:
                answer = prompt(harmless(question)).strip().lower()
            except (KeyboardInterrupt, EOFError):
                return "later"
            if answer in _COMPACT_ANSWERS:
                return _COMPACT_ANSWERS[answer]
            out.dim("Type c (compact now), l (later) or o (off for this session).")

    return ask


def confirmer(out: Renderer, *, yes: bool, interactive: bool) -> Callable[[str], bool]:
    """The session's yes/no question (a ``... Continue? (y/n) `` that names another agent or
    session): yes at once with --yes; without a terminal, refused with the reason said;
    else asked in the terminal."""

    def confirm(question: str) -> bool:
        if yes:
            return True
        if not interactive:
            out.error(question.replace("Continue? (y/n) ", "").strip()
                      + " Refused without a terminal; pass --yes to continue anyway.")
            return False
        from prompt_toolkit.shortcuts import confirm as ask

        return bool(ask(harmless(question.replace(" (y/n) ", ""))))

    return confirm
