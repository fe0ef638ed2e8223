"""rollchat serving its saved sessions to other tools (the MCP server)."""
