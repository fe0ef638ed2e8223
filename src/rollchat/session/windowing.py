"""The session's side of the model's window: asking the server for it at the start (off the
prompt's path), telling what it stated, and learning from an answer cut off by the window."""

from __future__ import annotations

from collections.abc import Callable, Generator

from rollchat.domain import Message
from rollchat.engine.core import Answer, Engine
from rollchat.events import Event, Notice
from rollchat.models.windows import SOURCE_WORDS, WindowBook, WindowLearner
from rollchat.providers.base import Provider
from rollchat.providers.window_probe import (
    PROBE_SECONDS,
    StatedWindow,
    WindowTeller,
    ask_once,
    askable,
    probe_window,
)
from rollchat.session.compactor import Compactor
from rollchat.session.state import SessionState

# for session.core
__all__ = ["WindowBook", "WindowLearner", "ask_server", "asked", "cut_off", "windowed"]


def asked(windows: WindowLearner, provider: Provider) -> WindowLearner:
    """``windows``, the server asked for its window in the background (see ask_server)."""
    ask_server(windows, provider)
    return windows


def windowed(windows: WindowLearner, provider: Provider, compactor: Compactor,
             state: SessionState, pending: Message) -> Generator[Event, None, bool]:
    """The compactor's plan before a request (``before_sending``), a window the server
    stated since the last one applied first; a server that did not answer the last question
    (down at the start) or was found down since is asked again before this request; the
    first request, and the one after asking again, wait for the answer if it is still on its
    way (at most PROBE_SECONDS). The budget's
    warning (max_output_tokens leaves no room in this window) is told here, after the
    window's line and of the same window, once per change (see WindowLearner.to_tell)."""
    # (a provider's models endpoint that did not say is not asked again in this run)
    if windows.unanswered and windows.base_url and not isinstance(provider, WindowTeller):
        windows.ask_again(_question(windows, provider))
    windows.first_answer(PROBE_SECONDS)  # a local server answers in milliseconds
    notice = stated_notice(windows)
    if notice is not None:
        yield notice
    warning = compactor.budget.warning  # of the window just stated, if one was
    if windows.to_tell(warning) and warning is not None:
        yield Notice("warning", warning)
    return (yield from compactor.before_sending(state, pending))


def cut_off(windows: WindowLearner, engine: Engine, flow: Generator[Event, None, Answer],
            ) -> Generator[Event, None, Answer]:
    """``flow`` (a chat answer), then what an answer cut off by the window taught."""
    answer = yield from flow
    notice = cut_off_notice(windows, answer, engine.max_output_tokens)
    if notice is not None:
        yield notice
    return answer


def ask_server(windows: WindowLearner, provider: Provider, *, again: bool = False) -> None:
    """Ask the server for the window, in the background, once per server and model in this
    process (``again``: also when asked before, as after ``model NAME``: the model it serves
    may have changed since): a provider that tells it through its SDK (Anthropic's models
    endpoint, at any URL), else an OpenAI-compatible server's own endpoints (see
    providers/window_probe.py). What it states is preferred to rollchat's table and
    remembered (models/windows.py)."""
    teller = isinstance(provider, WindowTeller)
    base_url = windows.base_url
    if ask_once(base_url, windows.model, teller=teller) or (
            again and (teller or (base_url is not None and askable(base_url)))):
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
