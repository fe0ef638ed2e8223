"""Asking the user in the terminal, each as ui/ask.py asks (a letter, then Enter): may a tool
call run (approval: ask; y once, a always for this tool in this session, n no: the refusal goes
back to the model), compact now (auto_compact: ask; c now, l later, o off for this session),
and the session's yes/no questions (``confirmer``)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import TYPE_CHECKING

from rollchat.ui.ask import ask

if TYPE_CHECKING:
    from rollchat.domain import ToolCall
    from rollchat.session.core import CompactChoice
    from rollchat.tools import Tool
    from rollchat.tools.approval import Asker, Reply
    from rollchat.ui.render import Renderer

PROMPT_SOURCE = "the saved prompt "  # a tool source that is a saved prompt's (saved_prompt.py)
QUESTION = "Allow? y: yes, once; a: always for this tool in this session; n: no"
_APPROVAL: dict[str, Reply] = {"y": "y", "yes": "y", "a": "a", "always": "a", "n": "n",
                               "no": "n"}
# said once the user answers a: until when "always" holds (tools/approval.py)
ALWAYS_NOTE = ("Approved {name} for the rest of this session: clear, resume, fork and a "
               "handoff start a new one, which asks again.")


def terminal_asker(out: Renderer) -> Asker:
    """Ask in the terminal, showing the call's full arguments first."""

    def ask_tool(call: ToolCall, tool: Tool) -> Reply | None:
        streaming = out.suspend_answer()
        try:
            args = json.dumps(dict(call.arguments), ensure_ascii=False, indent=2)
            if tool.source.startswith(PROMPT_SOURCE):  # a saved prompt's !`command`
                out.line((f"{tool.source[0].upper()}{tool.source[1:]} runs a command "
                          f"({call.name})", "bold yellow"))
            else:
                out.line((f"The agent wants to run {call.name}", "bold yellow"),
                         (f" ({tool.source})" if tool.source != "builtin" else "", "dim"))
            for line in args.splitlines():
                out.line(("  " + line, ""))
            reply = ask(QUESTION, _APPROVAL, "y/a/n", out, safe="n")
            if reply == "a":
                out.dim(ALWAYS_NOTE.format(name=call.name))
            return reply
        finally:
            if streaming:
                out.resume_answer()

    return ask_tool


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

    def ask_compact(question: str) -> CompactChoice | None:
        try:
            return ask(question, _COMPACT_ANSWERS, "c/l/o", out, safe="later")
        except KeyboardInterrupt:
            return "later"

    return ask_compact


# how the session layer ends a yes/no question: (y/n) no by default, (Y/n) yes by default
_SUFFIX = re.compile(r"\s*(?:Continue\?\s*)?\((y/n|Y/n)\)\s*$")
_YES_NO = {"y": True, "yes": True, "n": False, "no": False}


def confirmer(out: Renderer, *, yes: bool, interactive: bool) -> Callable[[str], bool]:
    """The session's yes/no question (``... Continue? (y/n) ``, no by default, or ``...?
    (Y/n) ``, yes by default): yes at once with --yes; without a terminal, the default: a
    (y/n) question refused with the reason said, a (Y/n) one answered yes, saying so; else
    asked in the terminal (Enter alone and Ctrl-D: the default, the answer given without a
    terminal)."""

    def confirm(question: str) -> bool:
        if yes:
            return True
        found = _SUFFIX.search(question)
        default = found is not None and found[1] == "Y/n"
        said = question[:found.start()] if found else question.rstrip()
        if not interactive:
            if default:
                out.info(f"{said} Yes (the default without a terminal).")
            else:
                out.error(f"{said} Refused without a terminal; pass --yes to continue anyway.")
            return default
        asked = said if default or not (found and "Continue" in found[0]) else \
            f"{said} Continue?"
        answer: bool = ask(asked, _YES_NO, "Y/n" if default else "y/N", out, safe=default,
                           default=default)
        return answer

    return confirm


def yes_or_no(question: str, out: Renderer) -> bool:
    """A command's yes/no question in the terminal, no by default: Enter alone and Ctrl-D
    answer no; Ctrl-C raises KeyboardInterrupt."""
    answer: bool = ask(question, _YES_NO, "y/N", out, safe=False, default=False)
    return answer
