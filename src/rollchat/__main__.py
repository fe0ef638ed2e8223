"""Entry point for ``rollchat`` and ``python -m rollchat``; ``--version`` answers before any
heavy import."""

from __future__ import annotations

import sys


def main() -> None:
    if sys.argv[1:] == ["--version"]:
        from rollchat import __version__
        print(f"rollchat {__version__}")
        return
    import rollchat

    rollchat.subcommands_later = True
    from rollchat.cli.main import app, chat_args, chat_only, register_subcommands

    args = chat_args(sys.argv[1:])
    if not chat_only(args):
        register_subcommands()
    app(args=args, prog_name="rollchat")


if __name__ == "__main__":
    main()
