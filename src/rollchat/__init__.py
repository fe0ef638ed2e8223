"""rollchat: a terminal chat loop for LLM agents that never runs out of context."""

__version__ = "0.1.0"

# Set by the entry point (``__main__``) before it imports ``rollchat.cli.main``: the subcommands are
# then registered only when the command line may name one (see ``cli.chat_only``).
subcommands_later = False
