"""Entry point for ``rollchat`` and ``python -m rollchat``; ``--version``, a cached
``compact ID --json``, ``sessions`` and ``search`` answer before typer is imported, and the
subcommands are registered only when the command line may name one."""

from __future__ import annotations

import sys


def main() -> None:
    if sys.argv[1:] == ["--version"]:
        from rollchat import __version__
        print(f"rollchat {__version__}")
        return
    if sys.argv[1:2] == ["compact"]:  # scripts call it often: from its cache, before typer
        from rollchat.cli.compact_cached import answered

        if answered(sys.argv[2:]):
            return
    if sys.argv[1:2] in (["sessions"], ["search"]):  # over thousands of sessions: as quick
        from rollchat.cli.listing import answered as listed

        if listed(sys.argv[1], sys.argv[2:]):
            return
    from rollchat.cli.agents import alias_args
    from rollchat.cli.app import build_cli
    from rollchat.cli.argv import chat_args, chat_only
    from rollchat.cli.logs import log_to_file

    log_to_file()  # library warnings go to the log file, never onto the chat's screen

    args = alias_args(chat_args(sys.argv[1:]))  # rollchat NAME: an agent saved by `agents add`
    build_cli(subcommands=not chat_only(args))(args=args, prog_name="rollchat")


if __name__ == "__main__":
    main()
