"""What the next request holds, layer by layer (the ``context`` command): system prompt (the
persona, project instructions, the memory's user profile), tool schemas, restored summary, kept
turns, tool results, the conversation, the memory's context blocks, and the free space to the
compaction budget and to the window; then what the memory layers may take and the history mode.
Counted locally, with the session's counter."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from rollchat.memory.layers import split_block
from rollchat.models.tokens import PER_MESSAGE_TOKENS, REPLY_PRIMING_TOKENS
from rollchat.session.windowing import window_source
from rollchat.text.wording import plural

if TYPE_CHECKING:
    from rollchat.domain import Message
    from rollchat.session.core import Session


@dataclass(frozen=True)
class Layer:
    name: str
    tokens: int
    detail: str = ""  # e.g. "3 messages"


@dataclass(frozen=True)
class Breakdown:
    layers: list[Layer]  # adding up to ``total``
    total: int
    window: int
    budget: int  # automatic compaction starts past it
    reserved: int  # for the answer
    reported: int | None  # the provider's figure for the last request sent, if any
    notes: list[str] = field(default_factory=list)  # the memory layers, the history mode
    source: str = ""  # where the window figure comes from (session/windowing.py)


# the provider counted the last request otherwise than the local count: the difference is its
# own row, so that the Total is the context size shown everywhere (toolbar, ``Now:``)
PROVIDER_ROW = "Provider's count difference"


def _messages(n: int) -> str:
    return f"{n} message{'' if n == 1 else 's'}"


def breakdown(session: Session) -> Breakdown:
    """The next request (without a new message), in layers that add up to its total: the
    context size the toolbar shows (the provider's count of the last request, when there is
    one, plus a local count of what was added since)."""
    session.windows.poll()  # a window the server stated meanwhile counts from now
    counter, context = session.counter, session.engine.context
    specs = session.engine.offered()
    system = PER_MESSAGE_TOKENS + counter.count_text(context.system) if context.system else 0
    layered = session.layers
    profile = counter.count_text(layered.profile) if layered is not None else 0
    loaded = session.instructions.current
    instructions = counter.count_text(loaded.text) if loaded is not None and loaded.text else 0
    tools = counter.count_messages("", [], specs) - REPLY_PRIMING_TOKENS
    sent = context.request_messages()  # all, or the relevant history's choice
    prefix = sent[:context.prefix_len]
    rest = sent[context.prefix_len:]
    carried = sum(1 for t in session.state.turns if t.kind == "carried")
    cut, users = len(rest), 0
    for i, message in enumerate(rest):  # the kept turns end where this session's begin
        if message.role == "user":
            if users == carried:
                cut = i
                break
            users += 1
    kept, own = rest[:cut], rest[cut:]
    results = [m for m in own if m.role == "tool"]
    talk = [m for m in own if m.role != "tool"]

    blocks = [split_block(m.content)[0] for m in rest if m.role == "user"]
    blocks = [b for b in blocks if b]

    def size(messages: list[Message]) -> int:  # context blocks apart
        return sum(counter.count_message(replace(m, content=split_block(m.content)[1])
                                         if m.role == "user" else m) for m in messages)

    layers = [
        Layer("System prompt", system - profile - instructions),
        Layer("Project instructions", instructions, instruction_files(session)),
        Layer("Memory: user profile", profile,
              f"{plural(len(layered.frozen), 'fact')}, frozen until the next compaction"
              if layered is not None else "memory off"),
        Layer("Tools (schemas)", tools, plural(len(specs), "tool")),
        Layer("Restored summary", size(prefix), "summary + acknowledgment" if prefix else ""),
        Layer("Kept turns", size(kept), f"{carried} carried over" if carried else ""),
        Layer("Tool results", size(results), _messages(len(results)) if results else ""),
        Layer("Conversation", size(talk) + REPLY_PRIMING_TOKENS,
              _messages(len(talk)) if talk else ""),
        Layer("Memory: context blocks", sum(counter.count_text(b) for b in blocks),
              f"{len(blocks)} in their messages: date, time, relevant facts" if blocks
              else ""),
    ]
    counted, now = sum(layer.tokens for layer in layers), session.context_tokens
    if now is not None and now != counted:  # the provider's figure: the Total is THE size
        layers.append(Layer(PROVIDER_ROW, now - counted, "its count of the last request "
                            "sent, less the local count of the layers above"))
    budget = session.budget
    return Breakdown(layers, sum(layer.tokens for layer in layers), budget.window,
                     budget.tokens, budget.max_output_tokens, context.last_prompt_tokens,
                     notes(session, len(context.messages), len(sent)),
                     window_source(session.windows))


def instruction_files(session: Session) -> str:
    """The files of the instructions layer, by name (``instructions`` lists them in full)."""
    from rollchat.session.instructed import summary

    loaded = session.instructions.current
    if loaded is None or not loaded.sources:
        return "none found"
    names = ", ".join(s.path.name if s.included_from is None else f"@{s.path.name}"
                      for s in loaded.sources)
    return f"{summary(loaded)}: {names}" + ("; cut" if loaded.cut else "")


def notes(session: Session, held: int, sent: int) -> list[str]:
    """What the memory layers may take, and which history each request sends (issue 16)."""
    from rollchat.engine.history import CACHE_NOTE

    layered = session.layers
    if layered is None:
        out = ["Memory layers: off"]
    else:
        limit = layered.limit(session.budget.window)
        out = [f"Memory layers: at most {limit:,} tokens ({layered.share:.0%} of the window) "
               "for the user profile and the context blocks together"]
        if layered.last_block:
            out.append(f"Last context block: {session.counter.count_text(layered.last_block):,}"
                       f" tokens (date and time, "
                       f"{plural(len(layered.last_facts), 'relevant fact')}), in its message")
    if session.config.session.history == "relevant":
        out.append(f"{CACHE_NOTE}; {sent} of {held} messages sent now")
    else:
        out.append("History: all (each request repeats the previous one: prompt caching "
                   "works)")
    return out


DETAIL_COLUMN = 52  # where a row's detail starts: its continuation lines go on from there


def lines(b: Breakdown, *, model: str, method: str, auto: bool) -> list[str]:
    """The breakdown as aligned lines: tokens and share of the window for each layer (its
    detail, in parentheses, from DETAIL_COLUMN on)."""
    def row(name: str, tokens: int, detail: str = "") -> str:
        share = tokens / b.window if b.window else 0.0
        return f"  {name:<28} {tokens:>10,}  {share:>6.1%}" + (f"  ({detail})" if detail else "")

    source = f", {b.source}" if b.source else ""
    out = [f"Next request to {model} (window {b.window:,} tokens{source}; counted with "
           f"{method}):",
           f"  {'':<28} {'tokens':>10}  {'window':>6}"]
    out += [row(layer.name, layer.tokens, layer.detail) for layer in b.layers]
    out.append(row("Total", b.total))
    out.append(row("Free to the budget", max(b.budget - b.total, 0),
                   f"automatic compaction {'at' if auto else 'off; budget'} "
                   f"{b.budget:,}"))
    out.append(row("Free in the window", max(b.window - b.total, 0),
                   f"{b.reserved:,} of it reserved for the answer"))
    if b.reported is not None:
        out.append(f"  The provider counted {b.reported:,} tokens for the last request sent.")
    return out + b.notes
