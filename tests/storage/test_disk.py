"""Disk full (ENOSPC) and a read-only sessions directory: a clear message, the chat goes on in
memory, nothing already saved is truncated, a failed summary rewrite leaves the file intact.

The faults are injected by replacing the ``os`` module inside ``rollchat.storage.store`` with a
proxy
(root ignores directory permissions, so a chmod alone proves nothing here).
"""

from __future__ import annotations

import errno
import io
import os
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from typer.testing import CliRunner

import rollchat.storage.session_file
import rollchat.storage.store
from rollchat.cli.app import build_cli
from rollchat.config.settings import AgentConfig, Config, UIConfig
from rollchat.domain import Message
from rollchat.engine.core import EngineSettings
from rollchat.providers.base import ChatRequest, RetryPolicy
from rollchat.providers.offline import OfflineProvider
from rollchat.storage.store import SessionStore
from rollchat.storage.transcript import parse
from rollchat.ui.app import ChatApp
from rollchat.ui.render import Renderer
from rollchat.ui.repl import handle_line
from tests.drive import chat_app

SYSTEM = "You are a disk test assistant."


class FaultyOS:
    """The ``os`` module as ``rollchat.storage.store`` sees it, with injectable faults.

    ``space``: bytes that may still be written to files ``target`` accepts (None: unlimited);
    a write past it writes what fits, then fails with ENOSPC. ``fail_fsync``: fsync of a
    target file fails with EIO. ``readonly``: a directory where nothing can be created.
    """

    def __init__(self) -> None:
        self.space: int | None = None
        self.target: Callable[[Path], bool] = lambda path: True
        self.fail_fsync = False
        self.readonly: Path | None = None
        self._paths: dict[int, Path] = {}

    def __getattr__(self, name: str) -> Any:
        return getattr(os, name)

    def open(self, path: Any, flags: int, mode: int = 0o777, **kw: Any) -> int:
        where = Path(path)
        if self.readonly is not None and flags & os.O_CREAT and where.parent == self.readonly:
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(path))
        fd = os.open(path, flags, mode, **kw)
        self._paths[fd] = where
        return fd

    def close(self, fd: int) -> None:
        self._paths.pop(fd, None)
        os.close(fd)

    def access(self, path: Any, mode: int, **kw: Any) -> bool:
        if self.readonly is not None and Path(path) == self.readonly and mode & os.W_OK:
            return False
        return os.access(path, mode, **kw)

    def _hit(self, fd: int) -> bool:
        path = self._paths.get(fd)
        return path is not None and self.target(path)

    def write(self, fd: int, data: Any) -> int:
        if self.space is None or not self._hit(fd):
            return os.write(fd, data)
        if self.space <= 0:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        written = os.write(fd, bytes(data[: self.space]))
        self.space -= written
        return written

    def fsync(self, fd: int) -> None:
        if self.fail_fsync and self._hit(fd):
            raise OSError(errno.EIO, os.strerror(errno.EIO))
        os.fsync(fd)


@pytest.fixture
def fs(monkeypatch: pytest.MonkeyPatch) -> FaultyOS:
    proxy = FaultyOS()
    monkeypatch.setattr(rollchat.storage.store, "os", proxy)
    monkeypatch.setattr(rollchat.storage.session_file, "os", proxy)  # appends and header totals
    return proxy


@dataclass
class Recording:
    """The offline model, keeping every chat request."""

    inner: OfflineProvider
    requests: list[ChatRequest]
    name: str = "offline"

    def stream(self, request: ChatRequest) -> Any:
        if request.purpose == "chat":
            self.requests.append(request)
        events: Any = self.inner.stream(request)
        return events


@dataclass
class Chat:
    app: ChatApp
    buffer: io.StringIO
    provider: Recording
    root: Path

    @property
    def screen(self) -> str:
        return " ".join(self.buffer.getvalue().split())

    def say(self, line: str) -> None:
        assert handle_line(self.app, line) is False

    def files(self) -> list[Path]:
        return sorted(self.root.glob("*.md"))

    def sent(self) -> list[str]:
        """The user messages of the last chat request."""
        messages: tuple[Message, ...] = self.provider.requests[-1].messages
        return [m.content for m in messages if m.role == "user"]


def make_chat(tmp_path: Path) -> Chat:
    agent = AgentConfig(key="assistant", name="Assistant", provider="offline",
                        system_prompt=SYSTEM)
    config = Config(agents={"assistant": agent}, ui=UIConfig(offline_word_delay=0))
    buffer = io.StringIO()
    renderer = Renderer(Console(file=buffer, width=200, color_system=None,
                                force_terminal=False), interactive=False)
    provider = Recording(OfflineProvider(word_delay=0), [])
    root = tmp_path / "sessions"
    engine = EngineSettings(provider, model="offline", system=SYSTEM,
                    max_output_tokens=1024, temperature=None, retry=RetryPolicy(0, 0.0, 0.0))
    app = chat_app(config=config, agent=agent, engine_settings=engine, summary_provider=provider,
                  summary_model="offline", provider_name="offline", store=SessionStore(root),
                  renderer=renderer, confirm=lambda q: False, context_window=200_000)
    return Chat(app, buffer, provider, root)


# ---------------------------------------------------------------- ENOSPC while appending


def test_enospc_while_appending_keeps_saved_turns(tmp_path: Path, fs: FaultyOS) -> None:
    chat = make_chat(tmp_path)
    chat.say("my database is postgres")
    chat.say("my queue is rabbitmq")
    [path] = chat.files()
    saved = path.read_bytes()
    fs.space = 40  # part of the next block fits, then the disk is full
    chat.say("my cache is redis")
    assert "No space left on device" in chat.screen
    assert "the chat goes on in memory" in chat.screen
    assert path.read_bytes() == saved  # the half-written block was cut off again
    fs.space = 0  # still full: the chat goes on in memory, the stop said once
    chat.say("which cache did I mention?")
    assert "my cache is redis" in chat.sent()  # the unsaved turn is still in the context
    assert "redis" in chat.app.session.state.turns[-1].assistant
    assert chat.app.session.state.queries == 4
    assert chat.screen.count("No space left on device") == 1
    chat.app.exit()
    assert "Goodbye!" in chat.screen
    assert f"Session {path.stem} holds only the turns saved before the error" in chat.screen
    assert "Saved session" not in chat.screen  # it was not: the exit says so
    assert "Saving again" not in chat.screen
    assert path.read_bytes() == saved
    transcript = parse(saved.decode())
    assert [t.user for t in transcript.turns] == ["my database is postgres",
                                                  "my queue is rabbitmq"]


def test_saving_resumes_when_space_is_back(tmp_path: Path, fs: FaultyOS) -> None:
    chat = make_chat(tmp_path)
    chat.say("my database is postgres")
    [path] = chat.files()
    fs.space = 40
    chat.say("my queue is rabbitmq")
    chat.say("my cache is redis")  # tried again, still full: said once
    assert chat.screen.count("No space left on device") == 1
    assert "saving resumes by itself" in chat.screen
    assert len(parse(path.read_text()).turns) == 1
    fs.space = None  # space is back: the next save writes the turns held meanwhile
    chat.say("which cache did I mention?")
    assert "Saving again: " in chat.screen
    assert "holds every turn now (3 entries held in memory written)" in chat.screen
    assert chat.screen.count("Saving again") == 1
    assert [t.user for t in parse(path.read_text()).turns] == [
        "my database is postgres", "my queue is rabbitmq", "my cache is redis",
        "which cache did I mention?"]
    chat.say("thanks")
    chat.app.exit()
    assert f"Saved session: {path.stem}" in chat.screen
    assert "holds only the turns" not in chat.screen
    saved = parse(path.read_text())
    assert [t.number for t in saved.turns] == [1, 2, 3, 4, 5]
    assert saved.summary is not None  # the exit summary is saved too
    assert saved.header.total_queries == 5


def test_saving_resumes_at_exit(tmp_path: Path, fs: FaultyOS) -> None:
    chat = make_chat(tmp_path)
    chat.say("my database is postgres")
    [path] = chat.files()
    fs.space = 0
    chat.say("my queue is rabbitmq")
    fs.space = None  # back before the chat ends: the exit writes the turn and the summary
    chat.app.exit()
    assert "holds every turn now (1 entry held in memory written)" in chat.screen
    assert f"Saved session: {path.stem}" in chat.screen
    saved = parse(path.read_text())
    assert [t.user for t in saved.turns] == ["my database is postgres", "my queue is rabbitmq"]
    assert saved.summary is not None


def test_file_made_once_space_is_back(tmp_path: Path, fs: FaultyOS) -> None:
    chat = make_chat(tmp_path)
    fs.target = lambda path: path.name != ".gitignore"
    fs.space = 10  # the header does not fit: no file
    chat.say("my database is postgres")
    assert chat.files() == []
    fs.space = None
    chat.say("my queue is rabbitmq")
    assert "holds every turn now (2 entries held in memory written)" in chat.screen
    [path] = chat.files()
    assert [t.user for t in parse(path.read_text()).turns] == [
        "my database is postgres", "my queue is rabbitmq"]


def test_compaction_saves_what_was_held(tmp_path: Path, fs: FaultyOS) -> None:
    chat = make_chat(tmp_path)
    chat.say("my database is postgres")
    [path] = chat.files()
    fs.space = 0
    chat.say("my queue is rabbitmq")
    fs.space = None
    chat.say("compact")  # the parent gets the held turn and its summary before the child
    parent = parse(path.read_text())
    assert [t.user for t in parent.turns] == ["my database is postgres", "my queue is rabbitmq"]
    assert parent.summary is not None
    assert "(1 entry held in memory written)" in chat.screen


def test_enospc_creating_the_session_file_leaves_nothing(tmp_path: Path, fs: FaultyOS) -> None:
    chat = make_chat(tmp_path)
    fs.target = lambda path: path.name != ".gitignore"
    fs.space = 10  # the header does not fit
    chat.say("hello there")
    assert "No space left on device" in chat.screen
    # No empty or half-written session file, no temporary file left behind (the .locks
    # directory holds the per-session lock files).
    assert sorted(p.name for p in chat.root.iterdir()) == [".gitignore", ".locks"]
    chat.say("still there?")
    assert chat.app.session.state.turns[-1].status == "ok"
    chat.app.exit()
    assert sorted(p.name for p in chat.root.iterdir()) == [".gitignore", ".locks"]


def test_first_turn_not_fitting_leaves_no_header_alone(tmp_path: Path, fs: FaultyOS) -> None:
    """The file is made with its first turn in one write: a disk with room for the header only
    leaves no header-only session (listed first, and what `-c` used to pick)."""
    chat = make_chat(tmp_path)
    fs.target = lambda path: path.name != ".gitignore"
    fs.space = 600  # a header (about 400 bytes) fits, the header and the first turn do not
    chat.say("my database is postgres")
    assert "No space left on device" in chat.screen
    assert chat.files() == []
    fs.space = None
    chat.say("my queue is rabbitmq")
    [path] = chat.files()
    assert [t.user for t in parse(path.read_text()).turns] == [
        "my database is postgres", "my queue is rabbitmq"]


def test_enospc_writing_gitignore_leaves_no_unprotected_directory(tmp_path: Path,
                                                                   fs: FaultyOS) -> None:
    root = tmp_path / "sessions"
    fs.target = lambda path: path.name == ".gitignore"
    fs.space = 12  # "# rollchat t" fits, the "*" line does not
    with pytest.raises(rollchat.storage.store.StoreError, match="No space left on device"):
        SessionStore(root).ensure()
    assert not root.exists()  # the next start creates it again, .gitignore included
    fs.space = None
    SessionStore(root).ensure()
    assert (root / ".gitignore").read_text().splitlines()[-1] == "*"


# ---------------------------------------------------------------- finalize (atomic rewrite)


@pytest.mark.parametrize("fault", ["enospc", "eio-fsync"])
def test_failed_summary_rewrite_leaves_old_file_intact(tmp_path: Path, fs: FaultyOS,
                                                       fault: str) -> None:
    chat = make_chat(tmp_path)
    chat.say("we picked postgres for the database")
    chat.say("and rabbitmq for the queue")
    [path] = chat.files()
    saved = path.read_bytes()
    fs.target = lambda p: p.name.startswith(".")  # only the temporary file of the rewrite
    if fault == "enospc":
        fs.space = 100
    else:
        fs.fail_fsync = True
    chat.app.exit()
    reason = "No space left on device" if fault == "enospc" else "Input/output error"
    assert "could not write the summary" in chat.screen and reason in chat.screen
    assert "(left unchanged)" in chat.screen
    assert "Saved session" not in chat.screen  # never claimed after the save failed
    assert f"Session {path.stem} holds every turn but no summary" in chat.screen
    assert path.read_bytes() == saved
    assert sorted(p.name for p in chat.root.iterdir()) == [".gitignore", ".locks", path.name]
    assert len(parse(saved.decode()).turns) == 2


def test_failed_rewrite_keeps_an_earlier_summary(tmp_path: Path, fs: FaultyOS) -> None:
    chat = make_chat(tmp_path)
    chat.say("we picked postgres for the database")
    chat.app.exit()
    [path] = chat.files()
    first = path.read_bytes()
    assert parse(first.decode()).summary is not None
    store, summary = SessionStore(chat.root), parse(first.decode()).summary
    assert summary is not None
    fs.target = lambda p: p.name.startswith(".")
    fs.space = 0
    with pytest.raises(rollchat.storage.store.StoreError, match="left unchanged"):
        store.finalize(path.stem, summary, total_queries=9, total_tokens=9)
    assert path.read_bytes() == first


# ---------------------------------------------------------------- read-only directory


def _read_only(root: Path, fs: FaultyOS) -> None:
    root.mkdir(mode=0o700, exist_ok=True)
    root.chmod(0o500)  # what an ordinary user would see; root needs the proxy as well
    fs.readonly = root


def test_read_only_directory_at_first_save(tmp_path: Path, fs: FaultyOS) -> None:
    chat = make_chat(tmp_path)
    _read_only(chat.root, fs)
    chat.say("hello there")
    assert f"sessions directory {chat.root} is not writable" in chat.screen
    assert "the chat goes on in memory" in chat.screen
    chat.say("my editor is helix")
    chat.say("which editor did I mention?")
    assert "helix" in chat.app.session.state.turns[-1].assistant
    chat.app.exit()
    assert "Goodbye!" in chat.screen
    assert list(chat.root.iterdir()) == []
    assert chat.screen.count("is not writable") == 1  # said once, not at every turn


def test_directory_turning_read_only_mid_chat(tmp_path: Path, fs: FaultyOS) -> None:
    chat = make_chat(tmp_path)
    chat.say("we picked postgres")
    [path] = chat.files()
    _read_only(chat.root, fs)
    chat.say("and rabbitmq")  # the file itself is still writable: the turn is saved
    saved = path.read_bytes()
    assert len(parse(saved.decode()).turns) == 2
    chat.app.exit()
    assert "could not write the summary" in chat.screen
    assert "Permission denied" in chat.screen
    assert path.read_bytes() == saved


def test_cli_read_only_directory_warns_and_exits_0(tmp_path: Path, fs: FaultyOS,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "sessions"
    _read_only(root, fs)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "home" / "config"))
    cfg = tmp_path / "rollchat.yml"
    cfg.write_text("ui:\n  offline_word_delay: 0\n", encoding="utf-8")
    result = CliRunner().invoke(build_cli(), ["--config", str(cfg), "--provider", "offline",
                                          "--sessions-dir", str(root)],
                                input="my editor is helix\nwhich editor did I mention?\n")
    screen = " ".join(result.output.split())
    assert result.exit_code == 0, screen
    assert f"Warning: sessions directory {root} is not writable" in screen
    assert "the chat goes on in memory" in screen
    assert "helix" in screen.split("which editor did I mention?", 1)[1]
    assert "Goodbye!" in screen
    assert list(root.iterdir()) == []
    assert stat.S_IMODE(root.stat().st_mode) == 0o500
