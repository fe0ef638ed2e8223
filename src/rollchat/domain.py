"""Value types shared by every module: messages, tool calls, usage, turns, summaries, sessions.

Frozen dataclasses with no I/O; identity and storage are the store's concern.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

Role = Literal["user", "assistant", "tool"]

# How a turn ended. "ok": answered; "interrupted": the user pressed Ctrl-C while the answer
# streamed (the partial answer is kept); "unanswered": the provider failed before answering
# (the user's message is kept so it can be sent again); "error": the provider failed mid-answer.
TurnStatus = Literal["ok", "interrupted", "unanswered", "error"]

# "query": a user query and its answer. "restored": the agent's acknowledgment of a restored
# summary, the first entry of a session created by compact or resume (not counted as a query).
# "carried": a query of the parent kept verbatim by an automatic compaction (in the working
# context and the transcript; counted, with its tokens, in the parent only).
# "handoff": the conversation was handed to another agent here (``@NAME message``): ``user`` is
# the message, ``context`` says to whom and in which session (not a query, no model call).
TurnKind = Literal["query", "restored", "carried", "handoff"]
QUERY_KINDS = ("query", "carried")  # the turns that hold an exchange with the model

# How much the model thinks before it answers (``thinking:`` in the config, ``thinking`` in
# the chat): None, the model's own default (nothing is sent); "on" (adaptive thinking where
# the model has it, else a default budget); "off"; or a budget in tokens.
ThinkingSetting = Literal["on", "off"] | int | None
@dataclass(frozen=True)
class ToolCall:
    """A tool call the model asked for. ``arguments`` is the decoded JSON object."""

    id: str
    name: str
    arguments: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Image:
    """An image the model is shown: one a tool returned, or one the user attached.

    ``digest`` is the sha256 of the bytes (hex) and names the file it is saved in beside the
    session file (``path``, relative to the sessions directory; "" until saved). ``data`` is
    the bytes while they are in memory (None once only the file has them); not compared."""

    media_type: str
    size: int
    digest: str
    path: str = ""
    data: bytes | None = field(default=None, compare=False, repr=False)


def image_marker(number: int, image: Image) -> str:
    """The line that holds the place of a tool result's ``number``-th image (from 1) in its
    text, where the tool returned it between texts (an MCP result of text, image, text): the
    request puts the image there (``interleaved``), the transcript keeps the line."""
    return f"[image {number}: {image.media_type}, {image.size:,} bytes]"


def interleaved(content: str, images: Sequence[Image]) -> list[str | Image]:
    """``content`` and ``images`` in the order the tool gave them: each image at its marker
    line (``image_marker``, which it replaces), the text between them as pieces (never
    empty); an image whose marker is not in the text (a result without markers, or cut) after
    the text, as before."""
    parts: list[str | Image] = []
    rest, at = content, 0
    placed: list[Image] = []
    for number, image in enumerate(images, 1):
        marker = image_marker(number, image)
        found = rest.find(marker, at)
        if found < 0:
            continue
        parts.append(rest[at:found].strip("\n"))
        parts.append(image)
        placed.append(image)
        at = found + len(marker)
    parts.append(rest[at:].strip("\n"))
    parts += [i for i in images if all(i is not p for p in placed)]
    return [p for p in parts if not isinstance(p, str) or p]


@dataclass(frozen=True)
class Message:
    """One message of the model's working context (system prompt excluded).

    user: ``content`` is the user's text; ``images`` any images attached to it.
    assistant: ``content`` is the text; ``tool_calls`` the calls it made (may be empty);
    ``extra`` provider blocks sent back with it (thinking, signed compaction blocks).
    tool: ``content`` is the result of the call ``tool_call_id`` to tool ``name``; ``images``
    the images it returned; ``is_error`` when the tool failed.
    """

    role: Role
    content: str
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    name: str | None = None
    images: tuple[Image, ...] = ()
    is_error: bool = False
    extra: tuple[ProviderBlock, ...] = ()


@dataclass(frozen=True)
class Usage:
    """Token usage of one model call (or a sum of calls)."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0

    @property
    def total(self) -> int:
        return self.input_tokens + self.output_tokens

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cache_read_tokens + other.cache_read_tokens,
            self.cache_write_tokens + other.cache_write_tokens,
        )


@dataclass(frozen=True)
class ToolExchange:
    """A tool call made during a turn and the result fed back to the model (a view of a
    turn's ToolUse and ToolResult blocks: ``Turn.tools``)."""

    call: ToolCall
    result: str
    is_error: bool = False
    images: tuple[Image, ...] = ()


# ------------------------------------------------------------------ the blocks of a turn
# A turn's answer side is an ordered list of blocks, as it happened: the model's text, the
# calls it made, their results (a reply's calls first, then their results in the same
# order), more text. Requests rebuilt from them are byte-identical to those sent
# (engine/replay.py).


@dataclass(frozen=True)
class Text:
    """Text the model wrote (one round's text: the text before a round's calls, or the
    answer after the last results)."""

    text: str


@dataclass(frozen=True)
class ToolUse:
    """A tool call the model made."""

    call: ToolCall


@dataclass(frozen=True)
class ToolResult:
    """The result of the call ``call_id``: its whole text (the transcript keeps it whole),
    whether the tool failed, the images it returned, and how it was sent when it was too
    large for the context: ``sent_keep`` characters of its head and tail around a marker
    (engine/hygiene.py's cut), -1 for omitted, None for whole."""

    call_id: str
    content: str
    is_error: bool = False
    images: tuple[Image, ...] = ()
    sent_keep: int | None = None


@dataclass(frozen=True)
class Note:
    """Something that happened in the turn that neither the user typed nor the model said
    (an imported tool's own line folded here: a slash command, an earlier compaction, an
    interruption). Not sent to the model; shown and exported."""

    kind: str
    text: str


@dataclass(frozen=True)
class Thinking:
    """What the model thought before it answered (a ``<think>`` block at the start of a reply,
    a provider's reasoning field, Anthropic's thinking, a Responses reasoning summary): kept
    and shown apart, never sent back as the answer nor summarized as the assistant's words.
    What a provider requires back (Anthropic's thinking with its signature, a redacted block,
    a reasoning item) rides beside it as a ProviderBlock, byte for byte."""

    text: str


@dataclass(frozen=True)
class ProviderBlock:
    """A provider's own block that must be sent back as it came (Anthropic's thinking with
    its signature or a redacted_thinking block, an OpenAI reasoning item, a signed compaction
    block): ``data`` is its JSON text, kept byte for byte; opaque to everything but its
    provider (never shown, never summarized)."""

    provider: str
    type: str
    data: str


Block = Text | Thinking | ToolUse | ToolResult | Note | ProviderBlock


@dataclass(frozen=True)
class FrameworkState:
    """What an agent framework keeps besides the conversation (Strands ``agent.state``, a
    LangGraph graph's state keys other than ``messages``, ADK's ``session.state``), as the
    session file keeps it: the framework's name and ``data``, the JSON text of an object."""

    framework: str
    data: str


@dataclass(frozen=True)
class Turn:
    """One entry of a transcript: the user's message and the answer's ``blocks`` in the order
    they happened (texts, tool calls, their results, notes, provider blocks).

    For kind "query", ``number`` is the query number (1-based) and ``user`` the user's text;
    kind "carried" is the same, numbered 1.. among the carried turns.
    For kind "restored", ``number`` is 0, ``user`` is empty and ``context`` holds the
    "Resumed from ..." line; the text blocks are the agent's acknowledgment.
    ``error`` is the one-line provider error for status "unanswered"/"error".
    ``context_block`` is the marked per-turn context block (date and time, relevant memory)
    sent before the user's text in the same message: context, not something the user typed;
    it is sent again byte for byte with the message in later requests.
    ``typed`` is what the user typed when ``user`` came from a saved prompt (``/NAME args``).
    """

    kind: TurnKind
    number: int
    started: datetime
    user: str
    blocks: tuple[Block, ...] = ()
    status: TurnStatus = "ok"
    elapsed: float = 0.0
    usage: Usage = field(default_factory=Usage)
    context: str = ""
    previous_session: str | None = None
    error: str | None = None
    context_block: str = ""
    attached: tuple[Image, ...] = ()  # images attached to the user's message
    typed: str = ""  # a saved prompt's command as typed (``/review src``): ``user`` is its prompt
    # a framework agent's state after this turn, when the turn changed it from what the
    # session file last kept (so a session that crashed resumes with it)
    framework_state: FrameworkState | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.blocks, tuple):  # a str here would read as one block per char
            raise TypeError(f"Turn.blocks must be a tuple of blocks, not "
                            f"{type(self.blocks).__name__}")

    @property
    def assistant(self) -> str:
        """The model's text, its rounds' texts joined as a paragraph each."""
        return ROUND_SEPARATOR.join(b.text for b in self.blocks if isinstance(b, Text))

    @property
    def tools(self) -> tuple[ToolExchange, ...]:
        """The tool calls that have a result, with it, in the order they were made."""
        return exchanges(self.blocks)

    @property
    def notes(self) -> tuple[Note, ...]:
        return tuple(b for b in self.blocks if isinstance(b, Note))

    @property
    def title(self) -> str:
        """What the turn is, as plain text names it ("Query 3", "Carried over 1", "Session
        restored", "Handed off"): on screen, in the archive tool, in a handoff."""
        if self.kind in QUERY_KINDS:
            return f"{'Query' if self.kind == 'query' else 'Carried over'} {self.number}"
        return "Handed off" if self.kind == "handoff" else "Session restored"


ROUND_SEPARATOR = "\n\n"  # between two rounds' texts, on screen and in ``Turn.assistant``


def exchanges(blocks: Sequence[Block]) -> tuple[ToolExchange, ...]:
    """The tool calls of ``blocks`` that have a result, with it, in the order they were made
    (a call still running when the turn was saved, or cut off, is in the blocks only)."""
    results = {b.call_id: b for b in blocks if isinstance(b, ToolResult)}
    return tuple(ToolExchange(b.call, r.content, r.is_error, r.images)
                 for b in blocks if isinstance(b, ToolUse)
                 and (r := results.get(b.call.id)) is not None)


def answer_blocks(assistant: str, tools: Sequence[ToolExchange] = ()) -> tuple[Block, ...]:
    """The blocks of an answer given as text and tool exchanges with no order between them
    (a file written before blocks, a summary's source): each call with its result, then the
    text."""
    blocks: list[Block] = []
    for ex in tools:
        blocks += [ToolUse(ex.call), ToolResult(ex.call.id, ex.result, ex.is_error, ex.images)]
    if assistant:
        blocks.append(Text(assistant))
    return tuple(blocks)


def plain_turn(turn: Turn, heading: str, *, you: str, agent: str,
               each_call: Callable[[ToolExchange], str] | None = None,
               full: bool = True) -> str:
    """``turn`` as plain text for a model to read (the turns handed over to another agent,
    the archive tool's pages): ``heading``, the context handed with it, the user's words
    after ``you``, its tool calls, the answer after ``agent``, its error. Each call is a line
    by ``each_call``; None: one line naming them all (their results can be huge). ``full``:
    False leaves out the handed context and the error, and writes the user's line even when
    empty (a handoff's turns, as they were always handed)."""
    lines = [heading]
    if full and turn.context:
        lines.append(f"Context: {turn.context}")
    if turn.user or not full:
        lines.append(f"{you}: {turn.user}")
    if each_call is not None:
        lines += [each_call(ex) for ex in turn.tools]
    elif turn.tools:
        lines.append(f"(tools called: {', '.join(ex.call.name for ex in turn.tools)})")
    if turn.assistant:
        lines.append(f"{agent}: {turn.assistant}")
    if full and turn.error:
        lines.append(f"Error: {turn.error}")
    return "\n".join(lines)


@dataclass(frozen=True)
class Summary:
    """The structured summary of a session (the SESSION_SUMMARY block).

    ``fallback`` is True when it was written by the local extractive summarizer because the
    model's summary failed; the block says so. ``artifacts``: the files, paths, URLs,
    commands and identifiers the session mentioned or changed (the "Files and artifacts"
    section; absent in older files). ``dropped_topics`` / ``dropped_artifacts``: how many
    items were left out to fit the summary budget (an HTML comment in the block).
    ``edited``: when the user last edited it (``summary edit``; ISO 8601, "" if never), an
    HTML comment in the block too. ``timeline``: on which day the session's topics happened,
    oldest first, one item a day ("2023-05-08: <what happened>"), carried down the chain (the
    "Timeline" section; absent in older files and when no turn is dated).
    """

    background: str
    topics: tuple[str, ...]
    decisions: tuple[str, ...]
    pending: tuple[str, ...]
    fallback: bool = False
    artifacts: tuple[str, ...] = ()
    dropped_topics: int = 0
    dropped_artifacts: int = 0
    edited: str = ""
    timeline: tuple[str, ...] = ()
    # the session's short title as the summary's writer proposed it (the model's ``**Title:**``
    # line; the local summarizer's is the first query's first line). Not part of the block:
    # finalizing writes it to the header's Title field when the session has none yet. Not
    # compared: two summaries with the same content are equal whatever title came with them.
    title: str | None = field(default=None, compare=False)
    # the provider's signed compaction block this summary was read from (compaction.engine:
    # provider), sent first on the child's requests; None: rollchat wrote it. Not compared.
    signed: ProviderBlock | None = field(default=None, compare=False)
    # the digest of the readable summary ``signed`` was written beside (storage/transcript/
    # signed.py): a summary changed since, by ``summary edit`` or by hand, no longer matches
    # it and is sent readable instead. ``signed_problem``: why a signed block in the file
    # could not be read ("" when there is none, or it was read).
    signed_for: str = field(default="", compare=False)
    signed_problem: str = field(default="", compare=False)
    # the agent framework's state when the summary was written (storage/transcript/
    # framework_state.py), given back to the framework at resume; ``state_problem``: why a
    # state line in the file could not be read. Not compared.
    framework_state: FrameworkState | None = field(default=None, compare=False)
    state_problem: str = field(default="", compare=False)


@dataclass(frozen=True)
class SessionHeader:
    """The header of a session file. Links are file names relative to the sessions dir.

    ``resumed_from`` is the parent's id; ``forked`` when the parent was open in another
    process at the time (the header says "Forked From"). ``continued_in``: the ids of the
    sessions that continue this one (added to the file as each is created)."""

    session_id: str
    date: datetime
    agent: str
    agent_path: str
    model: str
    provider: str
    resumed_from: str | None = None
    previous_session: str | None = None
    total_queries: int = 0
    total_tokens: int = 0  # billed: input + output over every model call of the session
    forked: bool = False
    continued_in: tuple[str, ...] = ()
    context_tokens: int = 0  # the context's size: the prompt of the session's last call
    tools: tuple[str, ...] | None = None  # the agent's own tools (None: not recorded)
    handed_from: str | None = None  # the session that handed the conversation to this one
    imported_from: str | None = None  # "<format> <file name>" of an imported transcript
    cost: float | None = None  # dollars for the tokens billed (None: the price is unknown)
    title: str | None = None  # the ``**Title:**`` field (None: none yet; see titles.py)


@dataclass(frozen=True)
class Transcript:
    """A whole session file: header, turns in order, and the summary block if present."""

    header: SessionHeader
    turns: tuple[Turn, ...] = ()
    summary: Summary | None = None
