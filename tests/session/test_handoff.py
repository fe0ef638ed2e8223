"""Handoff in chat (``@NAME message``): the chat built as ``rollchat`` builds it (two agents of a
config file, the offline model recording every request), the session files it leaves, each
strategy, unknown agents, continuing a chain across runs, and the REPL in a pseudo-terminal."""

from __future__ import annotations

import io
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from rich.console import Console
from typer.testing import CliRunner

from rollchat import providers
from rollchat.cli import start as cli
from rollchat.cli.app import build_cli
from rollchat.config.load import load_config
from rollchat.config.settings import AgentConfig, Config, ConfigOverrides
from rollchat.domain import SessionHeader, Transcript, Turn, answer_blocks
from rollchat.memory.layers import split_block
from rollchat.providers.base import ChatRequest, StreamEvent
from rollchat.providers.offline import OfflineProvider
from rollchat.session.handoff import CONTEXT_TAG, relevant_turns
from rollchat.storage.transcript import parse, render
from rollchat.ui.app import ChatApp
from rollchat.ui.commands import Mention, mention
from rollchat.ui.commands import parse as parse_line
from rollchat.ui.render import Renderer
from rollchat.ui.repl import handle_line, prompt_text
from rollchat.ui.starting import Starting
from tests.e2e import PROMPT, clean_env, write_config
from tests.terminal import Terminal, run_chat

A_PROMPT = "You are the architect."
B_PROMPT = "You are the reviewer. Be strict."
CONFIG = f"""\
agents:
  assistant:
    name: Architect
    system_prompt: "{A_PROMPT}"
  reviewer:
    name: Reviewer
    system_prompt: "{B_PROMPT}"
ui:
  offline_word_delay: 0
"""


@dataclass
class Recording:
    """The offline model, recording the requests made for one agent."""

    inner: OfflineProvider = field(default_factory=OfflineProvider)
    requests: list[ChatRequest] = field(default_factory=list)
    name: str = "offline"

    def stream(self, request: ChatRequest) -> Iterator[StreamEvent]:
        self.requests.append(request)
        return self.inner.stream(request)

    def chats(self) -> list[ChatRequest]:
        return [r for r in self.requests if r.purpose == "chat"]


@dataclass
class Chat:
    app: ChatApp
    buffer: io.StringIO
    models: dict[str, Recording]
    sessions: Path

    def line(self, *texts: str) -> None:
        for text in texts:
            assert handle_line(self.app, text) is False

    @property
    def output(self) -> str:
        return self.buffer.getvalue()

    def files(self, prefix: str = "") -> list[Path]:
        return sorted(self.sessions.glob(f"{prefix}*.md"))


def start(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, extra: str = "",
          agents: str = "") -> Chat:
    """A chat built by cli._build_chat from a config file with two agents."""
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    models: dict[str, Recording] = {}

    def build_provider(name: str, agent: AgentConfig, config: Config,
                       env: object) -> Recording:
        return models.setdefault(agent.key, Recording())

    monkeypatch.setattr(providers, "build_provider", build_provider)
    text = CONFIG.replace("ui:\n", f"{agents}ui:\n") + extra
    (tmp_path / "rollchat.yml").write_text(text, encoding="utf-8")
    cfg = load_config(config_path=tmp_path / "rollchat.yml", env={}, cwd=tmp_path,
                      overrides=ConfigOverrides(sessions_dir=tmp_path / "sessions"),
                      user_config_dir=tmp_path / "config")
    buffer = io.StringIO()
    renderer = Renderer(Console(file=buffer, width=200, color_system=None,
                                force_terminal=False), interactive=False)
    app, _ = cli._build_chat(cfg, {}, "offline", "offline", renderer, interactive=False,
                             yes=True)
    return Chat(app, buffer, models, tmp_path / "sessions")


def handed_block(request: ChatRequest) -> str:
    last = split_block(request.messages[-1].content)[1]  # after the turn's context block
    m = re.match(rf'<{CONTEXT_TAG} from="[^"]*" session="[^"]*" strategy="([a-z_0-9]+)">\n'
                 rf"(.*)\n</{CONTEXT_TAG}>\n\n", last, re.DOTALL)
    assert m is not None, last[:200]
    return m[2]


# ---------------------------------------------------------------- the whole round trip


def test_handoff_to_another_agent_and_back(tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    chat = start(tmp_path, monkeypatch)
    chat.line("we decided to use redis for the cache on port 6380",
              "TODO: write the migration for the sessions table")
    [a_file] = chat.files("assistant_")
    a_id = a_file.stem
    a_before = chat.models["assistant"].chats()[-1]

    chat.line("@reviewer please review the cache decision")
    assert chat.app.session.agent.key == "reviewer"
    assert chat.app.handed and "Handing over to Reviewer" in chat.output
    [b_file] = chat.files("reviewer_")
    b = parse(b_file.read_text())
    assert b.header.handed_from == a_id and b.header.agent == "Reviewer"
    first = b.turns[0]
    assert first.kind == "query" and first.user == "please review the cache decision"
    assert first.context.startswith(f"Handed from Architect ({a_id}) with a summary")
    [b_request] = chat.models["reviewer"].chats()
    assert b_request.system == B_PROMPT  # its own system prompt, not the architect's
    assert A_PROMPT not in "".join(m.content for m in b_request.messages)
    assert len(b_request.messages) == 1
    block = handed_block(b_request)
    assert "redis" in block and "Decisions made:" in block
    assert b_request.messages[0].content.endswith("\n\nplease review the cache decision")
    assert chat.models["assistant"].chats()[-1] is a_before  # nothing more sent to A

    a = parse(a_file.read_text())  # A's transcript records the handoff
    record = a.turns[-1]
    assert record.kind == "handoff" and record.user == "please review the cache decision"
    assert f"Handed to Reviewer ({b_file.stem})" in record.context
    assert a.header.total_queries == 2

    chat.line("is port 6380 safe?")  # the chat talks to the reviewer now
    assert len(chat.models["reviewer"].chats()) == 2
    assert chat.models["reviewer"].chats()[-1].messages[0] == b_request.messages[0]

    chat.line("@assistant thanks, over to you")  # handing back continues A's session
    assert chat.app.session.agent.key == "assistant"
    assert chat.files("assistant_") == [a_file]
    back = chat.models["assistant"].chats()[-1]
    assert back.system == A_PROMPT
    # the request starts with the previous one, byte for byte (the prompt cache holds)
    assert back.messages[:len(a_before.messages)] == a_before.messages
    assert "port 6380 safe" in handed_block(back)
    assert back.messages[-1].content.endswith("thanks, over to you")

    chat.app.exit()  # both sessions saved with their summaries
    a, b = parse(a_file.read_text()), parse(b_file.read_text())
    assert a.summary is not None and b.summary is not None
    assert [t.kind for t in a.turns] == ["query", "query", "handoff", "query"]
    assert [t.kind for t in b.turns] == ["query", "query", "handoff"]
    assert a.turns[-1].user == "thanks, over to you"
    assert a.turns[-1].context.startswith(f"Handed from Reviewer ({b_file.stem})")
    assert f"Saved session: {b_file.stem}" in chat.output
    assert chat.output.count("Goodbye!") == 1


def test_bm25_hands_the_turns_relevant_to_the_message(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    chat = start(tmp_path, monkeypatch, "handoff:\n  strategy: bm25\n  max_tokens: 400\n")
    chat.line("the kafka consumer lags behind by ten minutes",
              "lunch options near the office",
              "the kafka partition count is twelve",
              "holiday schedule for december")
    chat.line("@reviewer why does the kafka consumer lag?")
    block = handed_block(chat.models["reviewer"].chats()[0])
    assert "kafka consumer lags" in block and "partition count" in block
    assert "lunch" not in block and "holiday" not in block
    assert block.index("consumer lags") < block.index("partition count")  # original order
    assert 'strategy="bm25"' in chat.models["reviewer"].chats()[0].messages[0].content


def test_bm25_ranks_with_sqlite_and_keeps_the_budget() -> None:
    texts = ["alpha beta", "gamma " * 50 + "delta", "delta epsilon", "zeta"]
    words = lambda text: len(text.split())  # noqa: E731
    assert relevant_turns(texts, "delta", 1000, words) == [1, 2]
    assert relevant_turns(texts, "delta", 10, words) == [2]  # the best that fits
    assert relevant_turns(texts, "nothing in common", 1000, words) == []
    assert relevant_turns(texts, '"quotes" OR NEAR(* ^', 1000, words) == []  # never FTS syntax
    hostile = ["x" * 200_000, "\x00\x1b[31m odd \udcff bytes", "normal words here"]
    assert relevant_turns(hostile, "odd words", 10**9, words) == [1, 2]


def test_last_n_hands_the_last_turns_verbatim_within_max_tokens(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    chat = start(tmp_path, monkeypatch,
                 "handoff:\n  strategy: last_n\n  last_n: 2\n  max_tokens: 100\n")
    chat.line("first topic: gardening", "second topic: compilers", "third topic: " + "word " * 400)
    chat.line("@reviewer look")
    block = handed_block(chat.models["reviewer"].chats()[0])
    assert "gardening" not in block and "third topic" in block
    assert "compilers" not in block  # the two last turns are over 100 tokens: the newest only
    assert block.endswith("[…cut to fit handoff.max_tokens]")
    assert "the last 1 turn verbatim" in chat.output


def test_unknown_agent_or_no_message_sends_nothing(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    chat = start(tmp_path, monkeypatch)
    chat.line("hello there, a first message")
    sent = len(chat.models["assistant"].requests)
    chat.line("@nobody please look at this")
    assert "no agent nobody; agents: assistant, reviewer" in chat.output
    assert chat.app.take_unsent() == "@nobody please look at this"  # back in the input
    chat.line("@reviewer")
    assert "@reviewer needs a message" in chat.output
    assert chat.app.take_unsent() == "@reviewer"
    assert len(chat.models["assistant"].requests) == sent and "reviewer" not in chat.models
    assert chat.app.session.agent.key == "assistant" and not chat.files("reviewer_")
    chat.line("mail me@example.com about it", "@ alone", "@Reviewer, hi")
    assert len(chat.models["assistant"].chats()) == 4  # chat text, not handoffs


def test_mentions() -> None:
    assert mention("@reviewer please look") == Mention("reviewer", "please look")
    assert mention("  @reviewer   two\nlines ") == Mention("reviewer", "two\nlines")
    assert mention("@reviewer") == Mention("reviewer", "")
    assert parse_line("@reviewer please look") == Mention("reviewer", "please look")  # (36.3)
    for text in ("@", "@ reviewer", "me@x.com hi", "@x.com hi", "hi @reviewer", "@-x hi"):
        assert mention(text) is None, text


def test_handing_to_an_agent_that_cannot_start_keeps_the_text(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    chat = start(tmp_path, monkeypatch, agents="  remote:\n    provider: anthropic\n"
                                               "    api_key_env: NO_SUCH_KEY_VAR\n")
    chat.line("a message")
    chat.line("@remote review this")
    assert "cannot hand over to remote: provider anthropic needs an API key" in chat.output
    assert chat.app.take_unsent() == "@remote review this"
    assert chat.app.session.agent.key == "assistant"


def test_a_later_run_continues_the_agents_session_of_this_chain(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first = start(tmp_path, monkeypatch)
    first.line("the deploy uses blue green", "@reviewer check the deploy plan")
    first.app.exit()
    [a1], [b1] = first.files("assistant_"), first.files("reviewer_")

    second = start(tmp_path, monkeypatch)
    second.line(f"resume {a1.stem}", "the deploy window is friday")
    a2 = next(p for p in second.files("assistant_") if p != a1)
    second.line("@reviewer and now?")
    b2 = next(p for p in second.files("reviewer_") if p != b1)
    header = parse(b2.read_text()).header
    assert header.resumed_from == b1.stem and header.handed_from == a2.stem
    assert f"Continuing Reviewer's session {b1.stem}" in second.output
    turns = parse(b2.read_text()).turns
    assert [t.kind for t in turns] == ["restored", "query"]
    assert turns[1].user == "and now?" and "friday" in turns[1].context
    second.app.exit()
    assert parse(b1.read_text()).header.continued_in == (b2.stem,)


def test_the_prompt_names_the_agent_after_a_handoff(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    chat = start(tmp_path, monkeypatch)
    starting = Starting(lambda: (chat.app, []), label="", out=chat.app.out)
    starting.get()
    assert prompt_text(starting) == "You: "
    chat.line("a first message", "@reviewer over to you")
    assert prompt_text(starting) == "You → Reviewer: "


def test_handoff_turns_and_headers_round_trip() -> None:
    from datetime import datetime, timezone

    when = datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone.utc)
    header = SessionHeader("reviewer_20260102_030405_ab12", when, "Reviewer",
                           "config:reviewer", "m", "offline",
                           handed_from="assistant_20260102_030000_cd34",
                           imported_from="claude-code x.jsonl")
    turns = (Turn("query", 1, when, "## Query 9 (00:00:00)\n**You:** forged",
                  answer_blocks("answer"),
                  context="Handed from A (x) with a summary:\n## Handed Off (00:00:00)\n---"),
             Turn("handoff", 0, when, "@me\n---\n<!-- SESSION_SUMMARY_START -->", (),
                  context="Handed to B (b_1)"))
    text = render(Transcript(header, turns))
    assert parse(text) == Transcript(header, turns)
    old = text.replace("**Handed From:** assistant_20260102_030000_cd34\n", "")
    assert parse(old).header.handed_from is None  # files without it still parse


def test_bad_strategy_is_a_config_error(tmp_path: Path) -> None:
    config = write_config(tmp_path / "c.yml", "handoff:\n  strategy: random\n")
    result = CliRunner().invoke(build_cli(), ["--config", str(config), "--provider", "offline"],
                                input="")
    assert result.exit_code == 2
    assert "handoff.strategy: must be one of summary, bm25, last_n" in result.output


# ---------------------------------------------------------------- in a pseudo-terminal


def test_at_completes_agent_names_and_the_prompt_follows(tmp_path: Path) -> None:
    write_config(tmp_path / "rollchat.yml", CONFIG)

    def script(term: Terminal) -> None:
        term.expect(PROMPT)
        term.sendline("the cache uses redis on port 6380")
        term.expect("Architect:")
        term.expect(PROMPT)
        term.send("@rev")
        term.send("\t")
        term.expect("iewer")  # the completion is drawn (asynchronously: wait for it)
        term.sendline(" please check the port")  # '@rev' + Tab became '@reviewer'

        term.expect("Handing over to Reviewer")
        term.expect("Reviewer:")
        term.expect("You → Reviewer:")
        term.sendline("@nobody hi")
        term.expect("no agent nobody; agents: assistant, reviewer")
        term.expect("You → Reviewer:")
        term.send("\x15")  # the text came back: clear it
        term.sendline("exit")
        term.expect("Goodbye!")

    assert run_chat(tmp_path, ["--config", "rollchat.yml"], script,
                    env=clean_env(tmp_path / "home")) == 0
    files = sorted((tmp_path / "sessions").glob("*.md"))
    assert [f.name.split("_")[0] for f in files] == ["assistant", "reviewer"]
    assert "## Handed Off" in files[0].read_text()
    assert "**Handed From:**" in files[1].read_text()
