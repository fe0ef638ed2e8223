"""LoCoMo's conversations lived through rollchat (bench/bench_locomo.py): each LoCoMo session one
rollchat session (speaker A the user, B's lines the answers, as given, at the session's date),
ended as rollchat ends a session (its summary, memory extraction) and resumed by the next; each
question then asked in a new session that continues the chain, or in one long session; what the
model is sent for the question is captured from the provider's request.

Nothing here re-implements rollchat: the Session, its Recorder and SessionStore, the
Compactor and summarizer, memory extraction and layers, relevant history and the tools run as
in a chat; the bench only plays the two speakers and reads the requests."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from bench.locomo_data import Conversation, Question, Sitting

from rollchat.config.settings import (
    AgentConfig,
    Config,
    InstructionsConfig,
    MemoryConfig,
    SessionConfig,
    SummaryConfig,
)
from rollchat.domain import Message, Usage
from rollchat.engine.core import EngineSettings
from rollchat.memory.keeper import Memory
from rollchat.memory.layers import MemoryLayers, split_block
from rollchat.memory.store import MemoryStore
from rollchat.models.tokens import TokenCounter
from rollchat.providers.base import (
    ChatRequest,
    Done,
    Provider,
    RetryPolicy,
    StreamEvent,
    TextDelta,
    UsageEvent,
)
from rollchat.providers.offline import OfflineProvider
from rollchat.providers.offline import salient_words as offline_salient
from rollchat.session.core import Session
from rollchat.storage.store import SessionStore
from rollchat.tools import ARCHIVE_TOOL_NAME, MEMORY_TOOL_NAME

OPENS = "…"  # the user's message of a session LoCoMo opens with speaker B's line
# LoCoMo's QA prompt (task_eval/gpt_utils.py), with the date hint of its temporal questions
QA_PROMPT = ("Based on the above context, write an answer in the form of a short phrase for the "
             "following question. Answer with exact words from the context whenever "
             "possible.\n\nQuestion: {} Short answer:")
QA_PROMPT_CAT_5 = "Based on the above context, answer the following question.\n\nQuestion: {} " \
                  "Short answer:"
DATE_HINT = " Use the dates of the conversation to answer with an approximate date."
OFFLINE_MODEL = "offline"
UNANSWERED = "(no model: the question's request is measured, not answered)"


@dataclass
class Clock:
    """The time the chat lives at: each LoCoMo session's date (engine turns, memory block)."""

    at: datetime = field(default_factory=lambda: datetime(2023, 1, 1))

    def __call__(self) -> datetime:
        return self.at.replace(tzinfo=timezone.utc)


class Partner:
    """The bench's provider: speaker B's queued lines answer the chat as given; a question's
    request is kept (``sent``) and answered by ``answerer`` (a model) or by the offline
    model; summaries, restorations and memory extraction go to the offline model, as with
    rollchat's offline summarizer."""

    name = "locomo"

    def __init__(self, offline: OfflineProvider, answerer: Provider | None = None) -> None:
        self.offline, self.answerer = offline, answerer
        self.replies: deque[str] = deque()
        self.sent: list[ChatRequest] = []
        self.tools_allowed = False  # a question may call tools (the tools mode with a model)
        self._sizes: dict[tuple[str, str], int] = {}

    def size(self, request: ChatRequest) -> int:
        """The request's tokens, each message counted once (a long chat resends them all)."""
        total = self.offline.counter.count_messages(request.system, [], request.tools)
        for m in request.messages:
            key = (m.role, m.content)
            if key not in self._sizes:
                self._sizes[key] = self.offline.counter.count_message(m)
            total += self._sizes[key]
        return total

    def stream(self, request: ChatRequest) -> Iterator[StreamEvent]:
        if request.purpose != "chat":
            yield from self.offline.stream(request)
            return
        if self.replies:
            reply = self.replies.popleft()
            yield TextDelta(reply)
            yield UsageEvent(Usage(input_tokens=self.size(request),
                                   output_tokens=len(reply.split())))
            yield Done("end")
            return
        self.sent.append(request)
        if self.answerer is None:  # (a) only: no model answers
            yield TextDelta(UNANSWERED)
            yield Done("end")
        else:
            tools = request.tools if self.tools_allowed else ()
            yield from self.answerer.stream(replace(request, tools=tools))


def exchanges(sitting: Sitting, user: str) -> list[tuple[str, str]]:
    """(the user's message, the answer) of a LoCoMo session: runs of one speaker's lines
    joined; a session that opens with the other speaker starts with OPENS."""
    runs: list[tuple[bool, list[str]]] = []
    for line in sitting.lines:
        mine = line.speaker == user
        if runs and runs[-1][0] == mine:
            runs[-1][1].append(line.text)
        else:
            runs.append((mine, [line.text]))
    if runs and not runs[0][0]:
        runs.insert(0, (True, [OPENS]))
    out = []
    for i in range(0, len(runs), 2):
        said = "\n\n".join(runs[i][1])
        answer = "\n\n".join(runs[i + 1][1]) if i + 1 < len(runs) else ""
        out.append((said, answer))
    return out


def persona(conv: Conversation) -> str:
    return (f"You are {conv.speaker_b}. The user is {conv.speaker_a}; you and "
            f"{conv.speaker_a} talk over many days.")


@dataclass
class Chat:
    """What a session of the bench is built from."""

    conv: Conversation
    partner: Partner
    clock: Clock
    store: SessionStore
    memory: Memory | None = None
    history: str = "all"
    window: int = 128_000
    auto: bool = False

    def config(self) -> tuple[Config, AgentConfig]:
        agent = AgentConfig(key="locomo", name=self.conv.speaker_b, provider="offline",
                            system_prompt=persona(self.conv), max_output_tokens=256)
        config = Config(agents={"locomo": agent}, default_agent="locomo",
                        session=replace(SessionConfig(), dir=self.store.root,
                                        auto_compact=self.auto, history=self.history),
                        summary=replace(SummaryConfig(), on_exit="model"),
                        memory=replace(MemoryConfig(), enabled=self.memory is not None),
                        instructions=InstructionsConfig(enabled=False))
        return config, agent

    def session(self) -> Session:
        config, agent = self.config()
        engine = EngineSettings(self.partner, model=OFFLINE_MODEL, system=agent.system_prompt,
                                max_output_tokens=256, temperature=0.0,
                                retry=RetryPolicy(1, 0.5, 2.0), clock=self.clock)
        layers = None if self.memory is None else MemoryLayers(
            self.memory.store, share=config.memory.max_share, clock=self.clock)
        return Session(config=config, agent=agent, engine_settings=engine,
                       summary_provider=self.partner.offline, summary_model=OFFLINE_MODEL,
                       provider_name="offline", store=self.store, confirm=lambda _q: False,
                       context_window=self.window, memory=self.memory, layers=layers)


def drain(flow: Iterator[Any]) -> list[Any]:
    return list(flow)


def open_memory(where: Path) -> Memory:
    store = MemoryStore(where, "locomo", directory=where / "memory", home=where)
    return Memory(store, OfflineProvider(), model=OFFLINE_MODEL)


def live(chat: Chat, session: Session, sitting: Sitting) -> int:
    """One LoCoMo session's lines through ``session``, at the session's date; how many
    automatic compactions happened."""
    chat.clock.at = sitting.date
    compactions = 0
    for said, answer in exchanges(sitting, chat.conv.speaker_a):
        chat.partner.replies.append(answer or OPENS)
        compactions += sum(type(e).__name__ == "CompactionFinished"
                           for e in session.turn(said))
    chat.partner.replies.clear()
    return compactions


def live_chain(chat: Chat, progress: Callable[[str], None]) -> str:
    """Every LoCoMo session as one rollchat session, ended by ``exit`` (its summary and memory
    extraction) and resumed by the next; the id of the last."""
    parent: str | None = None
    sittings = chat.conv.sittings
    for n, sitting in enumerate(sittings, 1):
        session = chat.session()
        chat.clock.at = sitting.date
        if parent is not None:
            drain(session.resume(parent))
        live(chat, session, sitting)
        drain(session.exit())
        parent = session.state.session_id
        progress(f"session {n}/{len(sittings)}")
    assert parent is not None
    return parent


def question_text(question: Question, seed: int) -> str:
    """The question as LoCoMo's evaluation asks it (category 5: two options, in an order
    drawn from ``seed``)."""
    if question.category == 5:
        a, b = ("Not mentioned in the conversation", question.distractor)
        if seed % 2:
            a, b = b, a
        return QA_PROMPT_CAT_5.format(f"{question.question} Select the correct answer: "
                                      f"(a) {a} (b) {b}. ")
    hint = DATE_HINT if question.category == 2 else ""
    return QA_PROMPT.format(question.question + hint)


@dataclass(frozen=True)
class Asked:
    """What one question sent: the texts the model was given besides the question (the
    system prompt, each message, each tool result), its tokens, and the answer."""

    context: tuple[str, ...]
    tokens: int
    answer: str


def sent_context(request: ChatRequest) -> list[str]:
    """Everything ``request`` gives the model but the question's own words: the system
    prompt, the messages, the context block of the last user message."""
    parts = [request.system]
    messages: Sequence[Message] = request.messages
    for i, m in enumerate(messages):
        if i == len(messages) - 1 and m.role == "user":
            parts.append(split_block(m.content)[0])
        else:
            parts.append(m.content)
    return parts


def tool_queries(question: Question, conv: Conversation) -> list[tuple[str, dict[str, object]]]:
    """The tool calls a model is invited to make for ``question``: memory_search with the
    question, the archive with each of its salient words (a turn must hold all of a query's
    words, so one word per call)."""
    names = {conv.speaker_a.lower(), conv.speaker_b.lower()}
    words = [w for w in offline_salient(question.question, 8) if w.strip("'s") not in names]
    calls: list[tuple[str, dict[str, object]]] = [(MEMORY_TOOL_NAME,
                                                    {"query": question.question})]
    return calls + [(ARCHIVE_TOOL_NAME, {"query": w}) for w in words[:5]]


def ask(session: Session, chat: Chat, text: str, counter: TokenCounter,
        calls: Sequence[tuple[str, Mapping[str, object]]] = ()) -> Asked:
    """``text`` sent in ``session``: what the model was given (the question's request, and
    the results of ``calls`` run with the session's own tools) and its answer."""
    before = len(chat.partner.sent)
    events = drain(session.turn(text))
    answer = "".join(e.text for e in events if type(e).__name__ == "TextDelta")
    if len(chat.partner.sent) == before:
        raise RuntimeError(f"the question was not sent: {events[-3:]}")
    requests = chat.partner.sent[before:]  # more than one when the model called tools
    tools = session.engine.saved()[1]
    results = [str(tools[name].run(args)) for name, args in calls if name in tools]
    context = (*(part for r in requests for part in sent_context(r)), *results)
    tokens = sum(chat.partner.size(r) for r in requests) + sum(
        counter.count_text(r) for r in results)
    return Asked(context, tokens, answer)


def question_session(chat: Chat, last: str, when: datetime) -> Session:
    """A new session continuing the chain's last session (a fork of it: the chain stays as
    it is)."""
    chat.clock.at = when
    session = chat.session()
    drain(session.resume(last, fork=True))
    return session


def ask_alone(session: Session, chat: Chat, text: str, counter: TokenCounter,
              calls: Sequence[tuple[str, Mapping[str, object]]] = ()) -> Asked:
    """``ask`` in ``session`` as it is now, then the session's working context and memory
    layers put back as they were (as ``undo`` puts back a compaction's): each question sees
    the same context, as in a new session, and none sees another question (one that
    compacted the session leaves it compacted: that is rollchat's own doing)."""
    state, context = session.state, session.engine.context.copy()
    layers = session.layers
    kept = None if layers is None else {k: (set(v) if isinstance(v, set) else v)
                                        for k, v in vars(layers).items()}
    asked = ask(session, chat, text, counter, calls)
    if session.state is state:
        session.engine.context.revert_to(context)
        if layers is not None and kept is not None:
            vars(layers).update(kept)
    return asked


def after(sittings: Sequence[Sitting]) -> datetime:
    return sittings[-1].date + timedelta(days=1)
