"""Agents: agent files, skills, and equipping an agent with its tools."""
