"""The terminal layer, the only importer of rich and prompt_toolkit (cli/ draws through it):
``app`` adapts a Session to the screen, ``repl`` reads input, ``render`` draws, ``commands``
holds the in-chat commands."""
