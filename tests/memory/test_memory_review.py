"""A demanding user's and an attacker's review of the memory (issue 16): what the user typed
is never swallowed as a fact, secrets are never remembered, and the offline rules keep only
what the user really states about themselves."""

from __future__ import annotations

from pathlib import Path

import pytest

from rollchat.memory.store import MemoryStore
from tests.memory.test_memory_chat import make_chat


@pytest.mark.parametrize("line", [
    "remember when we fixed the bug",
    "remember what the deploy script was called",
    "remember how we fixed the flaky test",
    "remember that time the build broke on Friday",
    "Remember me to run the migrations",
])
def test_a_bare_remember_that_reminisces_goes_to_the_model(tmp_path: Path, line: str) -> None:
    chat = make_chat(tmp_path)
    shown = chat.type(line)
    assert "Remembered" not in shown
    assert chat.memory.facts() == []
    turns = chat.app.session.state.turns
    assert [t.user for t in turns if t.kind == "query"] == [line]


@pytest.mark.parametrize("line", ["remember that I prefer tabs",
                                  "remember to run the linter before every commit",
                                  "/remember when the deploy happens, page Ana"])
def test_remember_still_keeps_a_fact(tmp_path: Path, line: str) -> None:
    chat = make_chat(tmp_path)
    assert "Remembered:" in chat.type(line)
    assert len(chat.memory.facts()) == 1


def test_a_secret_said_in_the_chat_is_never_remembered(tmp_path: Path) -> None:
    chat = make_chat(tmp_path)
    chat.type("My password is hunter2.")
    chat.type("My API token is ghp_abcdefghijklmnopqrstuvwxyz0123456789.")
    chat.type("I prefer tabs over spaces.")
    shown = chat.type("compact")
    assert "Remembered: prefers tabs over spaces" in shown
    remembered = [line for line in shown.splitlines() if "Remembered" in line]
    assert not [line for line in remembered if "hunter2" in line or "ghp_" in line]
    assert "Not remembered: 2 facts that looked like a secret" in shown
    assert [f.text for f in chat.memory.facts()] == ["prefers tabs over spaces"]
    assert "hunter2" not in chat.memory.facts_path.read_text(encoding="utf-8")
    # the next request's system prompt (the profile) holds no secret either
    assert "hunter2" not in chat.app.session.engine.context.system


@pytest.mark.parametrize(("line", "what"), [
    ("remember the staging password is Tr0ub4dor&3", "a password"),
    ("remember OPENAI_API_KEY=sk-proj-abcdefghijklmnopqrstuv", "an API key"),
    ("/remember the db is postgres://admin:s3cret@db.internal:5432/app", "a password in a URL"),
])
def test_remember_refuses_a_secret_and_says_why(tmp_path: Path, line: str, what: str) -> None:
    chat = make_chat(tmp_path)
    shown = chat.type(line)
    assert "Remembered" not in shown
    assert f"Error: not remembered: it looks like {what}" in shown
    assert chat.memory.facts() == []


@pytest.mark.parametrize("text", ["the API key is in the .env file",
                                  "the access token is rotated daily",
                                  "prefers token-based auth over sessions",
                                  "release commit is 0546dd8a3c5e9b0f1e2d3c4b5a69788776655443"])
def test_facts_about_secrets_without_one_are_kept(tmp_path: Path, text: str) -> None:
    chat = make_chat(tmp_path)
    assert f"Remembered: {text}" in chat.type(f"/remember {text}")


def test_a_secret_in_the_models_extraction_is_dropped(tmp_path: Path) -> None:
    import json
    from collections.abc import Iterator
    from dataclasses import dataclass

    from rollchat.providers.base import ChatRequest, Done, StreamEvent, TextDelta
    from tests.memory.test_memory_chat import BrokenExtraction

    @dataclass
    class Leaky(BrokenExtraction):
        def stream(self, request: ChatRequest) -> Iterator[StreamEvent]:
            if request.purpose != "memory":
                yield from self.inner.stream(request)
                return
            assert "Never write down a secret" in request.messages[-1].content
            items = [{"text": "the prod API key is sk-live-abcdefghijklmnopqrstuvwx",
                      "category": "project", "confidence": 0.99, "turn": 1},
                     {"text": "deploys with ops/deploy.sh", "category": "project",
                      "confidence": 0.9, "turn": 1}]
            yield TextDelta(json.dumps(items))
            yield Done("end")

    chat = make_chat(tmp_path, Leaky("ok"))
    chat.type("We deploy with ops/deploy.sh; the prod API key is "
              "sk-live-abcdefghijklmnopqrstuvwx.")
    shown = chat.type("compact")
    assert "Remembered: deploys with ops/deploy.sh (forget 1)" in shown
    assert "Remembered: the prod API key" not in shown and "Warning" not in shown
    assert "Not remembered: 1 fact that looked like a secret" in shown
    assert [f.text for f in chat.memory.facts()] == ["deploys with ops/deploy.sh"]


@pytest.mark.parametrize("message", [
    "I never said that.",
    "You never listen.",
    "I never got an answer from the server, so I retried.",
    "my question is whether this works.",
    "Here is the code:\n```python\n# we decided to use retries here\nmy_value = 3\n"
    "always = True\n```\nwhy does it fail",
    "The log says: \"we picked the wrong shard\" and stops.",
    "> we decided to drop py3.8\n\nis this from the changelog",
    "Error: you never set the env var",
    "`never` is a keyword in that language.",
])
def test_the_offline_rules_keep_no_false_facts(tmp_path: Path, message: str) -> None:
    chat = make_chat(tmp_path)
    chat.type(message)
    assert "Remembered" not in chat.type("compact")
    assert chat.memory.facts() == []


def test_the_offline_rules_still_find_what_the_user_states(tmp_path: Path) -> None:
    chat = make_chat(tmp_path)
    chat.type("My editor is vim and I never said otherwise.")
    chat.type("I never need the verbose flag. Please always answer in English.")
    chat.type("I'd rather use `pytest` than nose.")
    chat.type("compact")
    assert [f.text for f in chat.memory.facts()] == [
        "user's editor is vim and I never said otherwise", "never need the verbose flag",
        "always answer in English", "would rather use `pytest` than nose"]


def test_ctrl_c_during_extraction_at_exit_loses_nothing(tmp_path: Path) -> None:
    import os
    import signal
    import threading
    from collections.abc import Iterator
    from dataclasses import dataclass

    from rollchat.providers.base import ChatRequest, StreamEvent
    from rollchat.storage.transcript import parse
    from tests.memory.test_memory_chat import BrokenExtraction

    released = threading.Event()

    @dataclass
    class Interrupted(BrokenExtraction):
        def stream(self, request: ChatRequest) -> Iterator[StreamEvent]:
            if request.purpose == "memory":  # the user presses Ctrl-C while the model extracts
                os.kill(os.getpid(), signal.SIGINT)
                released.wait(5)
                return
            yield from self.inner.stream(request)

    chat = make_chat(tmp_path, Interrupted("ctrl-c"))
    chat.type("I prefer tabs over spaces.")
    end = chat.exit()
    released.set()
    assert "Warning: memory: fact extraction interrupted" in end
    assert "Remembered: prefers tabs over spaces (forget 1)" in end  # the rules' facts
    assert "Saved session" in end and "Goodbye" in end
    [file] = (tmp_path / "sessions").glob("*.md")
    saved = parse(file.read_text(encoding="utf-8"))
    assert saved.summary is not None and [t.user for t in saved.turns] == [
        "I prefer tabs over spaces."]
    assert [e.session_id for e in chat.memory.episodes()] == [file.stem]


def test_a_facts_file_made_a_symlink_is_named_as_one_and_never_followed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.cli.test_memory_cli import run

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    target = tmp_path / "elsewhere.txt"
    target.write_text("root:x:0:0:root:/root:/bin/bash\n", encoding="utf-8")
    from rollchat.memory.location import memory_home, project_key

    memory_dir = memory_home() / "projects" / project_key(tmp_path.resolve())
    memory_dir.mkdir(parents=True)
    (memory_dir / "assistant.facts.jsonl").symlink_to(target)
    code, _, err = run("memory")
    assert code == 1
    assert "assistant.facts.jsonl: it is a symbolic link, which memory never follows" in err
    facts = MemoryStore(tmp_path / "sessions", "assistant", directory=memory_dir,
                        home=memory_home())
    chat = make_chat(tmp_path, facts=facts)  # the chat goes on, the target never written
    assert "symbolic link" in chat.type("remember prefers tabs over spaces")
    assert "Noted" in chat.type("I prefer tabs over spaces.")
    assert target.read_text(encoding="utf-8") == "root:x:0:0:root:/root:/bin/bash\n"
