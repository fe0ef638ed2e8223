"""The command line: one Typer app (main), its subcommands registered explicitly, one option set."""
