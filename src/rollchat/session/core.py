"""The session: the flows a user triggers (a turn, compact, resume, fork, clear, undo, exit) as
generators of events, with no terminal and no printing. The REPL, tests and the MCP server drive
the same Session; its Compactor owns compaction, its Recorder writes the file, the engine calls."""

from __future__ import annotations

from collections.abc import Callable, Generator, Sequence
from contextlib import AbstractContextManager
from dataclasses import replace
from typing import TYPE_CHECKING

from rollchat.compaction import policy
from rollchat.compaction.summarizer import Summarizer
from rollchat.config.settings import NO_SAVE_LOCATION, AgentConfig, Config
from rollchat.domain import Image, Message, ThinkingSetting, Turn, Usage
from rollchat.engine.core import Answer, EngineSettings
from rollchat.engine.tool_output import ToolOutput
from rollchat.errors import UsageError
from rollchat.events import AnswerStarted, Event, Notice, TurnFinished
from rollchat.memory.layers import MemoryLayers, with_block
from rollchat.models.calls import Call, cost_of
from rollchat.models.current import CurrentModel
from rollchat.models.tokens import TokenCounter
from rollchat.providers.base import ContextTooLongError, Provider, ServerDownError
from rollchat.providers.names import KEY_ENV
from rollchat.session import ops
from rollchat.session.build import build_engine, memory_layers, session_tools, stable_prompt
from rollchat.session.checkpoint import checkpointed  # each tool call on disk as it ends
from rollchat.session.compactor import CompactAsker, CompactChoice, Compactor, Surroundings
from rollchat.session.exiting import SKIPPED, ExitSummary, ended, exit_summary
from rollchat.session.forks import IN_CHAT, Forking
from rollchat.session.hooked import SessionHooks, with_hook_context
from rollchat.session.instructed import Loader, SessionInstructions, loader
from rollchat.session.recorder import Recorder
from rollchat.session.refusal import after_refusal
from rollchat.session.resume import resume
from rollchat.session.state import (
    SessionState,
    UndoPoint,
    failure_hint,
    session_title,
    unusable,
)
from rollchat.session.steps import proposal
from rollchat.session.switch import ModelSwitch
from rollchat.session.tools_view import ToolsView, restart_server, tools_view
from rollchat.session.windowing import (
    WindowBook,
    WindowLearner,
    asked,
    cut_off,
    windowed,
)
from rollchat.storage.listing import Hit, Page
from rollchat.storage.store import SessionInfo, Store
from rollchat.text.normalize import clean

if TYPE_CHECKING:
    from rollchat.compaction.policy import PolicyState
    from rollchat.config.settings import AutoCompact
    from rollchat.memory.keeper import Memory
    from rollchat.session.handed import Handed
    from rollchat.tools.approval import Gate
    from rollchat.tools.hooks import Hooks

__all__ = ["CompactAsker", "CompactChoice", "Flow", "Session", "proposal"]

Flow = Generator[Event, None, None]


class Session:
    """One chat session and its flows. Each flow method is a generator of events."""

    def __init__(
        self,
        *,
        config: Config,
        agent: AgentConfig,
        engine_settings: EngineSettings,  # the agent's engine: provider, tools, gate, prompt
        summary_provider: Provider,
        summary_model: str,
        provider_name: str,
        store: Store,
        confirm: Callable[[str], bool],
        context_window: int,
        forking: Forking = IN_CHAT,  # a session open elsewhere: fork it or why not; 'fork N'
        windows: WindowBook | None = None,  # learned windows (None: in memory only)
        memory: Memory | None = None,  # facts and episodes across sessions (memory/)
        # the memory layers of each request; None: from ``memory``'s store (off without it)
        layers: MemoryLayers | None = None,
        ask_compact: CompactAsker | None = None,  # auto_compact: ask (None: nobody to ask)
        instructions: Loader | None = None,  # AGENTS.md & co (None: from the working dir)
        hooks: Hooks | None = None,  # the user's commands at fixed points (tools/hooks.py)
        # the chat's model, shared with what follows it (memory extraction); None: made here
        current: CurrentModel | None = None,
        save_failed: bool = False,  # the store could not be set up: each save tries again
    ) -> None:
        model = engine_settings.model
        self.config, self.agent, self.store = config, agent, store
        self.provider_name, self.confirm, self.forking = provider_name, confirm, forking
        # one owner of "now" for the session: the engine's clock dates its turns, so it also
        # dates the session's start (the file header, the restoration a child gets)
        self.clock = engine_settings.clock
        self.state = SessionState(started=self.clock(), save_failed=save_failed)
        self.finished = False
        self.recorded = 0  # user messages recorded: a front end can check one was kept
        self.undo_point: UndoPoint | None = None  # what the last compact replaced
        self.server_down: ServerDownError | None = None  # the last answer found none listening
        self.unusable: str | None = None  # why the last answer's model cannot be asked again
        self.memory, self.layers = memory, memory_layers(config, memory, layers)
        self.persona = engine_settings.system  # the agent's system prompt (skills included)
        self.instructions = SessionInstructions(instructions or loader(
            config.instructions, window=lambda: self.budget.window))
        self.hooks = SessionHooks(hooks, store)
        self.counter = TokenCounter(model)
        budget = self._budget(context_window)
        self.output = ToolOutput(config.tools, self.counter, context_window)
        self.engine = build_engine(engine_settings, config, self.counter, self.output,
                                   self._tool_room, budget.max_output_tokens,
                                   budget.ack_tokens)
        self.current = current or CurrentModel(
            name=model, provider=engine_settings.provider, provider_name=provider_name,
            prices=config.prices, book=windows or WindowBook(None), base_url=agent.base_url,
            window=context_window)
        self._own: tuple[str | None, Memory | None] = (None, memory)  # (see _resize)
        self.current.follow_window(self._resize)
        asked(self.current.windows, self.current.provider)  # asked in the background
        same = summary_provider is engine_settings.provider and summary_model == model
        summarizer = Summarizer(summary_provider, model=summary_model, config=config.summary,
                                budget=budget, counter=self.counter, engine=agent.compaction.engine,
                                follows=self.current if same else None)
        self.compactor = Compactor(
            config=config, agent=agent, engine=self.engine, counter=self.counter,
            summarizer=summarizer, current=self.current, budget=budget, ask=ask_compact,
            around=Surroundings(store, memory, self.continue_in,
                                lambda state: self.recorder.retry(state, self.cost()),
                                self.hooks))
        self.recorder = Recorder(store, agent, self.current)
        self.switch = ModelSwitch(config, agent, self.engine, self.counter, self.current)
        self._ran: list[SessionState] = []  # every state the chat went on in (see run_calls)
        self.continue_in(self.state, None)

    def continue_in(self, state: SessionState, parent_id: str | None) -> None:
        """The session goes on in ``state`` (a child, or the first), in a new working context:
        the archive tool reads the parent ``parent_id`` (None: none), the memory tool is
        offered as the memory is now, and the system prompt freezes the user profile as it is
        now (until the next compaction or resume, so the request prefix stays byte-identical;
        see memory/layers.py), and so do the project instructions (session/instructed.py)."""
        self.state = state
        if all(s is not state for s in self._ran):
            self._ran.append(state)
        self.instructions.refresh("at a new context: compaction, resume or fork")
        self.hooks.new_context(state)  # SessionStart before its first message
        self._own = (parent_id, self.memory)
        self.engine.new_context(self._system(), *session_tools(
            self.engine, self.output, self.store, self.memory, state, parent_id,
            self.budget.window, self.counter.count_text), cache_key=state.cache_key)

    def _system(self, refreeze: bool = True) -> str:
        """The stable prompt: persona, instructions, profile (frozen again: ``refreeze``)."""
        return stable_prompt(self.persona, self.instructions.current, self.layers,
                             self.budget.window, self.counter.count_text, refreeze)

    def _block(self, text: str) -> str:
        """The context block of the user message ``text``: the memory's and what the hooks
        added ("" with memory off and no hook context)."""
        block = "" if self.layers is None else self.layers.block(
            text, self.budget.window, self.counter.count_text)
        return with_hook_context(block, self.hooks.added)

    def _budget(self, window: int) -> policy.Budget:
        cfg = self.config.session
        return policy.compute_budget(window, self.agent.max_output_tokens,
                                     cfg.compact_threshold, cfg.safety_margin_tokens)

    def _resize(self, window: int) -> None:
        """The model's window turned out smaller: budgets follow (see windows.py), and the
        session's own tools are fitted to it again (a 2K window stated by the server after
        the context began must not carry the tools sized for the window assumed)."""
        budget = self._budget(window)
        self.compactor.resize(budget)
        self.engine.limit_output(budget.max_output_tokens, budget.ack_tokens)
        self.output.resize(window)
        parent_id, memory = self._own
        self.engine.new_context(self.engine.context.system, *session_tools(
            self.engine, self.output, self.store, memory, self.state, parent_id, window,
            self.counter.count_text))

    # ------------------------------------------------------------------ the model
    def use_model(self, model: str) -> int:
        """``model NAME``: ``model`` answers from the next message on (see ModelSwitch.use);
        its window. UsageError for a model the provider does not serve."""
        window = self.switch.use(model)
        return self.budget.window if window is None else window

    def model_for_turn(self, model: str, why: str) -> AbstractContextManager[str]:
        """``model`` answers the turns run inside, then the chat's model again (see
        ModelSwitch.for_turn); yields the chat's model."""
        return self.switch.for_turn(model, why)

    @property
    def windows(self) -> WindowLearner:
        """The window learner of the model now current."""
        return self.current.windows

    # ------------------------------------------------------------------ figures
    # (what its Compactor holds, read through the session: budget, guards, summarizer, the
    # automatic compaction mode, the next prompt's estimate)
    @property
    def budget(self) -> policy.Budget:
        return self.compactor.budget

    @property
    def guards(self) -> PolicyState:
        return self.compactor.guards

    @property
    def summarizer(self) -> Summarizer:
        return self.compactor.summarizer

    @property
    def auto_mode(self) -> AutoCompact:
        """Automatic compaction in this session: on, off or ask (the config's, unless the
        chat changed it)."""
        return self.compactor.auto_mode

    @property
    def auto_override(self) -> AutoCompact | None:
        return self.compactor.auto_override

    def set_auto(self, mode: AutoCompact) -> AutoCompact:
        """``auto on|off|ask``: see Compactor.set_auto; the mode it had."""
        return self.compactor.set_auto(mode)

    @property
    def context_tokens(self) -> int | None:
        """THE context size shown (toolbar, ``context``): the next prompt's estimate, the
        figure automatic compaction compares with its budget; None before the first message
        (nothing counted yet: the tokenizer loads after the first prompt appears)."""
        context = self.compactor.engine.context
        if context.last_prompt_tokens is None and not context.messages:
            return None
        # the toolbar asks at every keystroke: counted again only when the context changed
        key = (id(context), len(context.messages), context.last_prompt_tokens, context.shrunk,
               context.messages[-1].content if context.messages else "")
        cached: tuple[object, int] | None = getattr(self, "_context_tokens", None)
        if cached is None or cached[0] != key:
            cached = (key, self.estimate())
            self._context_tokens = cached
        return cached[1]

    def estimate(self, pending: Sequence[Message] = ()) -> int:
        """The size of the next prompt (see context.estimate_prompt)."""
        return self.compactor.estimate(pending)

    def cost(self) -> float | None:
        """Dollars billed in this session, from its call records (see Compactor.cost), the
        memory's extraction calls made since the last look included (billed to it now)."""
        self.compactor.bill_memory(self.state)
        return self.compactor.cost(self.state)

    def run_calls(self) -> list[Call]:
        """Every model call made in this run, in every session the chat went on in
        (restorations and summaries included): the records the session figures sum too."""
        self.compactor.bill_memory(self.state)
        ran = self._ran if any(s is self.state for s in self._ran) else [*self._ran, self.state]
        return [call for state in ran for call in state.calls]

    def _tool_room(self) -> int:
        """Tokens a new tool result may take in the current tool loop (see ToolOutput)."""
        return self.output.room(self.budget.tokens, self.estimate())

    def list_sessions(self) -> tuple[list[SessionInfo], list[tuple[str, str]]]:
        listing = self.store.list_sessions()  # the current one too (THE numbering)
        return list(listing.sessions), list(listing.problems)

    def sessions_page(self, limit: int | None) -> Page:
        """The ``limit`` most recent saved sessions (None: all), this one too (THE numbering)."""
        return self.store.page(limit)

    def search(self, text: str) -> list[Hit] | None:
        """The saved sessions matching ``text``, best first; None when nothing is kept to
        search (--no-save); StoreError for text with no word to look for."""
        return self.store.search(text)

    def set_title(self, text: str) -> str:
        """Give this session the title ``text`` (one line, trimmed: see titles.py), in its
        header now or, before its file exists, when the file is made. UsageError when the
        text is empty; StoreError when the file cannot be rewritten."""
        return self.state.set_title(text)

    @property
    def title(self) -> str | None:
        """The title this session has so far: the user's, else its first query's first line."""
        return session_title(self.state)

    # ------------------------------------------------------------------ a turn
    def turn(self, text: str, handed: Handed | None = None,
             attached: tuple[Image, ...] = (), typed: str = "") -> Flow:
        """Send one user message (cleaned: see rollchat.text.normalize), stream the answer, save the
        turn. Compacts first when the plan says so, and once more (then sends again) if the
        provider still answers that the context is too long. ``handed``: the context another
        agent's session handed over (see handoff.py), sent before the message in the same
        user message and kept as the turn's ``Context`` in the transcript. ``attached``: the
        images the user attached (``attach``), sent with the message. ``typed``: the saved
        prompt's command the user typed (``text`` is its prompt), kept beside it."""
        text = clean(text)
        sent, note = (text, "") if handed is None else (handed.wrap(text), handed.note)
        asked = Turn("query", self.state.queries + 1, self.clock(), text, (), status="interrupted",
                     context=note, attached=attached, typed=typed)  # on disk as hooks run
        refused = yield from self.hooks.prompt(self.state, text,
                                               lambda: self.ensure_file(asked))
        if refused is not None:  # a UserPromptSubmit hook: kept in the transcript, not sent
            yield from self._record(Turn("query", 0, self.clock(), text, (), status="unanswered",
                                         error=refused, context=note, attached=attached,
                                         typed=typed),
                                    failure_hint(None, False))
            return
        block = self._block(text)
        pending = Message("user", with_block(block, sent), images=attached)
        if self.layers is not None:
            for problem in self.layers.take_problems():
                yield Notice("warning", problem)
        yield from self.instructions.told()
        error = self.compactor.unsendable(pending)  # too big even for an empty context
        if error is not None:
            turn = Turn("query", 0, self.clock(), text, (), status="unanswered", error=error,
                        context=note, attached=attached, typed=typed)
            yield from self._record(turn, failure_hint(None, True, tools=error))
            return
        block, pending = yield from self._before_sending(text, sent, block, pending)
        yield from self.instructions.told()  # an automatic compaction read the instructions again
        yield AnswerStarted(self.agent.name)
        # the turn's pipeline, one named step each: the engine's call with its tool loop;
        # the turn so far on disk after each tool call; what an answer cut off by the window
        # taught; a refusal for a context too long answered again after a compaction
        flow = self.engine.chat(sent, block, attached)
        flow = checkpointed(flow, lambda so_far: self._write_pending(replace(so_far, typed=typed)),
                            self.engine.turn_so_far, self.state.queries + 1, text, note, block,
                            clock=self.clock)
        answer: Answer = yield from cut_off(self.windows, self.engine, flow)
        if answer.turn.status == "unanswered" and isinstance(answer.error, ContextTooLongError):
            answer = yield from after_refusal(self.compactor, self.state, answer, pending,
                                              sent, block)
        if self.layers is not None and answer.turn.status != "unanswered":
            self.layers.sent(self.counter.count_text)
        self.server_down = answer.error if isinstance(answer.error, ServerDownError) else None
        if self.server_down is not None:  # back, it may serve another model or window
            self.windows.down()
        self.unusable = unusable(answer.error, self.engine.model)  # said once, by this answer
        turn = answer.turn if handed is None else replace(answer.turn, user=text, context=note)
        turn = replace(turn, typed=typed)
        turn = self.switch.noted(turn)  # a model switched since the last turn (use_model)
        hint = None if answer.turn.status != "unanswered" else failure_hint(
            answer.error, False, auto_off=self.auto_mode == "off",
            key_var=self.agent.api_key_env or KEY_ENV.get(self.provider_name),
            model=self.engine.model)
        yield from self.hooks.told()  # a tool hook that failed or timed out
        yield from self._record(turn, hint, answer.calls)
        yield from self.hooks.stop(self.state)  # the answer is over (Claude Code's Stop)

    def _before_sending(self, text: str, sent: str, block: str, pending: Message,
                        ) -> Generator[Event, None, tuple[str, Message]]:
        """The plan before a message is sent: compact first (the message then gets the new
        context's block), or start a summary in the background; (block, pending) to send."""
        compacted = yield from windowed(self.windows, self.current.provider, self.compactor,
                                        self.state, pending)
        if compacted:  # a new context: its own profile and time, nothing sent yet
            again = self._block(text)
            if again != block:
                block, pending = again, replace(pending, content=with_block(again, sent))
        return block, pending

    def _record(self, turn: Turn, hint: str | None, made: Sequence[Usage] = ()) -> Flow:
        """Keep ``turn`` with a record of each model call it made (``made``: their usages,
        one per tool round; () for none), answered by the model now current."""
        turn = replace(turn, number=self.state.queries + 1)
        calls = self.compactor.priced("turn", turn, made)
        self.state.add(turn, calls)
        self.compactor.counted()
        yield from self._save()  # on disk before the footer tells the user it is done
        self.recorded += 1
        yield TurnFinished(turn, hint, cost_of(calls), self.current.cost_unknown)

    def _save(self) -> Flow:
        yield from self.recorder.save(self.state, self.cost(), self.engine.context.reported_size)

    def _write_pending(self, turn: Turn) -> Flow:
        yield from self.recorder.write_pending(self.state, turn, self.cost())

    def unsent(self, text: str) -> Flow:
        """Keep a message the chat ended before sending (a signal right after Enter)."""
        yield from self._record(
            Turn("query", 0, self.clock(), clean(text), (), status="interrupted"), None)

    def record_entry(self, turn: Turn) -> Flow:
        """Keep an entry that is not a query (a handoff to another agent) in the transcript."""
        self.state.add(turn)
        yield from self._save()

    # ------------------------------------------------------------------ the engine, read
    # (what the in-chat commands ask of the chat's engine: the UI never holds it)
    @property
    def model(self) -> str:
        """The model the chat's requests go to now."""
        return self.engine.model

    @property
    def system_prompt(self) -> str:
        """The working context's system prompt (the request's cached prefix starts with it)."""
        return self.engine.context.system

    def think(self, setting: ThinkingSetting) -> None:
        """``thinking on|off|auto|N``: how much the model thinks from the next message on."""
        self.engine.think(setting)

    @property
    def gate(self) -> Gate:
        """The approval gate the chat's tool calls pass (a saved prompt's commands too)."""
        return self.engine.gate

    def allowing(self, patterns: Sequence[str]) -> AbstractContextManager[None]:
        """``patterns`` allowed too while the block runs (a saved prompt's allowed tools)."""
        return self.engine.gate.allowing(patterns)

    def tools_view(self) -> ToolsView:
        """The ``tools`` listing (see session/tools_view.py)."""
        return tools_view(self.engine)

    def restart_tool_server(self, name: str) -> str | None:
        """``tools restart NAME``: what to tell the user, None when no server is so named."""
        return restart_server(self.engine, name)

    def handed_over_from(self, source: str | None) -> None:
        """The conversation was handed here from the session ``source`` (an id): the file
        made next names it (Handed From); a session with a file, or handed over already,
        keeps what it has."""
        if self.state.live is None and self.state.handed_from is None:
            self.state.handed_from = source

    def ensure_file(self, pending: Turn | None = None) -> Generator[Event, None, str | None]:
        """Make the session's file now (normally made at its first query), holding the turn
        in progress ``pending`` (see Recorder.ensure_file); its id, or None when nothing is
        saved."""
        return (yield from self.recorder.ensure_file(self.state, pending))

    # ------------------------------------------------------------------ other sessions
    def compact(self, focus: str | None = None, undoable: bool = False) -> Flow:
        """``compact``: summarize, save and continue in a child session (``undoable``: what
        it replaces is remembered, so that ``undo`` can put it back)."""
        state, focus = self.state, focus and clean(focus)
        if not (yield from self.hooks.pre_compact(state, "manual", focus)):
            return  # a PreCompact hook cancelled it (and said why)
        point = (ops.undo_point(state, self.store, self.engine, self.guards) if undoable
                 else None)
        self.undo_point = None
        yield from self.compactor.compact(state, focus)
        self.undo_point = point and ops.undoable(point, self.state)
        if self.state is not state:
            yield from self.hooks.post_compact("manual")
        yield from self.instructions.told()

    def undo(self) -> Flow:
        """Go back to the session before the last ``compact`` (see ops.undo)."""
        point = self.undo_point
        self.state = ops.undo(point, self.state, self.store, self.engine)
        assert point is not None
        self.compactor.reset(point.guards)
        self.undo_point = None
        if self.memory is not None:  # the episode its summary left goes with it
            yield from self.memory.undone(self.state.session_id)
        yield Notice("info", f"Undone: back in {self.state.session_id or 'the session'} as it "
                             "was before 'compact' (its summary removed; the new session was "
                             "never saved).")

    def reload_instructions(self) -> Flow:
        """``instructions reload``: the files read again now (a change: one cache miss)."""
        self.instructions.refresh("by `instructions reload`")
        self.engine.new_context(self._system(refreeze=False))
        yield from self.instructions.told()

    def resume(self, ref: str, fork: bool = False, *, as_chosen: bool = False) -> Flow:
        """Continue a saved session from its summary, in a new linked session (``fork``: a
        fork, no ``Continued In`` link; ``as_chosen``: no offer of its chain's newest)."""
        resumed = yield from resume(self.compactor, self.state, ref, fork=fork,
                                    confirm=self.confirm, forking=self.forking,
                                    as_chosen=as_chosen)
        if resumed:
            self.undo_point = None
            self.engine.gate.new_session()  # "always" was for the session before
        yield from self.instructions.told()

    def fork(self, ref: str | None = None) -> Flow:
        """A new session from a summary, the original left open (no ``Continued In`` link; its
        header says ``Forked From``): of the saved session ``ref``, or of the current one (saved
        with its summary first, as ``exit`` does)."""
        if not ref:
            self.undo_point = None
            yield from ops.fork(self.compactor, self.state)
            self.engine.gate.new_session()
            return
        info = self.store.resolve(ref, self.state.session_id)
        yield from self.resume(info.session_id, fork=True)
        if self.state.resumed_from == info.session_id:
            yield Notice("info", f"Forked {info.session_id}: this is a new session from its "
                                 f"summary; {info.session_id} itself is left as it was.")

    def clear(self) -> Flow:
        """A fresh session: no parent link, nothing carried (see ops.clear)."""
        self.state = state = yield from ops.clear(self.compactor, self.state)
        self.engine.clear()
        self._own = (None, None)
        self.engine.new_context(self.engine.context.system, *session_tools(  # the archive only
            self.engine, self.output, self.store, None, state, None, self.budget.window,
            self.counter.count_text), cache_key=state.cache_key)
        self.undo_point, self.hooks.due = None, "clear"
        self.engine.gate.new_session()
        yield Notice("info", "Cleared: a fresh session, with no parent and nothing carried over.")

    def show_summary(self) -> Flow:
        """The summary this session was restored from (what the model was given)."""
        yield from ops.show_summary(self.state)

    def edit_summary(self, edit: Callable[[str], str]) -> Flow:
        """``summary edit``: the restored summary changed in ``edit`` (see ops.edit_summary)."""
        yield from ops.edit_summary(self.state, self.engine, self.store, self.confirm, edit)

    # ------------------------------------------------------------------ memory
    def _memory(self) -> Memory:
        if self.memory is None:
            raise UsageError("memory is off (memory.enabled is false, --no-memory or --no-save)")
        return self.memory

    def remember(self, text: str) -> Flow:
        """``remember TEXT``: keep a fact (see memory/keeper.py)."""
        state = self.state
        yield from self._memory().remember(clean(text), state.session_id,
                                           state.queries or None)

    def forget(self, fact_id: int) -> Flow:
        yield from self._memory().forget(fact_id)

    def extract_memory(self) -> bool:
        """Facts from the latest turns, in the background (the REPL calls this when the chat
        is idle); their events come from ``take_memory_events``. False when nothing started:
        nothing new, an extraction under way, or memory off."""
        if self.memory is None or self.finished:
            return False
        return self.memory.start(self.state.turns, self.state.session_id, queue=False)

    def take_memory_events(self) -> list[Event]:
        """What the background extractions found since the last call (to draw)."""
        return self.memory.take() if self.memory is not None else []

    # ------------------------------------------------------------------ exit
    def exit(self, within: float | None = None, how: ExitSummary | None = None) -> Flow:
        """Save with a summary (``within``: see Summarizer; ``how``: the model's, the local
        one or none, else as ``summary.on_exit`` says). Safe to call twice."""
        if self.finished:
            return
        self.finished, state = True, self.state
        yield from self.recorder.retry(state, self.cost(), self.engine.context.reported_size)
        kept = self.config.session.auto_save  # off (--no-save): a summary nobody would read
        how = how or exit_summary(self.config.summary.on_exit, state.turns,
                                  continued=state.parent_summary is not None)
        if state.queries and not state.save_failed and kept and how == "skip":
            yield Notice("info", SKIPPED)
            if self.memory is not None:
                yield from self.memory.at_summary(state.turns, state.session_id, None,
                                                  ending=True, within=within)
                if self.compactor.bill_memory(state) and state.live is not None:
                    state.live.set_totals(state.queries, state.billed,  # (best effort)
                                          self.engine.context.reported_size, self.cost())
        elif state.queries and not state.save_failed and kept:
            if self.server_down is not None:  # said once, by the answer: no second wait
                self.summarizer.skip_model(self.engine.provider, "nothing listened at its server")
            elif self.unusable is not None:  # said once, by the answer: not a second 401
                self.summarizer.skip_model(self.engine.provider, self.unusable)
            yield from self.compactor.finalize(state, within=within, ending=True,
                                               local=how == "local")
        elif self.memory is not None and not state.queries:
            # nothing to summarize (a child with no question yet, after a compaction or a
            # resume): the extraction its parent left in the background gets the exit's
            # deadline (Ctrl-C skips it), past which the rules take the parent's turns
            yield from self.memory.at_summary(state.turns, state.session_id, None,
                                              ending=True, within=within)
            self.compactor.bill_memory(state)
        yield from self.hooks.end(state, "exit")
        state.close()
        yield ended(state, self.cost(), self.run_calls(), priced=self.current.price is not None,
                    in_memory=self.store.location == NO_SAVE_LOCATION,
                    unpriced_model=self.current.name if self.current.cost_unknown else None)
