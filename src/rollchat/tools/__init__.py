"""What the agent may call: one ``Tool`` type (its spec for the model and the function that
runs it). The engine sees only ``Tool``; built-ins live in submodules (``archive``)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from rollchat.providers.base import ToolSpec

ARCHIVE_TOOL_NAME = "session_archive_read"


@dataclass(frozen=True)
class Tool:
    """A tool the agent may call: its spec for the model and the function that runs it."""

    spec: ToolSpec
    run: Callable[[Mapping[str, object]], str]
    companion: bool = False  # offered only when a tool that is not a companion is registered
