"""The session: its state and its flows (turn, compact, resume, fork, handoff, exit) as generators
of events."""
