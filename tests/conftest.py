"""Shared fixtures. The network guard makes any connection outside 127.0.0.1 fail loudly."""

from __future__ import annotations

import signal
import socket
from collections.abc import Iterator
from typing import Any

import pytest

# A shell that starts pytest in the background (``pytest &``) makes it ignore SIGINT, and
# Python then installs no KeyboardInterrupt handler: the tests that press Ctrl-C on this very
# process (os.kill(os.getpid(), SIGINT)) would test nothing. Give it the disposition it has
# when started from a terminal; the children the pty tests start reset theirs (e2e.py).
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

_real_connect = socket.socket.connect
_real_connect_ex = socket.socket.connect_ex
_LOCAL = {"127.0.0.1", "::1", "localhost"}


def _check(address: Any) -> None:
    if isinstance(address, tuple) and address and address[0] not in _LOCAL:
        raise RuntimeError(f"test tried to reach the network: {address!r}")


def _guarded_connect(self: socket.socket, address: Any) -> None:
    _check(address)
    _real_connect(self, address)


def _guarded_connect_ex(self: socket.socket, address: Any) -> int:
    _check(address)
    return _real_connect_ex(self, address)


@pytest.fixture(autouse=True)
def _no_network(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(socket.socket, "connect", _guarded_connect)
    monkeypatch.setattr(socket.socket, "connect_ex", _guarded_connect_ex)
    for var in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_BASE_URL",
                "ROLLCHAT_CONFIG", "ROLLCHAT_SESSIONS_DIR", "ROLLCHAT_PROVIDER",
                "ROLLCHAT_MODEL", "ROLLCHAT_BASE_URL", "ROLLCHAT_AGENT"):
        monkeypatch.delenv(var, raising=False)
    yield
