"""The chat's command line: ``rollchat [OPTIONS]`` (the app's callback, whose options also count
for the subcommand after them), and ``pick`` and ``fork``, which start the chat from a saved
session. What the chat is built from lives in cli/start.py (``start_chat``)."""

from __future__ import annotations

from dataclasses import replace
from enum import Enum
from pathlib import Path
from typing import Annotated, NoReturn, Optional

import typer

from rollchat import __version__
from rollchat.cli.options import (
    AgentOpt,
    ChatFlags,
    ConfigOpt,
    Given,
    ModelOpt,
    SessionArg,
    SessionsDirOpt,
    TrustInputOpt,
    YesOpt,
    fail,
    given,
)
from rollchat.errors import ConfigError, RollchatError, UsageError
from rollchat.providers import PROVIDER_CHOICES

# Built from the registry's names; mypy cannot read members of an Enum built this way.
ProviderChoice = Enum("ProviderChoice", {n: n for n in PROVIDER_CHOICES}, type=str)  # type: ignore[misc]


def _version(value: bool) -> None:
    if value:
        print(f"rollchat {__version__}")
        raise typer.Exit()


ProviderOpt = Annotated[
    Optional[ProviderChoice],  # noqa: UP045 - typer needs Optional on 3.10
    typer.Option(help="Model provider (auto picks by the API keys set)."),
]
BaseUrlOpt = Annotated[Optional[str],  # noqa: UP045
                       typer.Option("--base-url", help="OpenAI-compatible server URL.")]
NoSaveOpt = Annotated[bool, typer.Option("--no-save", help="Write nothing to disk.")]
ResumeOpt = Annotated[
    Optional[str],  # noqa: UP045
    typer.Option("--resume", metavar="[SESSION]", help="Start by resuming SESSION (its "
                 "number in 'sessions', its id or an id prefix); with no value, choose it in "
                 "a picker (as 'rollchat pick'). A session continued elsewhere already offers "
                 "the newest of its chain (without a terminal, or with --yes, that newest is "
                 "resumed; '--fork SESSION' branches off SESSION itself)."),
]
ForkOpt = Annotated[Optional[str], typer.Option(  # noqa: UP045
    "--fork", metavar="SESSION", help="Start in a new session made from SESSION's summary "
    "(its number in 'sessions', its id or an id prefix), SESSION left as it is: an older "
    "state of a chain, or a session open elsewhere (as 'rollchat fork SESSION'; with -p, "
    "one question).")]
ContinueOpt = Annotated[bool, typer.Option(
    "--continue", "-c", help="Start by resuming the session used last: the agent's own, "
    "else any agent's (which asks first).")]
PickOpt = Annotated[bool, typer.Option(  # what a bare --resume becomes (argv.chat_args)
    "--pick", hidden=True, help="Choose the session to resume in a picker.")]
AgentFileOpt = Annotated[
    Optional[Path],  # noqa: UP045
    typer.Option("--agent-file", help="An agent file (Python): its settings and tools. "
                 "Also: rollchat path/to/agent.py"),
]
ShowToolsOpt = Annotated[bool, typer.Option(
    "--show-tools", help="Print the full arguments and results of tool calls.")]
NoForkOpt = Annotated[bool, typer.Option(
    "--no-fork", help="Refuse to resume a session open in another rollchat process "
    "(instead of continuing in a fork).")]
PrintOpt = Annotated[Optional[str], typer.Option(  # noqa: UP045
    "--print", "-p", metavar="[PROMPT]", help="Answer PROMPT once and exit, printing only the "
    "answer (see docs/oneshot.md). With no PROMPT it is read from stdin; with PROMPT, piped "
    "stdin is context for it.")]
PrintStdinOpt = Annotated[bool, typer.Option(  # what a bare -p becomes (argv.print_args)
    "--print-stdin", hidden=True, help="Answer the prompt read from stdin once and exit.")]


class OutputFormat(str, Enum):
    TEXT = "text"
    JSON = "json"
    STREAM_JSON = "stream-json"


OutputFormatOpt = Annotated[OutputFormat, typer.Option(
    "--output-format", help="With -p: text (the answer), json (one object) or stream-json "
    "(one event per line).")]
class ExitSummary(str, Enum):
    AUTO = "auto"
    MODEL = "model"
    LOCAL = "local"
    SKIP = "skip"


ExitSummaryOpt = Annotated[Optional[ExitSummary], typer.Option(  # noqa: UP045
    "--exit-summary", help="How the chat's exit summarizes, this run: auto (the model's, the "
    "local one for a trivial session), model, local (no model call) or skip (none). "
    "Default: summary.on_exit.")]
NoExitSummaryOpt = Annotated[bool, typer.Option(
    "--no-exit-summary", help="Write no summary at exit (as --exit-summary skip): resuming "
    "the session summarizes it then.")]
NoMemoryOpt = Annotated[bool, typer.Option(
    "--no-memory", help="No memory this run: no facts recalled, none extracted (no "
    "extraction calls).")]
VersionOpt = Annotated[bool, typer.Option("--version", callback=_version, is_eager=True,
                                          help="Show the version and exit.")]


def chat_command(
    ctx: typer.Context,
    agent: AgentOpt = None,
    provider: ProviderOpt = None,
    model: ModelOpt = None,
    base_url: BaseUrlOpt = None,
    config: ConfigOpt = None,
    sessions_dir: SessionsDirOpt = None,
    no_save: NoSaveOpt = False,
    resume: ResumeOpt = None,
    fork: ForkOpt = None,
    continue_last: ContinueOpt = False,
    pick: PickOpt = False,
    yes: YesOpt = False,
    trust_input: TrustInputOpt = False,
    agent_file: AgentFileOpt = None,
    show_tools: ShowToolsOpt = False,
    no_fork: NoForkOpt = False,
    prompt: PrintOpt = None,
    prompt_stdin: PrintStdinOpt = False,
    output_format: OutputFormatOpt = OutputFormat.TEXT,
    exit_summary: ExitSummaryOpt = None,
    no_exit_summary: NoExitSummaryOpt = False,
    no_memory: NoMemoryOpt = False,
    version: VersionOpt = False,
) -> None:
    """Start the chat (offline model when no API key is configured)."""
    starts = tuple(name for name, on in (("--resume", resume is not None and not pick),
                                         ("--continue", continue_last),
                                         ("--fork", fork is not None),
                                         ("--resume (no value)", pick)) if on)
    flags = ChatFlags(agent=agent, provider=provider.value if provider else None, model=model,
                      base_url=base_url, no_save=no_save, yes=yes, trust_input=trust_input,
                      no_fork=no_fork, agent_file=agent_file, show_tools=show_tools,
                      exit_summary=_exit_summary(exit_summary, no_exit_summary),
                      no_memory=no_memory)
    before = Given(config=config, sessions_dir=sessions_dir, starts=starts, chat=flags)
    if ctx.invoked_subcommand is not None:  # `rollchat --config X sessions`: X still counts
        _not_before(ctx.invoked_subcommand, prompt is not None or prompt_stdin, fork)
        ctx.obj = before
        return
    if len(starts) > 1:
        fail(f"{' and '.join(starts)} cannot be used together: give one")
    if fork is not None and not fork.strip():
        fail("--fork needs the session to branch off: --fork SESSION (its number in "
             "'sessions', its id or an id prefix)")
    if prompt is not None or prompt_stdin:
        one_shot(before, prompt, output_format.value, resume=resume, fork=fork,
                 choose="pick" if pick else "last" if continue_last else None)
    if output_format is not OutputFormat.TEXT:
        fail("--output-format goes with -p (a one-shot run): rollchat -p \"question\" "
             f"--output-format {output_format.value}")
    start(before, resume=resume, choose="pick" if pick else "last" if continue_last else None,
          fork=fork)


def _exit_summary(chosen: ExitSummary | None, off: bool) -> str | None:
    """The exit summary the flags ask for (None: the config's)."""
    if off and chosen not in (None, ExitSummary.SKIP):
        fail(f"--no-exit-summary and --exit-summary {chosen.value} disagree: give one")
    return "skip" if off else chosen.value if chosen is not None else None


def _not_before(command: str, prompt: bool, fork: str | None) -> None:
    """-p and --fork start the chat themselves: before a subcommand they would be dropped
    unseen (a script's question never asked), so they are a usage error there."""
    if prompt and command == "fork":
        fail("-p goes with --fork, not the 'fork' command: rollchat -p \"question\" --fork "
             "SESSION")
    if prompt:
        fail(f"-p answers one question in the chat, not with '{command}': give it alone "
             "(rollchat -p \"question\")")
    if fork is not None:
        fail(f"--fork starts the chat from a session, not with '{command}': rollchat --fork "
             f"{fork}")


def start(before: Given, *, resume: str | None = None, choose: str | None = None,
          fork: str | None = None) -> NoReturn:
    """Run the chat the options describe until it ends, then exit with its status: a mistake
    in the config or the options exits 2 with one line, any other error 1."""
    from rollchat.cli.start import start_chat
    from rollchat.config.settings import ConfigOverrides

    flags = before.chat
    overrides = ConfigOverrides(agent=flags.agent, provider=flags.provider, model=flags.model,
                                base_url=flags.base_url, sessions_dir=before.sessions_dir,
                                no_save=flags.no_save, exit_summary=flags.exit_summary,
                                no_memory=flags.no_memory)
    try:
        code = start_chat(before.config, overrides, resume=resume, yes=flags.yes,
                          trust_input=flags.trust_input,
                          no_fork=flags.no_fork, agent_file=flags.agent_file,
                          show_tools=flags.show_tools, choose=choose, fork=fork)
    except (ConfigError, UsageError) as exc:
        fail(str(exc))
    except RollchatError as exc:
        fail(str(exc), 1)
    raise typer.Exit(code)


def one_shot(before: Given, prompt: str | None, output_format: str, *,
             resume: str | None, fork: str | None, choose: str | None) -> NoReturn:
    """Answer once (``-p``) and exit with its status (see cli/oneshot.py and docs/oneshot.md):
    a usage error exits 2 with one line."""
    from rollchat.cli.oneshot import USAGE, run_one_shot
    from rollchat.config.settings import ConfigOverrides

    if choose == "pick":
        fail("-p cannot choose a session in a picker: give --resume N|ID, or -c")
    flags = before.chat
    if flags.exit_summary is not None:
        fail("--exit-summary and --no-exit-summary are the chat's: -p writes the summary "
             "summary.one_shot names (local by default)")
    overrides = ConfigOverrides(agent=flags.agent, provider=flags.provider, model=flags.model,
                                base_url=flags.base_url, sessions_dir=before.sessions_dir,
                                no_save=flags.no_save, no_memory=flags.no_memory)
    try:
        code = run_one_shot(before.config, overrides, prompt=prompt, output_format=output_format,
                            resume=resume, last=choose == "last", yes=flags.yes,
                            trust_input=flags.trust_input,
                            agent_file=flags.agent_file, fork=fork)
    except (ConfigError, UsageError) as exc:
        fail(str(exc), USAGE)
    except RollchatError as exc:
        fail(str(exc), 1)
    raise typer.Exit(code)


def pick_command(
    ctx: typer.Context,
    sessions_dir: SessionsDirOpt = None,
    config: ConfigOpt = None,
) -> None:
    """Choose a saved session in a picker (type to filter; Enter resumes it, Esc cancels) and
    continue it in the chat. The chat's options go before 'pick': rollchat --yes pick."""
    before = given(ctx)
    if before.starts:
        fail(f"'pick' chooses the session itself: not with {before.starts[0]}")
    start(before.override(config=config, sessions_dir=sessions_dir), choose="pick")


def fork_command(
    ctx: typer.Context,
    session: SessionArg,
    agent: AgentOpt = None,
    model: ModelOpt = None,
    yes: YesOpt = False,
    sessions_dir: SessionsDirOpt = None,
    config: ConfigOpt = None,
) -> None:
    """Start the chat in a new session made from a saved session's summary, leaving that
    session open (its header gets no 'Continued In'; the new one says 'Forked From')."""
    before = given(ctx)  # the chat's options given before `fork` count too
    if before.starts:
        fail(f"'fork' chooses the session itself: not with {before.starts[0]}")
    flags = before.chat
    # (fork has never passed on --no-fork: a session resumed later in this chat forks)
    flags = replace(flags, agent=agent or flags.agent, model=model or flags.model,
                    yes=yes or flags.yes, no_fork=False)
    start(replace(before.override(config=config, sessions_dir=sessions_dir), chat=flags),
          fork=session)
