"""The session's side of the model's window: asking the server for it at the start (off the
prompt's path), telling what it stated, and learning from an answer cut off by the window."""

from __future__ import annotations

from collections.abc import Callable, Generator

from rollchat.domain import Message
from rollchat.engine.core import Answer, Engine
from rollchat.events import Event, Notice
from rollchat.models.windows import SOURCE_WORDS, WindowBook, WindowLearner
from rollchat.providers.base import Provider
from rollchat.providers.window_probe import StatedWindow, WindowTeller, ask_once, probe_window
from rollchat.session.compactor import Compactor
from rollchat.session.state import SessionState

__all__ = ["WindowBook", "WindowLearner", "asked", "cut_off", "windowed"]  # for session.core


def asked(windows: WindowLearner, provider: Provider) -> WindowLearner:
    """``windows``, the server asked for its window in the background (see ask_server)."""
    ask_server(windows, provider)
    return windows


def windowed(windows: WindowLearner, provider: Provider, compactor: Compactor,
             state: SessionState, pending: Message) -> Generator[Event, None, bool]:
    """The compactor's plan before a request (``before_sending``), a window the server
    stated since the last one applied first; a server that did not answer the last question
    (down at the start) is asked again, in the background, before this request."""
    # (a provider's models endpoint that did not say is not asked again in this run)
    if windows.unanswered and windows.base_url and not isinstance(provider, WindowTeller):
        windows.unanswered = False
        windows.ask(_question(windows, provider))
    notice = stated_notice(windows)
    if notice is not None:
        yield notice
    return (yield from compactor.before_sending(state, pending))


def cut_off(windows: WindowLearner, engine: Engine, flow: Generator[Event, None, Answer],
            ) -> Generator[Event, None, Answer]:
    """``flow`` (a chat answer), then what an answer cut off by the window taught."""
    answer = yield from flow
    notice = cut_off_notice(windows, answer, engine.max_output_tokens)
    if notice is not None:
        yield notice
    return answer


def ask_server(windows: WindowLearner, provider: Provider) -> None:
    """Ask the server for the window, in the background, once per server and model in this
    process: a provider that tells it through its SDK (Anthropic's models endpoint, at any
    URL), else an OpenAI-compatible server's own endpoints (see providers/window_probe.py).
    What it states is preferred to rollchat's table and remembered (models/windows.py)."""
    teller = isinstance(provider, WindowTeller)
    if ask_once(windows.base_url, windows.model, teller=teller):
        windows.ask(_question(windows, provider))


def _question(windows: WindowLearner, provider: Provider) -> Callable[[], StatedWindow | None]:
    model, base_url = windows.model, windows.base_url
    if isinstance(provider, WindowTeller):
        return lambda: provider.stated_window(model)
    return lambda: probe_window(base_url or "", model)


def stated_notice(windows: WindowLearner) -> Notice | None:
    """A dim line when the server stated a window since the last request (now applied)."""
    stated = windows.poll()
    if stated is None:
        return None
    return Notice("detail", f"Context window: {stated.tokens:,} tokens "
                            f"({SOURCE_WORDS[stated.source]}: {stated.where}).")


def cut_off_notice(windows: WindowLearner, answer: Answer, limit: int) -> Notice | None:
    """An answer stopped before its output limit: the window was met (a guess learned)."""
    turn = answer.turn
    if turn.status != "error" or answer.error is not None or turn.tools:
        return None
    learned = windows.cut_off(turn.usage.input_tokens, turn.usage.output_tokens, limit)
    if learned is None:
        return None
    return Notice("warning", learned.line("the answer stopped where the prompt and the "
                                          "answer filled it"))


def window_source(windows: WindowLearner) -> str:
    """Where the `context` command's window figure comes from ("stated by the server")."""
    return SOURCE_WORDS[windows.source]
