"""OpenAI's ``prompt_cache_key``: one key per conversation chain, sent by the real openai SDK
(rollchat run as a subprocess) to api.openai.com on Chat Completions and on the Responses API
(its ``responses.compact`` too); identical across the turns, the summary request, the
restoration and the child's turns; another for another chat; the same from every process that
resumes a chain; never sent to another server. api.openai.com is reached through HTTP_PROXY,
which the SDK's httpx honours: the wire servers of tests/wire_servers.py and
tests/wire_responses.py answer as the proxy, so nothing leaves the machine."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from rollchat.compaction.prefixed import OPENING
from rollchat.session.state import chain_key
from rollchat.storage.transcript import SUMMARY_END, SUMMARY_START, parse
from tests.e2e import clean_env, run_piped, write_config
from tests.wire_responses import Answer, ResponsesServer, responses_server, said
from tests.wire_servers import Reply, WireServer, last_user_text, openai_server, text

__all__ = ["openai_server", "responses_server"]  # the fixtures, imported for pytest

OFFICIAL = "http://api.openai.com/v1"
SUMMARY = (f"{SUMMARY_START}\n**Background Context:** Initial session.\n\n"
           "**Current Session Summary:**\n**Topics Discussed:**\n- the queue for jobs\n\n"
           "**Decisions Made:**\n- use rabbitmq\n\n**Pending:**\n- benchmark the consumer\n"
           f"{SUMMARY_END}")
KEY = re.compile(r"rollchat-[0-9a-f]{32}")
CHAT = "which queue for jobs?\nand the retries?\ncompact\nwhat was pending?\n"


def config(tmp_path: Path, engine: str = "rollchat") -> str:
    return str(write_config(tmp_path / "rollchat.yml", f"""\
agents:
  assistant:
    name: Assistant
    system_prompt: You are the cache key test agent.
    compaction:
      engine: {engine}
retry:
  max_retries: 0
memory:
  enabled: false
"""))


def rollchat(root: str, tmp_path: Path, lines: str, provider: str, *args: str,
             base_url: str = OFFICIAL, engine: str = "rollchat") -> str:
    """A piped chat against ``base_url``; requests to api.openai.com go through the proxy
    ``root`` (the wire server)."""
    env = clean_env(tmp_path / "home", OPENAI_API_KEY="sk-test", HTTP_PROXY=root,
                    http_proxy=root)
    for name in ("NO_PROXY", "no_proxy", "ALL_PROXY", "all_proxy"):
        env.pop(name, None)
    done = run_piped(tmp_path, lines, "--config", config(tmp_path, engine), "--provider",
                     provider, "--model", "gpt-5", "--base-url", base_url, *args, env=env,
                     timeout=240)  # a ceiling for a loaded machine, never waited out
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def chat_reply(body: dict[str, Any]) -> Reply:
    return text(SUMMARY if last_user_text(body).startswith(OPENING) else "noted")


def responses_reply(body: dict[str, Any]) -> Answer:
    typed = wire_text(body)
    return said(SUMMARY if typed.startswith(OPENING) else "noted")


def wire_text(body: dict[str, Any]) -> str:
    from tests.wire_responses import last_user_text as responses_text

    return responses_text(body)


def keys(bodies: list[dict[str, Any]]) -> list[str | None]:
    return [b.get("prompt_cache_key") for b in bodies]


def one_key(bodies: list[dict[str, Any]]) -> str:
    """The key every one of ``bodies`` carries (there is one, and it is a hash)."""
    found = set(keys(bodies))
    assert len(found) == 1, keys(bodies)
    key = found.pop()
    assert key is not None and KEY.fullmatch(key), key
    return key


def root_of(server: WireServer | ResponsesServer) -> str:
    return server.url.removesuffix("/v1")


def chat_bodies(server: WireServer) -> list[dict[str, Any]]:
    return server.bodies


def summary_requests(bodies: list[dict[str, Any]], items: str = "messages") -> list[int]:
    return [i for i, b in enumerate(bodies)
            if OPENING in json.dumps(b[items][-1], ensure_ascii=False)]


def test_chat_completions_one_key_per_chain_at_openai_only(openai_server: WireServer,
                                                           tmp_path: Path) -> None:
    openai_server.responder = chat_reply
    root = root_of(openai_server)
    rollchat(root, tmp_path / "a", CHAT, "openai")
    first = chat_bodies(openai_server)
    # two turns, the summary from the cached prefix, the restoration, the child's turn, the
    # child's summary at the end
    assert len(first) == 6 and summary_requests(first) == [2, 5], [b["messages"][-1]
                                                                   for b in first]
    key = one_key(first)
    assert "assistant" not in key and str(tmp_path) not in key

    openai_server.requests.clear()
    rollchat(root, tmp_path / "b", CHAT, "openai")
    assert one_key(chat_bodies(openai_server)) != key  # another chat, another key

    openai_server.requests.clear()  # an OpenAI-compatible server is never sent it
    rollchat(root, tmp_path / "c", CHAT, "openai", base_url=openai_server.url)
    assert len(openai_server.bodies) == 6 and keys(openai_server.bodies) == [None] * 6


def test_a_resumed_chain_has_its_first_sessions_key_in_every_process(
        openai_server: WireServer, tmp_path: Path) -> None:
    openai_server.responder = chat_reply
    root = root_of(openai_server)
    rollchat(root, tmp_path, CHAT, "openai")
    headers = [parse(p.read_text(encoding="utf-8")).header
               for p in (tmp_path / "sessions").glob("*.md")]
    assert len(headers) == 2  # the first session and its compaction's child
    first_id = next(h.session_id for h in headers if h.resumed_from is None)
    openai_server.requests.clear()
    rollchat(root, tmp_path, "where were we?\n", "openai", "-c")
    resumed = one_key(chat_bodies(openai_server))
    openai_server.requests.clear()
    rollchat(root, tmp_path, "and now?\n", "openai", "-c")
    assert one_key(chat_bodies(openai_server)) == resumed == chain_key(first_id)


@pytest.mark.parametrize("engine", ["rollchat", "provider"])
def test_responses_one_key_per_chain_compact_included(responses_server: ResponsesServer,
                                                      tmp_path: Path, engine: str) -> None:
    responses_server.responder = responses_reply
    root = root_of(responses_server)
    rollchat(root, tmp_path / "a", CHAT, "openai-responses", engine=engine)
    first = responses_server.bodies()
    compacts = responses_server.bodies("/v1/responses/compact")
    # engine provider at api.openai.com compacts inside responses.create (context_management,
    # the chat's request) before each summary request: the compaction, the exit's
    compacting = [i for i, b in enumerate(first) if "context_management" in b]
    assert compacting == ([2, 6] if engine == "provider" else [])
    assert summary_requests(first, "input") == ([3, 7] if engine == "provider" else [2, 5])
    assert compacts == []  # responses.compact: only where context_management is not sent
    key = one_key(first + compacts)

    responses_server.requests.clear()
    rollchat(root, tmp_path / "b", CHAT, "openai-responses", engine=engine)
    assert one_key(responses_server.bodies()) != key

    responses_server.requests.clear()
    rollchat(root, tmp_path / "c", CHAT, "openai-responses", base_url=responses_server.url,
             engine=engine)
    compacts = responses_server.bodies("/v1/responses/compact")
    assert len(compacts) == (2 if engine == "provider" else 0)  # a compatible server's
    sent = responses_server.bodies() + compacts
    assert len(sent) >= 5 and set(keys(sent)) == {None}
