"""``rollchat -p`` against a scripted model: the real OpenAI and Anthropic SDKs talking to the
local wire servers (tests/wire_servers.py). Tools run as the approval rules allow and a call
that would ask is refused (exit 4), a provider failure exits 3 with the question saved, the
summary is the local one unless ``summary.one_shot: model``, and Ctrl-C exits 130 with the
answer so far saved."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from rollchat.storage.transcript import parse
from tests.e2e import COUNT_WORDS, agent_file, clean_env, run_piped, start_piped
from tests.wire_servers import (
    WireServer,
    anthropic_server,
    error,
    is_extraction,
    openai_server,
    stall,
    text,
    tool,
)

__all__ = ["anthropic_server", "openai_server"]  # the fixtures, imported for pytest

AGENT = agent_file(
    '"""A test agent: one tool allowed, one that needs approval."""\n'
    'name = "Counter"\napproval = "ask"\nallow = ["count_words"]', COUNT_WORDS, '''
def delete_everything(path: str) -> str:
    """Delete a folder.

    Args:
        path: The folder.
    """
    return "deleted " + path
''', "tools = [count_words, delete_everything]")


def command(server: WireServer, tmp_path: Path, *args: str) -> tuple[list[str], dict[str, str]]:
    """``rollchat``'s arguments (after ``python -m rollchat``) for a run of the test agent
    against ``server``, and its environment."""
    agent = tmp_path / "counter.py"
    agent.write_text(AGENT, encoding="utf-8")
    provider = "openai" if server.url.endswith("/v1") else "anthropic"
    key = "OPENAI_API_KEY" if provider == "openai" else "ANTHROPIC_API_KEY"
    (tmp_path / "rollchat.yml").write_text("retry:\n  max_retries: 0\n", encoding="utf-8")
    args = (str(agent), "--provider", provider, "--model", "test-model", "--base-url",
            server.url, *args)
    return list(args), clean_env(tmp_path / "home", **{key: "test"})


def run(server: WireServer, tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The run, stdin /dev/null, forked by the tests' fork server (tests/forkserver.py)."""
    argv, env = command(server, tmp_path, *args)
    return run_piped(tmp_path, None, *argv, env=env)


def model_calls(server: WireServer) -> list[dict[str, Any]]:
    return [b for b in server.bodies if not is_extraction(b)]


@pytest.mark.parametrize("server_name", ["openai_server", "anthropic_server"])
def test_an_allowed_tool_runs_and_its_call_is_in_the_json(server_name: str, tmp_path: Path,
                                                          request: pytest.FixtureRequest) -> None:
    server: WireServer = request.getfixturevalue(server_name)
    server.push(tool("count_words", {"text": "one two three"}, tool_id="c1"),
                text("Three words.", input_tokens=40, output_tokens=5, cache_read=12))
    done = run(server, tmp_path, "-p", "count them", "--output-format", "json")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["answer"] == "Three words."
    assert result["tool_calls"] == [{"id": "c1", "name": "count_words",
                                     "arguments": {"text": "one two three"}, "result": "3",
                                     "is_error": False, "status": "ok"}]
    assert result["stop_reason"] == "end" and result["exit_code"] == 0
    assert result["usage"]["output_tokens"] == 7 + 5  # both rounds of the question
    assert result["usage"]["cached_tokens"] == 12
    assert len(model_calls(server)) == 2  # the two rounds; the summary is the local one
    assert summary_requests(server) == 0


def test_a_tool_needing_approval_is_refused_without_asking_and_exits_4(
        openai_server: WireServer, tmp_path: Path) -> None:
    openai_server.push(tool("delete_everything", {"path": "/"}, tool_id="c1"),
                       text("I may not delete it."))
    done = run(openai_server, tmp_path, "-p", "clean up", "--output-format", "stream-json")
    assert done.returncode == 4, done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines()]
    [call] = [e for e in events if e["type"] == "tool_call"]
    [result] = [e for e in events if e["type"] == "tool_result"]
    assert call["name"] == "delete_everything" and result["status"] == "refused"
    assert result["is_error"] is True
    assert events[-1]["type"] == "done" and events[-1]["refused_tool_calls"] == 1
    assert events[-1]["answer"] == "I may not delete it."
    # the model saw the refusal as the call's result
    sent = [m for m in openai_server.bodies[1]["messages"] if m["role"] == "tool"]
    assert sent[0]["content"].startswith("refused:")


def test_yes_approves_the_call(openai_server: WireServer, tmp_path: Path) -> None:
    openai_server.push(tool("delete_everything", {"path": "tmp"}, tool_id="c1"), text("Done."))
    done = run(openai_server, tmp_path, "--yes", "-p", "clean up")
    assert (done.returncode, done.stdout) == (0, "Done.\n"), done.stderr


def test_a_provider_failure_exits_3_and_keeps_the_question(openai_server: WireServer,
                                                          tmp_path: Path) -> None:
    openai_server.push(error(400, "model test-model is not available"))
    done = run(openai_server, tmp_path, "-p", "a question worth keeping",
               "--output-format", "stream-json")
    assert done.returncode == 3, done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines()]
    assert [e["type"] for e in events] == ["start", "error", "done"]
    assert "not available" in events[1]["message"]
    assert events[-1]["stop_reason"] == "error" and events[-1]["exit_code"] == 3
    [turn] = parse(Path(events[-1]["session_path"]).read_text(encoding="utf-8")).turns
    assert (turn.user, turn.status) == ("a question worth keeping", "unanswered")


def test_a_provider_failure_in_text_mode_prints_nothing_on_stdout(openai_server: WireServer,
                                                                  tmp_path: Path) -> None:
    openai_server.push(error(400, "model test-model is not available"))
    done = run(openai_server, tmp_path, "-p", "q")
    assert (done.returncode, done.stdout) == (3, "")
    assert "not available" in done.stderr


def summary_requests(server: WireServer) -> int:
    return sum(1 for b in model_calls(server) if "<summary-request>" in json.dumps(b))


@pytest.mark.parametrize(("setting", "by_model"), [("", False),
                                                   ("summary:\n  one_shot: model\n", True)])
def test_the_summary_is_local_unless_configured(openai_server: WireServer, tmp_path: Path,
                                                setting: str, by_model: bool) -> None:
    openai_server.push(text("An answer."), text("## Summary\n- asked a question"))
    argv, env = command(openai_server, tmp_path, "-p", "q", "--output-format", "json")
    config = tmp_path / "rollchat.yml"
    config.write_text(config.read_text(encoding="utf-8") + setting, encoding="utf-8")
    # (the user's own file, named: one_shot: model from an untrusted project file is ignored)
    argv += ["--config", str(config)]
    done = run_piped(tmp_path, None, *argv, env=env)
    assert done.returncode == 0, done.stderr
    assert bool(summary_requests(openai_server)) is by_model
    summary = parse(Path(json.loads(done.stdout)["session_path"]).read_text(
        encoding="utf-8")).summary
    assert summary is not None


def test_ctrl_c_exits_130_with_the_answer_so_far_saved(openai_server: WireServer,
                                                       tmp_path: Path) -> None:
    openai_server.push(stall(30, after_chunks=2, text="the first words of a long answer"))
    argv, env = command(openai_server, tmp_path, "-p", "q", "--output-format", "stream-json")
    child = start_piped(tmp_path, *argv, env=env, stdin=False)
    assert child.stdout is not None
    lines = [child.stdout.readline()]
    while json.loads(lines[-1])["type"] != "text":
        lines.append(child.stdout.readline())
    child.send_signal(signal.SIGINT)
    out, err = child.communicate(timeout=30)
    assert child.returncode == 130, err
    done = json.loads(out.splitlines()[-1])
    assert done["stop_reason"] == "interrupted" and done["answer"]
    [turn] = parse(Path(done["session_path"]).read_text(encoding="utf-8")).turns
    assert turn.status == "interrupted" and turn.assistant == done["answer"]


def test_thinking_streams_as_its_own_events_and_stays_out_of_the_answer(
        openai_server: WireServer, tmp_path: Path) -> None:
    openai_server.push(text("Forty-two.", reasoning="Let me think about the question."))
    streamed = run(openai_server, tmp_path, "-p", "q", "--output-format", "stream-json")
    assert streamed.returncode == 0, streamed.stderr
    events = [json.loads(line) for line in streamed.stdout.splitlines()]
    thought = "".join(e["text"] for e in events if e["type"] == "thinking")
    assert thought == "Let me think about the question."
    assert events[-1]["answer"] == "Forty-two."
    openai_server.push(text("Forty-two.", reasoning="Let me think about the question."))
    assert run(openai_server, tmp_path, "-p", "q").stdout == "Forty-two.\n"


def test_ctrl_c_while_resuming_ends_the_run_and_keeps_the_question(openai_server: WireServer,
                                                                  tmp_path: Path) -> None:
    openai_server.push(text("First answer."))
    first = json.loads(run(openai_server, tmp_path, "-p", "first", "--output-format",
                           "json").stdout)
    result = interrupted_while_restoring(openai_server, tmp_path, "--resume",
                                         first["session_id"])
    assert result["stop_reason"] == "interrupted" and result["answer"] == ""
    assert result["session_id"] != first["session_id"]
    assert len(openai_server.bodies) == 2  # the question was not sent
    turns = parse(Path(result["session_path"]).read_text(encoding="utf-8")).turns
    assert [(t.kind, t.status) for t in turns] == [("restored", "interrupted"),
                                                   ("query", "interrupted")]
    assert turns[1].user == "second question"


def interrupted_while_restoring(server: WireServer, tmp_path: Path,
                                *how: str) -> dict[str, Any]:
    """``-p "second question" --output-format json`` with ``how`` (``--resume ID``, ``--fork
    ID``), a Ctrl-C sent once its restoration request reached ``server`` (which holds it):
    the JSON printed, the exit status 130 checked."""
    server.push(stall(30), text("never asked for"))  # the restoration hangs
    argv, env = command(server, tmp_path, *how, "-p", "second question", "--output-format",
                        "json")
    child = start_piped(tmp_path, *argv, env=env, stdin=False)
    deadline = time.monotonic() + 60
    while len(server.bodies) < 2 and time.monotonic() < deadline:  # restoring
        time.sleep(0.05)
    child.send_signal(signal.SIGINT)
    out, err = child.communicate(timeout=60)
    assert child.returncode == 130, err
    result: dict[str, Any] = json.loads(out)
    return result
