"""The part of a turn's system prompt an adapter adds to a framework agent's own instructions
(the framework sends those itself): project instructions, the memory profile."""

from __future__ import annotations


def extra_instructions(system: str, own: str) -> str:
    """``system`` (rollchat's prompt: the agent's own instructions first) less ``own``."""
    if own and system.startswith(own):
        return system[len(own):].strip()
    return system
