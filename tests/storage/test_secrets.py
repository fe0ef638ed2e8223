"""Secrets and permissions: with API keys and a base URL carrying credentials, whole sessions
(chat, errors that echo the key, compact, resume, exit) leave no secret in any file rollchat
wrote nor on screen; files are 0600 and directories 0700, even under a permissive umask.
"""

from __future__ import annotations

import base64
import io
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pexpect
import pytest

from rollchat.storage.transcript import parse
from tests.e2e import PROMPT, clean_env, run_piped, spawn, write_config
from tests.wire_servers import (
    AnthropicDialect,
    OpenAIDialect,
    Reply,
    WireServer,
    error,
    last_user_text,
    text,
)

OPENAI_KEY = "sk-test-SECRET-0penai-7f3c9a"
ANTHROPIC_KEY = "sk-ant-SECRET-anthr0pic-4e1b8d"
PASSWORD = "p4ssw0rd"
SECRETS = (OPENAI_KEY, ANTHROPIC_KEY, PASSWORD, "SECRET", "user:p4ssw0rd")
CONFIG = """\
retry:
  max_retries: 0
ui:
  offline_word_delay: 0
"""


def hostile(body: dict[str, Any]) -> Reply:
    """Error bodies that echo the key, as real providers do (``Incorrect API key: sk-...``)."""
    line = last_user_text(body)
    if line == "trigger 401":
        return error(401, f"Incorrect API key provided: {OPENAI_KEY} / {ANTHROPIC_KEY}")
    if line == "trigger 500":
        return error(500, f"upstream failed for key {OPENAI_KEY} {ANTHROPIC_KEY}")
    return text(f"echo: {line}")


def with_credentials(url: str) -> str:
    return url.replace("http://", f"http://user:{PASSWORD}@")


@pytest.fixture
def umask_zero() -> Iterator[None]:
    """Children inherit a umask that would leave every new file world-readable."""
    old = os.umask(0)
    try:
        yield
    finally:
        os.umask(old)


def sent_credentials(key: str) -> set[str]:
    """What may arrive as Authorization: the key, or the URL's credentials (httpx turns them
    into Basic auth, which replaces the SDK's Bearer key)."""
    return {f"Bearer {key}", "Basic " + base64.b64encode(f"user:{PASSWORD}".encode()).decode()}


def _env(tmp_path: Path) -> dict[str, str]:
    return clean_env(tmp_path / "home", OPENAI_API_KEY=OPENAI_KEY, ANTHROPIC_API_KEY=ANTHROPIC_KEY)


def _pty_session(tmp_path: Path, server: WireServer, cfg: Path) -> str:
    """chat, a 401 and a 500 that echo the keys, compact, chat, exit; in a pseudo-terminal so
    the input history is written. Returns everything shown."""
    child = spawn(tmp_path, "--config", str(cfg), "--provider", "openai", "--model",
                  "test-model", "--base-url", with_credentials(server.url), env=_env(tmp_path),
                  timeout=90,  # five model calls and a compaction: 30 s was short under load
                  forked=True)  # (its umask, 0, is the caller's: as a new interpreter's)
    shown = io.StringIO()
    child.logfile_read = shown
    child.expect(PROMPT)
    for line, wait in (("hello there", "echo: hello there"),
                       ("trigger 401", "authentication failed"),
                       ("trigger 500", "provider server error"),
                       ("compact", "Starting new session"),
                       ("after compact", "echo: after compact")):
        child.sendline(line)
        child.expect(wait)
        child.expect(PROMPT)
    child.sendline("exit")
    child.expect("Goodbye!")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0, shown.getvalue()
    return shown.getvalue()


def _written_files(tmp_path: Path) -> list[Path]:
    """What rollchat wrote, but the config and the tokenizer's table cached under
    ``cache/rollchat/encodings`` (models/encodings.py: a copy of tiktoken's public vocabulary,
    which holds "SECRET" as one of its tokens)."""
    return [p for p in tmp_path.rglob("*") if p.is_file() and p.name != "rollchat.yml"
            and p.parent.name != "encodings"]


def test_no_secret_in_files_or_output(tmp_path: Path, umask_zero: None) -> None:
    cfg = write_config(tmp_path / "rollchat.yml", CONFIG)
    with WireServer(OpenAIDialect(), responder=hostile) as server:
        shown = [_pty_session(tmp_path, server, cfg)]
        done = run_piped(tmp_path, "resume 1\nresumed line\ntrigger 401\nexit\n", "--config",
                         str(cfg), "--provider", "openai", "--model", "test-model",
                         "--base-url", with_credentials(server.url), env=_env(tmp_path))
        assert done.returncode == 0, done.stderr
        shown += [done.stdout, done.stderr]
        used = {r.headers.get("authorization") for r in server.requests}
    assert used and used <= sent_credentials(OPENAI_KEY)
    with WireServer(AnthropicDialect(), responder=hostile) as server:
        lines = "hi anthropic\ntrigger 401\ntrigger 500\ncompact\nlast one\nexit\n"
        done = run_piped(tmp_path, lines, "--config", str(cfg), "--provider", "anthropic",
                         "--model", "test-model", "--base-url", with_credentials(server.url),
                         env=_env(tmp_path))
        assert done.returncode == 0, done.stderr
        shown += [done.stdout, done.stderr]
        used = {r.headers.get("authorization") for r in server.requests}
        assert used and used <= sent_credentials(ANTHROPIC_KEY)
    screen = "\n".join(shown)
    assert "authentication failed" in screen and "[redacted]" in screen
    files = _written_files(tmp_path)
    sessions = sorted((tmp_path / "sessions").glob("*.md"))
    assert len(sessions) == 5  # openai: parent, child, resumed; anthropic: parent, child
    assert any(p.name == "history" for p in files)
    for path in files:
        data = path.read_bytes()
        for secret in SECRETS:
            assert secret.encode() not in data, f"{secret!r} in {path}"
    for secret in SECRETS:
        assert secret not in screen, f"{secret!r} shown on screen"
    errors = [t.error for p in sessions for t in parse(p.read_text()).turns if t.error]
    assert len(errors) == 5 and all("[redacted]" in e for e in errors), errors
    assert_private(tmp_path)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.lstat().st_mode)


def assert_private(tmp_path: Path) -> None:
    """The sessions directory and every directory in it 0700, every file in them 0600; the
    history file 0600 in a 0700 directory (the umask of the run
    was 0)."""
    sessions = tmp_path / "sessions"
    assert _mode(sessions) == 0o700
    entries = list(sessions.iterdir())
    assert len([p for p in entries if p.suffix == ".md"]) == 5
    assert ".gitignore" in {p.name for p in entries}
    locks = sessions / ".locks"
    assert _mode(locks) == 0o700 and len(list(locks.iterdir())) == 5
    for path in sessions.rglob("*"):  # memory/, .cache/, the index too
        assert _mode(path) == (0o700 if path.is_dir() else 0o600), path
    history = tmp_path / "home" / "data" / "rollchat" / "history"
    assert "after compact" in history.read_text()
    assert _mode(history) == 0o600
    assert _mode(history.parent) == 0o700


# ---------------------------------------------------------------- credentials in a base URL

QUERY_SECRET = "q5ecret-in-query"
URL_SECRETS = (PASSWORD, QUERY_SECRET, OPENAI_KEY, ANTHROPIC_KEY)


def with_query(url: str) -> str:
    return with_credentials(url) + f"?api_key={QUERY_SECRET}&v=1"


def test_a_base_url_with_credentials_is_redacted_wherever_it_is_shown(tmp_path: Path) -> None:
    """``user:password@`` and ``?api_key=`` in a base URL: the request carries them (Basic
    auth, the query), and the banner, the errors a server echoes them in, the transcripts and
    the `sessions` listing show them redacted."""
    def echo_url(body: dict[str, Any]) -> Reply:
        if last_user_text(body) == "trigger 404":
            return error(404, f"no model at {with_query(server.url)}/chat/completions")
        return text(f"echo: {last_user_text(body)}")

    cfg = write_config(tmp_path / "rollchat.yml", CONFIG)
    env = _env(tmp_path)
    with WireServer(OpenAIDialect(), responder=echo_url) as server:
        url = with_query(server.url)
        done = run_piped(tmp_path, "hello\ntrigger 404\nexit\n", "--config", str(cfg),
                         "--model", "test-model", "--base-url", url, env=env)
        paths = [r.path for r in server.requests]
        used = {r.headers.get("authorization") for r in server.requests}
    assert done.returncode == 0, done.stderr
    assert paths and all(p == f"/v1/chat/completions?api_key={QUERY_SECRET}&v=1"
                         for p in paths), paths
    assert used == {"Basic " + base64.b64encode(f"user:{PASSWORD}".encode()).decode()}
    banner = done.stdout.splitlines()[0]
    assert banner.endswith(f"test-model via openai (base URL http://***@127.0.0.1:{server.port}"
                           "/v1; ANTHROPIC_API_KEY is not sent to it: use --provider "
                           "anthropic for an Anthropic server)"), banner
    assert "echo: hello" in done.stdout
    assert ("no model at http://[redacted]@127.0.0.1:"
            f"{server.port}/v1?api_key=[redacted]&v=1/chat/completions") in done.stdout
    listing = [run_piped(tmp_path, "", "sessions", *extra, env=env) for extra in ((), ("--json",))]
    assert all(r.returncode == 0 and "assistant_" in r.stdout for r in listing)
    shown = "\n".join([done.stdout, done.stderr, *(r.stdout + r.stderr for r in listing)])
    files = {p: p.read_bytes() for p in _written_files(tmp_path)}
    assert len([p for p in files if p.suffix == ".md"]) == 1
    for secret in URL_SECRETS:
        assert secret not in shown, f"{secret!r} shown"
        for path, data in files.items():
            assert secret.encode() not in data, f"{secret!r} in {path}"


def test_the_sdk_environment_base_url_is_in_the_banner_redacted(tmp_path: Path) -> None:
    """ANTHROPIC_BASE_URL / OPENAI_BASE_URL (read by the SDKs) are where requests go: the
    banner names them, without their credentials or query."""
    with WireServer(AnthropicDialect()) as server:
        env = _env(tmp_path)
        env["ANTHROPIC_BASE_URL"] = with_query(server.url)
        done = run_piped(tmp_path, "hi\nexit\n", "--no-save", "--model", "m", env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0].endswith(
        f"m via anthropic (ANTHROPIC_API_KEY is set) · server http://***@127.0.0.1:{server.port}")
    assert "echo: hi" in done.stdout
    assert PASSWORD not in done.stdout and QUERY_SECRET not in done.stdout


@pytest.mark.parametrize("where", ["flag", "file"])
def test_a_bad_base_url_is_refused_without_showing_its_secrets(tmp_path: Path,
                                                                where: str) -> None:
    bad = f"ftp://user:{PASSWORD}@host/v1?token={QUERY_SECRET}"
    args: tuple[str, ...] = ("--base-url", bad)
    if where == "file":
        cfg = write_config(tmp_path / "own.yml", f"agents:\n  a:\n    base_url: {bad}\n")
        args = ("--config", str(cfg))
    done = run_piped(tmp_path, "", *args, env=_env(tmp_path))
    assert done.returncode == 2
    prefix = "--base-url" if where == "flag" else "own.yml:3: agents.a.base_url"
    assert done.stderr.startswith(f"rollchat: error: {prefix}: must be an http:// or https:// "
                                  "URL"), done.stderr
    assert "a value that looks like a secret; not shown" in done.stderr
    for secret in (PASSWORD, QUERY_SECRET):
        assert secret not in done.stderr + done.stdout
