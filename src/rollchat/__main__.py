"""Entry point for ``rollchat`` and ``python -m rollchat``; ``--version`` answers before any
heavy import."""

from __future__ import annotations

import sys


def main() -> None:
    if sys.argv[1:] == ["--version"]:
        from rollchat import __version__

        print(f"rollchat {__version__}")
        return
    from rollchat.cli import app, chat_args

    app(args=chat_args(sys.argv[1:]), prog_name="rollchat")


if __name__ == "__main__":
    main()
