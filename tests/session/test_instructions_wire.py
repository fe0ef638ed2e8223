"""Project instructions as a user meets them: rollchat started in a repository's subfolder,
piped, against the local Anthropic wire server with the real SDK. Every request (each message,
each restoration after two compactions, a resume in a new process) carries the instructions in
its system prompt, the cached prefix; a file changed mid-chat reaches the model only at the
next compaction or ``instructions reload``, said once; a fork and a handoff to another agent
carry them too; ``instructions`` and ``context`` list them."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from tests.e2e import clean_env, run_piped, start_piped, write_config
from tests.wire_servers import WireServer, anthropic_server

__all__ = ["anthropic_server"]  # the fixture, imported for pytest

PERSONA = "You are a careful assistant."
REVIEWER = "You review."


def _project(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """A repository with AGENTS.md at its root and CLAUDE.md in pkg/ (the working directory),
    and the user's own AGENTS.md: (pkg/, the environment of a run there)."""
    root = tmp_path / "repo"
    cwd = root / "pkg"
    cwd.mkdir(parents=True)
    (root / ".git").mkdir()
    (root / "AGENTS.md").write_text("Rule R1: run the tests.\n@docs/style.md\n",
                                    encoding="utf-8")
    (root / "docs").mkdir()
    (root / "docs" / "style.md").write_text("Rule R3: four spaces.\n", encoding="utf-8")
    (cwd / "CLAUDE.md").write_text("Rule R2: pkg has no globals.\n", encoding="utf-8")
    home = tmp_path / "home"
    env = clean_env(home, ANTHROPIC_API_KEY="test")
    user = home / "config" / "rollchat"
    user.mkdir(parents=True)
    (user / "AGENTS.md").write_text("Rule R0: answer briefly.\n", encoding="utf-8")
    return cwd, env


def _args(server: WireServer, tmp_path: Path) -> list[str]:
    config = write_config(tmp_path / "config.yml", f"""\
agents:
  assistant:
    system_prompt: "{PERSONA}"
  reviewer:
    system_prompt: "{REVIEWER}"
    provider: anthropic
    model: test-model
    base_url: {server.url}
summary:
  provider: offline
  model: offline
session:
  dir: {tmp_path / "sessions"}
memory:
  enabled: false
""")
    return ["--config", str(config), "--provider", "anthropic", "--model", "test-model",
            "--base-url", server.url]


def _system(body: dict[str, Any]) -> dict[str, Any]:
    [block] = body["system"]
    return dict(block)


def _wait(server: WireServer, n: int) -> None:
    deadline = time.monotonic() + 60
    while len(server.requests) < n:
        assert time.monotonic() < deadline, f"{len(server.requests)} requests, not {n}"
        time.sleep(0.02)


def test_instructions_reach_every_request_through_compactions_and_a_resume(
        anthropic_server: WireServer, tmp_path: Path) -> None:
    cwd, env = _project(tmp_path)
    args = _args(anthropic_server, tmp_path)
    chat = start_piped(cwd, *args, env=env, merge_stderr=True)
    assert chat.stdin is not None

    def say(line: str, requests: int) -> None:
        assert chat.stdin is not None
        chat.stdin.write(line + "\n")
        chat.stdin.flush()
        _wait(anthropic_server, requests)

    say("one", 1)
    say("two", 2)
    (cwd.parent / "AGENTS.md").write_text("Rule R1b: run the tests twice.\n@docs/style.md\n",
                                          encoding="utf-8")
    say("three", 3)  # the same context: the same prompt, the cache keeps hitting
    say("compact", 4)  # the child's restoration: the changed file is picked up
    say("four", 5)
    say("compact", 6)
    say("five", 7)
    out, _ = chat.communicate("instructions\ncontext\n", timeout=60)
    assert chat.returncode == 0, out
    resumed = run_piped(cwd, "six\nfork\n@reviewer check it\n", *args, "-c", env=env)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr

    bodies = anthropic_server.bodies
    # 5 messages and 2 restorations; then in a second process the resume's restoration,
    # "six", the fork's restoration and the message handed to the reviewer
    assert len(bodies) == 11
    systems = [_system(b) for b in bodies]
    assert systems[10]["text"].startswith(REVIEWER + "\n\nProject instructions")
    for system in systems:
        text = system["text"]
        assert system["cache_control"] == {"type": "ephemeral"}  # the cached prefix
        assert text.startswith((PERSONA + "\n\nProject instructions",
                                REVIEWER + "\n\nProject instructions"))
        order = [text.index(r) for r in ("R0: answer", "R1", "R3: four", "R2: pkg")]
        assert order == sorted(order), text
    old, new = systems[0]["text"], systems[3]["text"]
    assert [s["text"] for s in systems[:3]] == [old] * 3 and "R1:" in old
    assert "R1b:" in new and all(s["text"] == new for s in systems[3:10])
    assert systems[10]["text"] == new.replace(PERSONA, REVIEWER, 1)
    assert "check it" in json.dumps(bodies[10]["messages"][-1])  # the handoff's message
    assert out.count("Project instructions changed") == 1
    assert "at a new context: compaction, resume or fork; the prompt cache misses once" in out
    assert "  AGENTS.md  " in out and "docs/style.md" in out and "(included by AGENTS.md)" in out
    assert "  pkg/CLAUDE.md  " in out and "~/.config" not in out
    assert "Project instructions" in out and "@style.md" in out  # the context layer


def test_instructions_reload_picks_up_a_change_now(anthropic_server: WireServer,
                                                   tmp_path: Path) -> None:
    cwd, env = _project(tmp_path)
    args = _args(anthropic_server, tmp_path)
    chat = start_piped(cwd, *args, env=env, merge_stderr=True)
    assert chat.stdin is not None
    chat.stdin.write("one\n")
    chat.stdin.flush()
    _wait(anthropic_server, 1)
    (cwd / "CLAUDE.md").write_text("Rule R2b: globals allowed.\n", encoding="utf-8")
    out, _ = chat.communicate("instructions reload\ntwo\ninstructions reload\n", timeout=60)
    assert chat.returncode == 0, out
    first, second = (_system(b)["text"] for b in anthropic_server.bodies)
    assert "R2: pkg" in first and "R2b: globals" in second and "R2: pkg" not in second
    assert "by `instructions reload`; the prompt cache misses once" in out
    assert out.count("Project instructions reloaded: unchanged") == 1
