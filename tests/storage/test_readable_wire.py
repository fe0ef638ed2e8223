"""A child session's file, written by the real CLI against the local OpenAI and Anthropic wire
servers: it shows the summary it was restored from once and no restoration prompt, and the
requests rebuilt from it are the ones the servers received, byte for byte (issue 25.4)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rollchat.engine.replay import turn_messages
from rollchat.storage.transcript import SUMMARY_END, SUMMARY_START, parse
from tests.compaction.test_compact_resume_wire import conversation, purpose, rollchat
from tests.wire_servers import WireServer, anthropic_server, openai_server, text

__all__ = ["anthropic_server", "openai_server"]

SUMMARY = (f"{SUMMARY_START}\n**Background Context:** Initial session about C:\\jobs\\queue "
           "and **bold** plans.\n\n**Current Session Summary:**\n**Topics Discussed:**\n"
           "- picking a queue for jobs\n- *emphasis* and <!-- a comment --> in a topic\n\n"
           "**Decisions Made:**\n- use rabbitmq 3.13\n\n**Pending:**\n"
           f"- Pending: write the benchmarks.\n{SUMMARY_END}")


@pytest.mark.parametrize("server_name", ["openai_server", "anthropic_server"])
def test_a_child_file_shows_its_summary_once_and_rebuilds_what_was_sent(
        server_name: str, request: pytest.FixtureRequest, tmp_path: Path) -> None:
    server: WireServer = request.getfixturevalue(server_name)
    server.push(text("Rabbitmq is a fine choice."), text(SUMMARY),
                text("Acknowledged: rabbitmq. Ready to continue."),
                text("## Plan\n\n**Five** retries, then *stop*.\n---\nDone."), text(SUMMARY))
    out, err, code = rollchat(server, tmp_path, "which queue? rabbitmq?\ncompact\n"
                              "how many retries --> and then?\nexit\n")
    assert code == 0, err
    bodies = server.bodies
    assert [purpose(b) for b in bodies] == ["chat", "summary", "restore",
                                            "chat-after-restore", "summary"]
    paths = {p.stem: p for p in (tmp_path / "sessions").glob("*.md")}
    [child_id] = [k for k, p in paths.items() if "**Resumed From:**" in p.read_text()]
    raw = paths[child_id].read_text()
    # the summary once, readably; no prompt, no escaped markers
    assert raw.count("**Topics Discussed:**") == 2  # the one restored from, the child's own
    head = raw[:raw.index(SUMMARY_START)]
    assert head.count("**Topics Discussed:**") == 1 and "- Pending: write the benchmarks." in head
    assert "CONTEXT RESTORATION" not in raw and "Task: Review" not in raw
    assert "\\<!--" not in raw and "\\**" not in raw and "- \\" not in raw
    assert "*Context block:*" not in raw and "<!-- context block, sent with this message:" in raw
    assert "## Plan\n\n**Five** retries, then *stop*.\n\\---\nDone." in raw  # only --- escaped
    # what was sent, rebuilt from the file byte for byte
    child = parse(raw)
    restored, query = child.turns
    sent_prompt = conversation(bodies[2])[1][0][1]
    assert restored.kind == "restored" and restored.user == sent_prompt
    sent = conversation(bodies[3])[1]
    assert sent[0] == ("user", restored.user)
    assert [(m.role, m.content) for m in turn_messages(query)] == [
        sent[2], ("assistant", "## Plan\n\n**Five** retries, then *stop*.\n---\nDone.")]
    # header numbers read like numbers: no trailing spaces anywhere
    assert all(line == line.rstrip() for line in raw.split("\n"))
    assert "Tokens: 0 (in: 0, out: 0)" not in raw and out
