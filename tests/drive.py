"""Driving the event generators of the engine and the session core from tests."""

from __future__ import annotations

from collections.abc import Callable, Generator
from typing import Any, TypeVar

from rollchat.domain import Turn
from rollchat.engine.core import Answer
from rollchat.events import Event
from rollchat.session.core import Session
from rollchat.ui.app import ChatApp
from rollchat.ui.render import Renderer

T = TypeVar("T")


def drain(flow: Generator[Event, None, T], on_event: Callable[[Event], Any] | None = None) -> T:
    """Run ``flow`` to the end, handing each event to ``on_event``; its return value.

    A KeyboardInterrupt raised by ``on_event`` is thrown into the flow where it stopped, as
    the terminal front end does with a Ctrl-C while it draws."""
    resume: Callable[[], Event] = flow.__next__
    while True:
        try:
            event = resume()
        except StopIteration as stop:
            return stop.value  # type: ignore[no-any-return]
        resume = flow.__next__
        if on_event is not None:
            try:
                on_event(event)
            except KeyboardInterrupt:
                resume = _thrower(flow)


def _thrower(flow: Generator[Event, None, Any]) -> Callable[[], Event]:
    def throw() -> Event:
        return flow.throw(KeyboardInterrupt())
    return throw


def turn(flow: Generator[Event, None, Answer],
         on_event: Callable[[Event], Any] | None = None) -> Turn:
    """The finished turn of an engine call (``engine.chat`` / ``engine.restore``)."""
    return drain(flow, on_event).turn


def chat_app(*, renderer: Renderer, **session: Any) -> ChatApp:
    """A Session (built from ``session``'s keyword arguments) shown through a ChatApp, wired
    the way ``cli.start_chat`` wires them."""
    return ChatApp(Session(**session), renderer)


def tapped(flow: Generator[Event, None, None], sink: list[Event],
           watch: Callable[[Event], Any] | None = None) -> Generator[Event, None, None]:
    """``flow``, with every event also appended to ``sink`` (to assert on what was drawn) and
    shown to ``watch`` (which runs while the flow waits, before the event is drawn)."""
    try:
        while True:
            event = next(flow)
            sink.append(event)
            if watch is not None:
                watch(event)
            try:
                yield event
            except KeyboardInterrupt:  # handed on to the flow, as the front end does
                sink.append(flow.throw(KeyboardInterrupt()))
                yield sink[-1]
    except StopIteration:
        return
