"""The command line: one Typer app (app.py) with every subcommand registered there, the chat's
options (chat.py), the options and config loader the commands share (options.py)."""
