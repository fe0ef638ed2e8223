"""Thinking kept apart from the answer: a reply's leading ``<think>`` block split off as it
streams (tags cut anywhere across deltas), a server's ``reasoning_content`` field through the
real OpenAI SDK, shown folded on screen, kept as a thinking block in the session file, exported,
and never sent back as the answer."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from rollchat.storage.transcript import parse
from rollchat.text.thinking import ThinkSplitter, without_thinking
from tests.e2e import clean_env, run_piped
from tests.wire_servers import WireServer, openai_server, text

__all__ = ["openai_server"]


def _split(pieces: list[str]) -> tuple[str, str]:
    splitter = ThinkSplitter()
    parts = [p for piece in pieces for p in splitter.feed(piece)] + splitter.flush()
    return ("".join(t for thinking, t in parts if thinking),
            "".join(t for thinking, t in parts if not thinking))


def _cut(whole: str, cuts: list[int]) -> list[str]:
    points = sorted({c % (len(whole) + 1) for c in cuts} | {0, len(whole)})
    return [whole[a:b] for a, b in itertools.pairwise(points)]


@given(st.text(st.characters(blacklist_characters="<>"), min_size=1).filter(str.strip),
       st.text(min_size=1).filter(lambda s: s.strip() and not s.lstrip().startswith("<")),
       st.lists(st.integers(0, 400), max_size=8), st.sampled_from(["think", "thinking"]))
def test_a_leading_think_block_is_thinking_wherever_the_deltas_cut_it(
        thought: str, answer: str, cuts: list[int], tag: str) -> None:
    whole = f"\n<{tag}>\n{thought}</{tag}>\n\n{answer}"
    thinking, said = _split(_cut(whole, cuts))  # the block keeps it stripped (engine took())
    assert (thinking.strip(), said) == (thought.strip(), answer.lstrip())


@given(st.text(min_size=1), st.lists(st.integers(0, 400), max_size=8))
def test_text_that_does_not_open_with_a_tag_is_all_answer(answer: str, cuts: list[int]) -> None:
    if answer.lstrip().startswith(("<think>", "<thinking>")):
        return
    assert _split(_cut(answer, cuts)) == ("", answer)


def test_the_edges() -> None:
    assert _split(["I use <think> tags", " here"]) == ("", "I use <think> tags here")
    assert _split(["<think>cut off mid-thou", "ght"]) == ("cut off mid-thought", "")  # unclosed
    assert _split(["<thin"]) == ("", "<thin")  # the reply ended before deciding: it is text
    assert _split(["<think></think>Answer"]) == ("", "Answer")
    assert _split(["<think>a</think>x <think>b</think>"]) == ("a", "x <think>b</think>")


def test_a_whole_reply_without_its_thinking() -> None:
    """What a summary or an extraction reads of a reasoning model's reply."""
    assert without_thinking("<think>\nlet me see\n</think>\n\n{\"facts\": []}") == '{"facts": []}'
    assert without_thinking("no thinking here") == "no thinking here"


def _env(tmp_path: Path, server: WireServer) -> dict[str, str]:
    return clean_env(tmp_path / "home", ROLLCHAT_PROVIDER="openai", ROLLCHAT_BASE_URL=server.url,
                     ROLLCHAT_MODEL="qwen3-local", OPENAI_API_KEY="sk-test")


def test_thinking_is_shown_folded_saved_apart_and_never_sent_back(
        tmp_path: Path, openai_server: WireServer) -> None:
    openai_server.push(
        text("<think>\nThe user greets me. I should greet back briefly.\n</think>\n\nHello there!"),
        text("Still here.", reasoning="They ask again; answer the same way."),
        text("summary reply"), text("summary reply"))
    result = run_piped(tmp_path, "thinking\nhi\nagain\nthinking\n",
                       env=_env(tmp_path, openai_server))
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "Hello there!" in out and "Still here." in out
    assert "▸ thought for" in out and "(9 words; 'thinking' shows them)" in out
    assert "No answer in this session came with thinking." in out
    shown = out.split("Still here.", 1)[1]
    assert "<think>" not in out and "I should greet back" not in out  # folded, not drawn
    assert "They ask again; answer the same way." in shown  # unfolded by 'thinking'
    second = json.dumps(openai_server.requests[1].body["messages"])
    assert "Hello there!" in second and "greet back" not in second and "<think>" not in second
    (path,) = (tmp_path / "sessions").glob("*.md")
    file_text = path.read_text(encoding="utf-8")
    assert "*Thinking:* The user greets me. I should greet back briefly." in file_text
    assert "*Thinking:* They ask again; answer the same way." in file_text
    turns = parse(file_text).turns
    assert [t.assistant for t in turns] == ["Hello there!", "Still here."]
    exported = run_piped(tmp_path, "", "export", path.stem, "--format", "json",
                         env=_env(tmp_path, openai_server))
    assert exported.returncode == 0, exported.stderr
    blocks = json.loads(exported.stdout)["turns"][0]["blocks"]
    assert blocks[0] == {"type": "thinking",
                         "text": "The user greets me. I should greet back briefly."}


def test_a_summary_call_reads_past_the_thinking() -> None:
    """A reasoning model served without a parser puts its thinking first in a summary's reply
    too: what compaction reads is the reply after it."""
    from rollchat.compaction.call import _collect
    from rollchat.domain import Message
    from rollchat.providers.base import ChatRequest, Done, TextDelta

    class Thinks:
        def stream(self, request: ChatRequest) -> list[object]:
            return [TextDelta("<think>\nwhat did they decide?\n</thi"),
                    TextDelta("nk>\n\n**Background Context:** x"), Done()]

    reply, _ = _collect(Thinks(), ChatRequest("m", "s", (Message("user", "u"),)),  # type: ignore[arg-type]
                        timeout=5)
    assert reply == "**Background Context:** x"
