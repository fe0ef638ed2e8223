"""A session another process still has open is never written here: resuming it says so in one
line and continues in a fork (a new child made from its summary, whose header says "Forked
From"), or refuses with the reason (``Forking``, ``check_open``); and resuming another agent's
session asks first (``agent_change``). Who writes a session: session/recorder.py."""

from __future__ import annotations

from collections.abc import Callable, Generator
from dataclasses import dataclass

from rollchat.config.settings import AgentConfig
from rollchat.events import Event, Notice
from rollchat.storage.locks import SessionBusyError, busy_message
from rollchat.storage.store import SessionInfo, Store


def _in_chat(info: SessionInfo) -> str:
    return f"'fork {info.number}'"


@dataclass(frozen=True)
class Forking:
    """How a resume treats a session open in another process, and how the user asks for a
    fork where rollchat runs: a chat's line (``fork N``), a one-shot run's option."""

    # why a resume does not fork a session open elsewhere (given its id); None: it forks
    refusal: Callable[[str], str] | None = None
    # what the user types to fork the saved session ``info`` (an older state of a chain)
    words: Callable[[SessionInfo], str] = _in_chat


IN_CHAT = Forking()


def check_open(store: Store, info: SessionInfo, refusal: Callable[[str], str] | None,
               asked: bool = False) -> Generator[Event, None, bool]:
    """True when ``info``'s session is open in another process and the resume goes on as a
    fork (told in one line, unless the user ``asked`` for a fork); SessionBusyError when
    forks are refused (``refusal`` says why)."""
    if not store.open_elsewhere(info.session_id):
        return False
    if asked:
        return True
    if refusal is not None:
        raise SessionBusyError(f"{busy_message(info.session_id)}; not resumed: "
                               f"{refusal(info.session_id)}")
    yield Notice("warning", f"Session {info.session_id} is open in another rollchat process: "
                            "continuing in a fork, a new session from its summary (its file is "
                            "left to that process).")
    return True


def agent_change(info: SessionInfo, agent: AgentConfig) -> str | None:
    """Why resuming ``info`` with ``agent`` needs the user's yes (another agent, another agent
    file, or another tool set: the seed's edge case), as a question; None when it does not."""
    if info.agent != agent.name or (info.agent_path != agent.agent_path and not (
            info.agent_path.startswith("config:") and agent.file is None)):
        was = info.agent_path if not info.agent_path.startswith("config:") else ""
        now = agent.agent_path if agent.file is not None else ""
        return (f"Session {info.session_id} was with agent {info.agent!r}"
                f"{f' ({was})' if was else ''}, not {agent.name!r}{f' ({now})' if now else ''}"
                ". Continue? (y/n) ")
    if info.tools is not None and agent.tool_names is not None and \
            sorted(info.tools) != sorted(agent.tool_names):
        return (f"Session {info.session_id} was with the tools "
                f"{', '.join(info.tools) or '(none)'}; the agent now has "
                f"{', '.join(agent.tool_names) or '(none)'}. Continue? (y/n) ")
    return None
