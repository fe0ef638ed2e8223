"""One owner of "now" for a session: the engine's clock dates its start, its turns, the
restoration a resumed child gets and the child's start (a session lived at a given date says
that date, not the machine's)."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta, timezone

from rollchat.config.settings import AgentConfig, Config, SessionConfig
from rollchat.engine.core import EngineSettings
from rollchat.providers.base import RetryPolicy
from rollchat.session.core import Session
from rollchat.storage.store import InMemoryStore, Store
from tests.session.test_session import SYSTEM, Recording

MAY_8 = datetime(2023, 5, 8, 13, 56, tzinfo=timezone(timedelta(hours=2)))
MAY_25 = datetime(2023, 5, 25, 9, 30, tzinfo=timezone(timedelta(hours=2)))


def at(when: datetime, store: Store, provider: Recording) -> Session:
    agent = AgentConfig(key="assistant", name="Assistant", provider="offline",
                        system_prompt=SYSTEM, max_output_tokens=512)
    config = Config(agents={"assistant": agent}, session=replace(SessionConfig()))
    engine = EngineSettings(provider, model="offline", system=SYSTEM, max_output_tokens=512,
                            temperature=None, retry=RetryPolicy(0, 0.0, 0.0),
                            clock=lambda: when)
    return Session(config=config, agent=agent, engine_settings=engine,
                   summary_provider=provider, summary_model="offline", provider_name="offline",
                   store=store, confirm=lambda question: False, context_window=128_000)


def test_a_session_lived_at_a_date_starts_there_and_its_child_is_told_that_date() -> None:
    store, provider = InMemoryStore(), Recording()
    first = at(MAY_8, store, provider)
    assert first.state.started == MAY_8
    list(first.turn("We adopted a cat named Luna today."))
    list(first.exit())
    parent = first.state.session_id
    assert parent is not None
    (info,) = [i for i in store.list_sessions().sessions if i.session_id == parent]
    assert info.date.replace(tzinfo=None) == MAY_8.replace(tzinfo=None)
    second = at(MAY_25, store, provider)
    list(second.resume(parent))
    assert second.state.started == MAY_25
    sent = "\n".join(m.content for r in provider.requests for m in r.messages
                     if isinstance(m.content, str))
    assert "continuing a previous conversation from 2023-05-08 13:56" in sent
