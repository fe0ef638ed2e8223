"""Relevant history (issue 16, point 4): ``session.history: relevant`` sends the last three
exchanges verbatim and, of the older ones, those most similar to the current message (BM25,
SQLite FTS5), at most 20 and in order, or the last 20 when none matches; tool calls travel
with their results; the default, ``all``, sends everything."""

from __future__ import annotations

import itertools
from pathlib import Path

from rollchat.domain import Message, ToolCall
from rollchat.engine.history import MOST_OLDER, RelevantHistory
from rollchat.memory.layers import split_block
from rollchat.memory.search import rank
from tests.config.test_config import error, load
from tests.e2e import clean_env, run_piped
from tests.memory.test_memory_layers import FACTS, Facts, chats
from tests.memory.test_memory_layers import make as make_with_memory
from tests.session.test_session import make

TOPICS = ["kafka", "redis", "nginx", "docker", "terraform", "grafana", "celery", "sqlite",
          "pandas", "django", "flask", "webpack", "eslint", "mypy", "pytest", "numpy", "scipy",
          "kubernetes", "ansible", "jenkins", "vault", "consul", "nomad", "envoy", "istio",
          "prometheus", "loki", "tempo", "jaeger", "zipkin"]
PREFIX = [Message("user", "CONTEXT RESTORATION: the summary"), Message("assistant", "ack")]


def exchange(topic: str, *, tool: bool = False) -> list[Message]:
    messages = [Message("user", f"tell me about {topic} configuration")]
    if tool:
        call = ToolCall(f"call_{topic}", "read_file", {"path": f"{topic}.yml"})
        messages += [Message("assistant", "", tool_calls=(call,)),
                     Message("tool", f"{topic}: settings", tool_call_id=call.id,
                             name="read_file")]
    return [*messages, Message("assistant", f"{topic} is configured in {topic}.yml")]


def users(messages: list[Message]) -> list[str]:
    """The user messages after the prefix."""
    return [m.content for m in messages[len(PREFIX):] if m.role == "user"]


def history(topics: list[str], current: str, tool: bool = False) -> list[Message]:
    messages = list(PREFIX)
    for topic in topics:
        messages += exchange(topic, tool=tool)
    return [*messages, Message("user", current)]


def test_the_last_three_verbatim_and_the_matching_older_ones_in_order() -> None:
    messages = history(TOPICS, "compare the redis and sqlite setups with grafana", tool=True)
    sent = RelevantHistory()(messages, prefix_len=2)
    assert sent[:2] == PREFIX  # the session context (summary) always goes
    assert users(sent) == ["tell me about redis configuration",
                           "tell me about grafana configuration",
                           "tell me about sqlite configuration",
                           # the last three exchanges, the current one included
                           "tell me about jaeger configuration",
                           "tell me about zipkin configuration",
                           "compare the redis and sqlite setups with grafana"]
    # each chosen exchange whole: its tool call, then the call's result
    start = sent.index(Message("user", "tell me about redis configuration"))
    assert [m.role for m in sent[start:start + 4]] == ["user", "assistant", "tool", "assistant"]
    assert sent[start + 2].tool_call_id == sent[start + 1].tool_calls[0].id


def test_at_most_twenty_older_exchanges() -> None:
    messages = history(TOPICS, "what about configuration?")  # every exchange matches
    sent = RelevantHistory()(messages, prefix_len=2)
    assert len(users(sent)) == MOST_OLDER + 3
    older = users(sent)[:MOST_OLDER]
    assert older == sorted(older, key=users(messages).index)  # kept in their order


def test_the_last_twenty_when_nothing_matches() -> None:
    messages = history(TOPICS, "hmm, and then?")
    sent = RelevantHistory()(messages, prefix_len=2)
    assert users(sent) == users(messages)[-(MOST_OLDER + 3):]
    assert sent[:2] == PREFIX


def test_a_short_history_goes_whole() -> None:
    messages = history(TOPICS[:2], "unrelated")
    assert RelevantHistory()(messages, prefix_len=2) == messages


def test_the_context_block_is_not_searched() -> None:
    block = "<context>\nNow: Monday\nRelevant memory:\n- kafka facts\n</context>"
    messages = list(PREFIX)
    for topic in TOPICS[:10]:
        messages += [Message("user", f"{block}\n\nabout {topic}"), Message("assistant", "ok")]
    messages.append(Message("user", f"{block}\n\nand docker?"))
    sent = RelevantHistory()(messages, prefix_len=2)
    assert [split_block(u)[1] for u in users(sent)] == [
        "about docker", "about pandas", "about django", "and docker?"]


def test_rank_is_bm25_best_first() -> None:
    docs = ["redis redis redis cache", "redis once among many other words here",
            "nothing relevant"]
    assert rank(docs, "redis cache", 5) == [0, 1]
    assert rank(docs, 'a "quoted" OR NEAR( query', 5) == []  # words, never FTS5 syntax
    assert rank(docs, "", 5) == []


def test_a_session_in_relevant_mode_sends_the_relevant_history() -> None:
    core, _, provider = make(history="relevant")
    for topic in TOPICS[:12]:
        list(core.turn(f"we use {topic} for the platform"))
    list(core.turn("remind me why we picked redis"))
    request = provider.of("chat")[-1]
    sent = [m.content for m in request.messages if m.role == "user"]
    messages = core.engine.context.messages
    starts = [i for i, m in enumerate(messages) if m.role == "user"] + [len(messages)]
    older = list(itertools.pairwise(starts))[:-3]
    mentions = [messages[a].content for a, b in older
                if any("redis" in m.content for m in messages[a:b])]
    assert 0 < len(mentions) < 9  # the offline model's answers repeat earlier messages
    assert sent == [*mentions, "we use flask for the platform",
                    "we use webpack for the platform", "remind me why we picked redis"]
    # everything is still in the working context (and the transcript): nothing is lost
    assert len([m for m in core.engine.context.messages if m.role == "user"]) == 13
    # the estimate counts what is sent, not the whole history
    whole = core.counter.count_messages(core.engine.context.system,
                                        core.engine.context.messages)
    assert core.estimate() < whole


def test_relevant_mode_with_memory_keeps_each_block_with_its_message() -> None:
    core, _, provider = make_with_memory(Facts(list(FACTS)), history="relevant")
    for topic in TOPICS[:6]:
        list(core.turn(f"we use {topic} for postgres"))
    first = chats(provider)[0].messages[-1].content
    later = chats(provider)[-1].messages
    assert first in [m.content for m in later]  # sent again byte for byte, block included


def test_the_default_sends_everything() -> None:
    core, _, provider = make()
    for topic in TOPICS[:8]:
        list(core.turn(f"we use {topic}"))
    assert len(provider.of("chat")[-1].messages) == 15


def test_config(tmp_path: Path) -> None:
    assert load(tmp_path).session.history == "all"
    assert load(tmp_path, "session: {history: relevant}\n").session.history == "relevant"
    assert error(tmp_path, "session:\n  history: sometimes\n") == (
        "rollchat.yml:2: session.history: must be one of all, relevant (relevant forgoes "
        "prompt caching) (got 'sometimes')")


def test_a_bad_history_mode_exits_2(tmp_path: Path) -> None:
    (tmp_path / "bad.yml").write_text("session:\n  history: most\n", encoding="utf-8")
    done = run_piped(tmp_path, "hello\n", "--config", "bad.yml", env=clean_env(tmp_path / "h"))
    assert done.returncode == 2, done
    assert done.stderr == ("rollchat: error: bad.yml:2: session.history: must be one of all, "
                           "relevant (relevant forgoes prompt caching) (got 'most')\n")



def test_the_context_command_says_relevant_mode_forgoes_prompt_caching() -> None:
    import io

    from rich.console import Console

    from rollchat.ui.app import ChatApp
    from rollchat.ui.render import Renderer
    from rollchat.ui.repl import handle_line

    for mode, expected in (("relevant", "History: relevant (a different history is sent each "
                                        "turn, so it forgoes prompt caching"),
                           ("all", "History: all (each request repeats the previous one")):
        core, _, _ = make(history=mode)
        buffer = io.StringIO()
        app = ChatApp(core, Renderer(Console(file=buffer, width=300, color_system=None),
                                     interactive=False))
        for topic in TOPICS[:6]:
            list(core.turn(f"we use {topic}"))
        handle_line(app, "context")
        assert expected in buffer.getvalue()
        if mode == "relevant":
            assert "messages sent now" in buffer.getvalue()
