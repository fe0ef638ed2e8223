"""The signal that a long turn ended (``ui.notify_after_seconds``): a terminal bell, and a desktop
notification where the terminal is known to show one (OSC 9: iTerm2; OSC 777: WezTerm, Ghostty,
foot, rxvt; OSC 99: kitty), wrapped for tmux's passthrough inside tmux."""

from __future__ import annotations

from collections.abc import Mapping

from rollchat.ui.clipboard import tmux_passthrough

BEL = "\x07"
TITLE = "rollchat"


def notification(env: Mapping[str, str], message: str) -> tuple[str, str | None]:
    """The desktop notification sequence for this terminal (None: none known) and its name."""
    program = env.get("TERM_PROGRAM", "")
    term = env.get("TERM", "")
    text = "".join(c for c in message if c.isprintable() and c not in ";\x1b\x07")
    if program == "iTerm.app" or env.get("LC_TERMINAL") == "iTerm2":
        return f"\x1b]9;{text}\x07", "OSC 9"
    if program in ("WezTerm", "ghostty") or term.startswith(("foot", "rxvt")):
        return f"\x1b]777;notify;{TITLE};{text}\x07", "OSC 777"
    if env.get("KITTY_WINDOW_ID"):
        return f"\x1b]99;;{text}\x1b\\", "OSC 99"
    return "", None


def bell_bytes(env: Mapping[str, str], message: str) -> str:
    """What to write when a long turn ends: the notification (passed through tmux when inside
    it), then the bell, which tmux itself turns into its own bell (``bell-action``)."""
    sequence, _ = notification(env, message)
    if sequence and env.get("TMUX"):
        sequence = tmux_passthrough(sequence)
    return sequence + BEL


def took(seconds: float) -> str:
    """``42s``, ``3m 05s``: how long the turn took, for the notification."""
    whole = int(seconds)
    return f"{whole}s" if whole < 60 else f"{whole // 60}m {whole % 60:02d}s"
