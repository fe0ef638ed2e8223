"""A real llama-server's thinking answers, replayed (issue 28.6 and 28.8): SmolLM2 made to open
its answer with ``<think>`` by a per-request grammar, served once without a reasoning parser
(the tags in ``content``, cut over tokens) and once with one (``reasoning_content`` deltas,
then ``content``); recorded by tests/fixtures/real/llama_cpp/record_thinking.py (PROVENANCE.md
there). Read through the real openai SDK, then driven through rollchat's chat as a user does."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pexpect

from rollchat.domain import Message
from rollchat.engine.thinking import Split
from rollchat.providers.base import ChatRequest, Done, TextDelta, ThinkingDelta
from rollchat.providers.openai import OpenAIProvider
from rollchat.storage.transcript import parse
from rollchat.text.thinking import without_thinking
from tests.e2e import PROMPT, clean_env, run_piped, spawn
from tests.wire_local import LocalServer, local_server, recorded, sse_answer
from tests.wire_servers import last_user_text

DIM_ITALIC = "\x1b[2;3m"  # rich's dim italic
MODELS = {"GET /v1/models": recorded("models.http"), "GET /props": recorded("props.http")}


def message_of(name: str) -> dict[str, Any]:
    """The whole (not streamed) answer's message."""
    body = json.loads(recorded(name).split(b"\r\n\r\n", 1)[1])
    message: dict[str, Any] = body["choices"][0]["message"]
    return message


# What the server's own reasoning parser made of the very tokens the other recordings hold.
PARSED = message_of("reasoning_whole.http")
THOUGHT, ANSWER = PARSED["reasoning_content"].strip(), PARSED["content"]


def replay(name: str) -> list[Any]:
    """The recorded stream through the real openai SDK and rollchat's provider."""
    with local_server(chat=lambda body: recorded(name)) as server:
        provider = OpenAIProvider("smollm2", api_key=None, base_url=server.url, timeout=30)
        request = ChatRequest(model="smollm2", system="",
                              messages=(Message("user", "Is 7 a prime number?"),),
                              max_output_tokens=160)
        return list(provider.stream(request))


def divided(events: list[Any]) -> tuple[str, str, list[Any]]:
    """The stream divided as the engine divides it: (thinking, answer, what is drawn)."""
    text: list[str] = []
    thought: list[str] = []
    split = Split(text, thought)
    drawn: list[Any] = []
    for event in events:
        if isinstance(event, TextDelta):
            drawn += split.text(event.text)
        elif isinstance(event, ThinkingDelta):
            drawn += split.thinking(event.text)
    drawn += split.end("")
    return "".join(thought).strip(), "".join(text), drawn


def test_the_recordings_hold_one_answer_two_ways() -> None:
    """The grammar and temperature 0 gave the same tokens with and without the parser: the
    parsed message is the oracle for rollchat's own splitting of the raw tags."""
    raw = message_of("think_whole.http")["content"]
    assert raw.startswith("<think>\n") and "\n</think>\n\n" in raw
    assert without_thinking(raw) == ANSWER
    assert THOUGHT and ANSWER and THOUGHT not in ANSWER


def test_think_tags_cut_over_tokens_are_split_as_the_server_parses_them() -> None:
    events = replay("think_stream.http")
    pieces = [e.text for e in events if isinstance(e, TextDelta)]
    assert pieces[:6] == ["<", "t", "hi", "n", "k", ">"]  # the tag as the tokens cut it
    assert "".join(pieces) == message_of("think_whole.http")["content"]
    thought, answer, drawn = divided(events)
    assert (thought, answer) == (THOUGHT, ANSWER)
    assert not any("<" in e.text for e in drawn if isinstance(e, TextDelta))
    assert events[-1] == Done("end")


def test_reasoning_content_deltas_then_content() -> None:
    events = replay("reasoning_stream.http")
    thinking = [e for e in events if isinstance(e, ThinkingDelta)]
    answer = [e for e in events if isinstance(e, TextDelta)]
    assert "".join(e.text for e in thinking) == PARSED["reasoning_content"]
    assert events.index(thinking[-1]) < events.index(answer[0])  # all thinking came first
    assert divided(events)[:2] == (THOUGHT, ANSWER)


def test_thinking_cut_off_at_the_output_limit_stays_thinking() -> None:
    """max_tokens reached inside the block: the tag never closes (no parser) or no content
    ever comes (parser); either way what came is thinking and no answer."""
    for name in ("think_stream_length.http", "reasoning_stream_length.http"):
        events = replay(name)
        assert events[-1] == Done("max_tokens")
        thought, answer, _drawn = divided(events)
        assert answer == "" and thought and THOUGHT.startswith(thought), name


def chosen(body: dict[str, Any]) -> bytes:
    """The user's two questions get the recorded answers; summaries at exit a plain one."""
    typed = last_user_text(body)
    if typed == "is 7 prime?":
        return recorded("think_stream.http")
    if typed == "and again?":
        return recorded("reasoning_stream.http")
    if typed == "story?":
        return recorded("stream_length.http")
    if typed == "cut short?":
        return recorded("think_stream_length.http")
    return sse_answer("The user asked whether 7 is prime.")


def chat_with(tmp_path: Path, server: LocalServer, typed: str) -> tuple[str, str]:
    env = clean_env(tmp_path / "home", ROLLCHAT_PROVIDER="openai", ROLLCHAT_BASE_URL=server.url,
                    ROLLCHAT_MODEL="smollm2", OPENAI_API_KEY="sk-test")
    result = run_piped(tmp_path, typed, env=env)
    assert result.returncode == 0, result.stderr
    (path,) = (tmp_path / "sessions").glob("*.md")
    return " ".join(result.stdout.split()), path.read_text(encoding="utf-8")


def chat_bodies(server: LocalServer) -> list[dict[str, Any]]:
    return [body for route, body in server.bodies if route == "POST /v1/chat/completions"
            and last_user_text(body) in ("is 7 prime?", "and again?", "cut short?", "story?")]


def test_a_chat_with_the_real_thinking_answers(tmp_path: Path) -> None:
    """The thinking folded on screen and shown by ``thinking``, the answer shown whole, the
    transcript holding both apart, the next request sending the answer alone."""
    with local_server(MODELS, chat=chosen) as server:
        out, saved = chat_with(tmp_path, server, "is 7 prime?\nand again?\nthinking\n")
        bodies = chat_bodies(server)
    assert out.count("▸ thought for") == 2 and out.count(" ".join(ANSWER.split())) == 2
    before_command = out.rsplit(" ".join(ANSWER.split()), 1)[0]
    assert "<think>" not in out and "positive integer divisors" not in before_command
    assert "7 is indeed a prime number. A prime number is a positive integer" in out  # unfolded
    assert saved.count(f"*Thinking:* {THOUGHT}") == 2
    turns = parse(saved).turns
    assert [t.assistant for t in turns] == [ANSWER, ANSWER]
    [second] = [b for b in bodies if last_user_text(b) == "and again?"]
    [earlier] = [m for m in second["messages"] if m["role"] == "assistant"]
    assert earlier["content"] == ANSWER  # never the thinking, never the tags


def test_a_chat_cut_off_while_thinking(tmp_path: Path) -> None:
    """The limit reached inside the thinking: said so after it (the warning below the folded
    thinking, as below the text of an answer cut off), the thinking kept (folded and saved),
    no answer made up from it, and nothing of it sent back as one."""
    with local_server(MODELS, chat=chosen) as server:
        out, saved = chat_with(tmp_path, server, "cut short?\nstory?\nis 7 prime?\n")
        bodies = chat_bodies(server)
    first, second = out.split("You: ")[1:3]
    cut = "Output limit reached: the answer was cut off"
    assert first.index("▸ thought for") < first.index(cut)
    story = "Once upon a time, in the bustling port of Newhaven"
    assert second.index(story) < second.index(cut)
    assert "*Thinking:* 7 is indeed a prime\n" in saved
    assert [t.assistant for t in parse(saved).turns][:2] == ["", story]
    [later] = [b for b in bodies if last_user_text(b) == "is 7 prime?"]
    sent = json.dumps(later["messages"])
    assert "7 is indeed" not in sent and "<think>" not in sent


def test_in_a_terminal_the_thinking_streams_dim_then_folds(tmp_path: Path) -> None:
    """In a terminal: the real thinking drawn dim and italic while it streams, folded to one
    dim line when the answer starts, the answer drawn as text below it."""
    with local_server(MODELS, chat=chosen) as server:
        env = clean_env(tmp_path / "home", ROLLCHAT_PROVIDER="openai",
                        ROLLCHAT_BASE_URL=server.url, ROLLCHAT_MODEL="smollm2",
                        OPENAI_API_KEY="sk-test")
        child = spawn(tmp_path, env=env)
        child.expect(PROMPT)
        child.sendline("and again?")
        child.expect(re.escape(DIM_ITALIC + "thinking… 7"))  # the first delta, drawn live
        child.expect(re.escape(DIM_ITALIC) + r"▸ thought for [0-9.]+s \(31 words; 'thinking'")
        child.expect("To answer your question")
        child.expect(PROMPT)
        child.sendline("thinking")
        child.expect("positive integer divisors")
        child.expect(PROMPT)
        child.sendline("exit")
        child.expect(pexpect.EOF)


def test_a_template_that_opens_the_block_itself() -> None:
    """Qwen3.5's generation prompt ends with ``<think>\\n``; served with no parser, the server
    puts that tag back in front of the model's first token, in the same delta."""
    events = replay("prefilled_stream.http")
    first = next(e.text for e in events if isinstance(e, TextDelta))
    assert first.startswith("<think>\n") and len(first) > len("<think>\n")
    thought, answer, _drawn = divided(events)
    assert thought.startswith("1. A prime number is a positive integer") and thought.endswith(".")
    assert answer.startswith("To answer the question,") and "think>" not in answer
