"""A saved prompt made into the message it sends, as Claude Code does: its ``!`command``` run
first (trusted files only, Bash named in its allowed-tools, each through the approval gate) with
their output in their place, and its ``@path`` files attached under the ``attach`` rules."""

from __future__ import annotations

import os
import re
import secrets
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import Path

from rollchat.config.saved_prompts import SavedPrompt
from rollchat.config.trust import TRUST_COMMAND
from rollchat.domain import ToolCall
from rollchat.errors import UsageError
from rollchat.providers.base import ToolSpec
from rollchat.session.attach import Attachment, read_attachment
from rollchat.tools import Tool
from rollchat.tools.approval import Gate
from rollchat.tools.children import Finished, run_bounded
from rollchat.tools.hooks import MAX_OUTPUT

COMMAND_SECONDS = 60.0  # a prompt's command is killed after this (with all it started)
MAX_FILES = 20  # ``@path`` files one prompt may attach
BASH = "Bash"  # the tool name allow/deny rules and the approval question use (Claude Code's)
# a file reference: ``@`` at the start of a word, then a path (no spaces, quotes, brackets)
_REFERENCE = re.compile(r"(?<![\w@`])@([\w./~-][^\s`'\"()<>\[\]{},;]*)")
_CONTROL = re.compile(r"[;&|<>`\n]|\$\(")  # a command joining or feeding others
# Runs a command: (command, cwd, env) -> how it ended (tools/children.run_bounded's).
Runner = Callable[[str, Path, Mapping[str, str]], Finished]


@dataclass(frozen=True)
class Filled:
    """The prompt to send, the files it attaches, and the lines to show (commands run, files
    attached, references left as written)."""

    text: str
    attachments: tuple[Attachment, ...]
    lines: tuple[str, ...]


def bash_allows(command: str, rules: Sequence[str]) -> bool:
    """Whether Claude Code's ``Bash`` rules let ``command`` run: bare ``Bash`` any command;
    ``Bash(git status:*)`` one starting with ``git status``; ``Bash(npm test)`` exactly that;
    a rule with ``*`` as a glob. Only bare ``Bash`` lets a command join or feed another
    (``;``, ``&&``, ``|``, redirections, substitutions): a prefix rule is no way around it."""
    command = command.strip()
    for rule in rules:
        if rule == BASH:
            return True
        spec = rule[len(BASH) + 1:-1].strip()
        if _CONTROL.search(command):
            continue
        if spec.endswith(":*"):
            prefix = spec[:-2].strip()
            if command == prefix or command.startswith(prefix + " "):
                return True
        elif ("*" in spec and fnmatchcase(command, spec)) or command == spec:
            return True
    return False


def _run(command: str, cwd: Path, env: Mapping[str, str]) -> Finished:
    return run_bounded(command, stdin="", timeout=COMMAND_SECONDS, cwd=cwd, env=env,
                       head=MAX_OUTPUT)


def fill_prompt(prompt: SavedPrompt, args: str, *, gate: Gate, cwd: Path,
                env: Mapping[str, str] | None = None, run: Runner = _run) -> Filled:
    """``prompt`` filled with ``args``, its commands run and their output in their place, its
    ``@path`` files read. UsageError (one line, nothing run after it) when a command may not
    run: the file is a project's not trusted, its allowed-tools name no Bash rule for it, or
    the approval gate refuses it (``approval: ask`` asks; nobody to ask refuses); and when a
    referenced file breaks the ``attach`` rules (outside the project, a symlink out of it,
    too large)."""
    where = f"/{prompt.name} ({prompt.display})"
    commands = prompt.commands
    if commands and not prompt.trusted:
        raise UsageError(f"{where} not sent: it runs commands (!`{commands[0]}`) and the "
                         f"project's file is not trusted (`{TRUST_COMMAND} {prompt.display}` "
                         "once you have read it)")
    env = dict(os.environ if env is None else env)
    env.update(ROLLCHAT_PROJECT_DIR=str(cwd), CLAUDE_PROJECT_DIR=str(cwd))
    text: list[str] = []
    written: list[str] = []  # the prompt's own text and the arguments: where ``@path`` counts
    lines: list[str] = []
    for kind, piece in prompt.parts(args):
        if kind == "text":
            text.append(piece)
            written.append(piece)
            continue
        _approve(prompt, piece, gate, where)
        done = run(piece, cwd, env)
        text.append(_output(piece, done))
        status = "killed at its time limit" if done.returncode is None else \
            f"exit status {done.returncode}"
        lines.append(f"ran !`{piece}` for /{prompt.name} ({status})")
    files, more = _references("\n".join(written), cwd, where, prompt.name)
    lines += more
    return Filled("".join(text), files, tuple(lines))


def _approve(prompt: SavedPrompt, command: str, gate: Gate, where: str) -> None:
    """Through the gate as a call of the ``Bash`` tool (deny rules, allow rules, what was
    approved always, then the approval mode), once the prompt's own Bash rules allow it."""
    if not bash_allows(command, prompt.bash):
        said = ", ".join(prompt.bash) if prompt.bash else "no Bash rule"
        raise UsageError(f"{where} not sent: !`{command}` needs a Bash rule for it in "
                         f"its allowed-tools (it has {said})")
    tool = Tool(ToolSpec(BASH, f"a command of the saved prompt {where}", {}), lambda a: "",
                source=f"the saved prompt {where}")  # (ui/approve.py's PROMPT_SOURCE)
    refused = gate.check(ToolCall(f"prompt-{secrets.token_hex(4)}", BASH,
                                  {"command": command}), tool)
    if refused is not None:
        raise UsageError(f"{where} not sent: !`{command}` {refused}")


def _output(command: str, done: Finished) -> str:
    """What stands in a command's place: its output (bounded as a hook's: the head, the count
    of what was not kept, the tail); its errors and exit status when it failed."""
    out = done.out.text().rstrip("\n")
    if done.returncode == 0:
        return out
    err = done.err.text().strip()
    status = (f"killed after {COMMAND_SECONDS:g}s" if done.returncode is None
              else f"exit status {done.returncode}")
    return "\n".join(p for p in (out, err, f"[!`{command}`: {status}]") if p)


def _references(text: str, cwd: Path, where: str,
                name: str) -> tuple[tuple[Attachment, ...], tuple[str, ...]]:
    """The files ``@path`` names in ``text``, read by the ``attach`` rules (project files
    only, no symlink out of it, bounded); a name that is no file and no path is left as it
    is written (``@alice``), a path to nothing is said."""
    found: dict[str, Attachment] = {}
    lines: list[str] = []
    for m in _REFERENCE.finditer(text):
        ref = m[1].rstrip(".,:;!?")
        if not ref or ref in found:
            continue
        if not os.path.lexists(cwd / Path(ref).expanduser()):
            if "/" in ref:
                lines.append(f"@{ref} in /{name} names no file: left as written")
            continue
        if len(found) == MAX_FILES:
            raise UsageError(f"{where} not sent: it names more than {MAX_FILES} files")
        try:
            found[ref] = read_attachment(ref, cwd, None)
        except UsageError as exc:
            why = str(exc).removeprefix("attach: ")
            if "outside the project" in why and "links" not in why:
                why = "outside the project: a saved prompt attaches the project's files only"
            raise UsageError(f"{where} not sent: @{ref}: {why}") from None
        lines.append(f"attached {found[ref].describe()} for /{name}")
    return tuple(found.values()), tuple(lines)
