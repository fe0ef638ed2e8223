"""A stdio MCP server's process, beside what the SDK does: the environment it inherits (TLS and
proxy settings, never API keys), its stderr kept as a bounded tail, and its process group."""

# The SDK gives a stdio child HOME, PATH, USER, SHELL, TERM and LOGNAME; a server behind a
# company proxy or with its own CA (npx, uvx, git, fetch) also needs the variables below, and
# nothing else of the parent's environment reaches it (API keys stay out).
#
# The SDK starts each server in its own session (process group) and kills that group when it
# stops a server that is still running; a server that exited by itself leaves its own children
# behind, so rollchat ends the group too once the connection is gone. The group is found by
# the stderr pipe rollchat gave the child (Linux: /proc); elsewhere only the SDK's stop applies.
# A descendant that left the group (setsid) is found by the mark in its environment (Linux);
# the mark is the connection's own (made with it, not read back from /proc), so even a
# server whose pid was not found is ended by it.

from __future__ import annotations

import contextlib
import os
import re
import secrets
import signal
import threading
import time
from collections.abc import Mapping
from pathlib import Path

from rollchat.tools.children import MARK, end_marked

PASSED_ON = ("SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE",
             "NODE_EXTRA_CA_CERTS", "NODE_USE_SYSTEM_CA", "PIP_CERT", "UV_NATIVE_TLS",
             "HTTPS_PROXY", "HTTP_PROXY", "NO_PROXY", "ALL_PROXY",
             "https_proxy", "http_proxy", "no_proxy", "all_proxy",
             "LANG", "LC_ALL", "LC_CTYPE", "TMPDIR", "TZ")
# What package managers read (npx, uvx, pip, pnpm, yarn: registry, index, cache, offline mode),
# passed on by prefix; a name that looks like a secret (npm_config__authToken,
# UV_INDEX_X_PASSWORD) or a URL with credentials in it is withheld.
PASSED_PREFIXES = ("npm_config_", "NPM_CONFIG_", "UV_", "PIP_", "PNPM_", "YARN_", "COREPACK_",
                   "XDG_")
_SECRET = re.compile(r"auth|key|token|secret|passw|credential|cookie", re.IGNORECASE)
_CREDENTIALS = re.compile(r"://[^/@\s]+@")
TAIL_BYTES = 16 * 1024  # the most of a server's stderr kept (its last bytes)


def child_env(parent: Mapping[str, str], own: Mapping[str, str],
              mark: str | None = None) -> dict[str, str]:
    """What a stdio server gets beside the SDK's few variables: TLS and proxy settings and
    the package managers' settings from ``parent``, then the server's own ``env`` entries
    (which win), and ``mark`` (a fresh one when None) as ``MARK``, which its descendants
    inherit (see ``end_server``)."""
    passed = {k: v for k, v in parent.items() if v and (k in PASSED_ON or (
        k.startswith(PASSED_PREFIXES) and not _SECRET.search(k)
        and not _CREDENTIALS.search(v)))}
    return {**passed, **own, MARK: mark or new_mark()}


def new_mark() -> str:
    return secrets.token_hex(8)


class StderrTail:
    """A pipe for a child's stderr, read by a thread that keeps only the last ``limit``
    bytes: a server that writes without end costs neither memory nor disk."""

    def __init__(self, limit: int = TAIL_BYTES) -> None:
        read, write = os.pipe()
        self.inode = os.fstat(read).st_ino
        self.writer = os.fdopen(write, "w", encoding="utf-8", errors="replace")
        self._limit = limit
        self._tail = bytearray()
        self.dropped = 0  # bytes read and not kept (before the tail)
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._read, args=(read,), daemon=True,
                                        name="rollchat-mcp-stderr")
        self._thread.start()

    def _read(self, fd: int) -> None:
        with contextlib.suppress(OSError), open(fd, "rb", buffering=0) as pipe:
            while chunk := pipe.read(65536):
                with self._lock:
                    self._tail += chunk
                    if len(self._tail) > 2 * self._limit:
                        self.dropped += len(self._tail) - self._limit
                        del self._tail[:-self._limit]

    def close_writer(self) -> None:
        """Our copy of the write end (the child has its own once it is spawned)."""
        with contextlib.suppress(OSError):
            self.writer.close()

    def finish(self, seconds: float) -> None:
        """Wait up to ``seconds`` for what the child wrote last to be read (its end)."""
        self._thread.join(seconds)

    def text(self) -> str:
        with self._lock:
            return bytes(self._tail[-self._limit:]).decode("utf-8", "replace")

    def last_line(self) -> str:
        lines = [line.strip() for line in self.text().splitlines()]
        return next((line for line in reversed(lines) if line), "")


def child_with_stderr(inode: int) -> int | None:
    """The process id of our child whose stderr is the pipe ``inode`` (Linux), or None."""
    wanted = f"pipe:[{inode}]"
    for children in Path("/proc/self/task").glob("*/children"):
        try:
            pids = children.read_text().split()
        except OSError:
            continue
        for pid in pids:
            with contextlib.suppress(OSError):
                if os.readlink(f"/proc/{pid}/fd/2") == wanted:
                    return int(pid)
    return None


def end_server(pgid: int | None, mark: str, grace: float = 1.0) -> None:
    """What a stdio server left once its connection is gone: SIGTERM to its process group
    ``pgid`` (when its pid was found), SIGKILL to what is left after ``grace``; then SIGKILL to
    everything that carries its ``mark`` (what it started in sessions of its own, setsid)."""
    if pgid is not None and pgid > 1 and pgid != os.getpgrp():  # never our own group
        _end_group(pgid, grace)
    end_marked(mark)


def _end_group(pgid: int, grace: float) -> None:
    try:
        os.killpg(pgid, signal.SIGTERM)
    except (ProcessLookupError, PermissionError):
        return
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        if not _group_alive(pgid):
            return
        time.sleep(0.05)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def _group_alive(pgid: int) -> bool:
    """Whether a member of the group is still running (zombies waiting to be reaped are not)."""
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, IndexError, ValueError):
            fields = stat.read_text().rsplit(")", 1)[1].split()
            if int(fields[2]) == pgid and fields[0] != "Z":
                return True
    if not Path("/proc/self").exists():
        try:
            os.killpg(pgid, 0)
        except (ProcessLookupError, PermissionError):
            return False
        return True
    return False
