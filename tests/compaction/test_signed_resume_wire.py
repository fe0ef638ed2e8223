"""Resuming a session whose summary the provider's compaction wrote (compaction.engine: provider,
rollchat run as a subprocess, the real anthropic SDK, tests/wire_anthropic_compaction.py): the
signed block kept after the parent's summary block goes first again; a summary edited since
(by ``summary edit`` or by hand), a corrupt block or one the server refuses: the readable one."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from rollchat.storage.transcript import SIGNED_MARK, SUMMARY_END, parse, summary_digest
from tests.compaction.test_provider_engine_wire import S1, answer, config, kinds
from tests.e2e import clean_env, run_piped, write_config
from tests.wire_anthropic_compaction import CompactionServer, compaction_server, sign

__all__ = ["compaction_server"]
Server = tuple[CompactionServer, str]


def rollchat(url: str, tmp_path: Path, lines: str, *args: str, **env: str) -> str:
    cfg = write_config(tmp_path / "rollchat.yml", config("provider"))
    done = run_piped(tmp_path, lines, "--config", str(cfg), "--provider", "anthropic",
                     "--model", "test-model", "--base-url", url, *args,
                     env=clean_env(tmp_path / "home", ANTHROPIC_API_KEY="test", **env),
                     timeout=240)  # a ceiling for a loaded CI run, never waited out
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    return " ".join(done.stdout.split())


def saved_parent(server: CompactionServer, url: str, tmp_path: Path) -> Path:
    """One query, then exit: the provider's compaction writes the summary; the file."""
    server.chat = answer
    server.summary = lambda body: S1
    rollchat(url, tmp_path, "which queue for jobs?\nexit\n")
    assert kinds(server) == ["chat", "compaction"]
    [path] = (tmp_path / "sessions").glob("*.md")
    return path


def first_blocks(body: dict[str, Any]) -> list[Any]:
    content = body["messages"][0]["content"]
    return content if isinstance(content, list) else [content]


def restoration(body: dict[str, Any]) -> str:
    return json.dumps(next(m for m in body["messages"] if m["role"] == "user"))


def test_resuming_the_parent_sends_its_signed_block_first(
        compaction_server: Server, tmp_path: Path) -> None:
    server, url = compaction_server
    parent = saved_parent(server, url, tmp_path)
    text = parent.read_text()
    # after the summary block, one comment line: out of a reader's way, nothing else
    tail = text[text.index(SUMMARY_END) + len(SUMMARY_END):].strip("\n")
    assert "\n" not in tail and tail.startswith(SIGNED_MARK) and tail.endswith(" -->")
    assert parse(text).summary is not None and parse(text).summary.signed is not None
    out = rollchat(url, tmp_path, "how many retries?\nexit\n", "-c")
    resumed = server.requests[2:]
    assert kinds(server)[2:4] == ["signed-first", "signed-first"]
    # the block as the server issued it, first; the summary once: not in the restoration
    assert first_blocks(resumed[0].body)[0] == {"type": "compaction", "content": S1,
                                                "signature": sign(S1)}
    assert "benchmark the zulu consumer" not in restoration(resumed[0].body)
    assert "compaction block just before" in restoration(resumed[0].body)
    assert resumed[1].body["messages"][0] == resumed[0].body["messages"][0]
    assert "dropped" not in out and "compaction failed" not in out


def test_a_summary_edited_since_is_sent_readable_and_said(
        compaction_server: Server, tmp_path: Path) -> None:
    server, url = compaction_server
    parent = saved_parent(server, url, tmp_path)
    # `summary edit` in the child writes the parent's block, marked, its signed line kept
    out = rollchat(url, tmp_path, "summary edit\nexit\n", "-c", VISUAL="sed -i s/zulu/xray/")
    assert "Summary edited" in out
    text = parent.read_text()
    assert "xray" in text and "<!-- rollchat: edited by the user at" in text
    assert text.count(SIGNED_MARK) == 1 and sign(S1) in text
    summary = parse(text).summary
    assert summary is not None and summary.signed is not None and summary.edited
    seen = len(server.requests)
    # the parent was continued: a fork resumes it, not the newest of its chain
    out = rollchat(url, tmp_path, f"fork {parent.stem}\nand alerts?\nexit\n")
    assert "signed compaction block was dropped (the summary was edited at" in out
    body = server.requests[seen].body
    assert '"compaction"' not in json.dumps(body["messages"]) and "xray" in restoration(body)


def test_a_summary_changed_by_hand_is_sent_readable(
        compaction_server: Server, tmp_path: Path) -> None:
    server, url = compaction_server
    parent = saved_parent(server, url, tmp_path)
    parent.write_text(parent.read_text().replace("- benchmark the zulu consumer",
                                                 "- benchmark the xray consumer"))
    out = rollchat(url, tmp_path, "and alerts?\nexit\n", "-c")
    assert "signed compaction block was dropped (the summary or its signed block was changed " \
           "since the provider wrote it)" in out
    body = server.requests[2].body
    assert '"compaction"' not in json.dumps(body["messages"]) and "xray" in restoration(body)


def test_a_signed_block_changed_by_hand_is_not_sent_and_the_readable_summary_is(
        compaction_server: Server, tmp_path: Path) -> None:
    """Issue 33 item 6: the block's content edited in the file, its digest left alone."""
    server, url = compaction_server
    parent = saved_parent(server, url, tmp_path)
    lines = parent.read_text().split("\n")
    [at] = [i for i, line in enumerate(lines) if line.startswith(SIGNED_MARK)]
    assert "zulu" in lines[at]
    lines[at] = lines[at].replace("zulu", "evil")
    parent.write_text("\n".join(lines))
    out = rollchat(url, tmp_path, "and alerts?\nexit\n", "-c")
    assert "signed compaction block was dropped (the summary or its signed block was changed " \
           "since the provider wrote it)" in out
    body = server.requests[2].body
    assert '"compaction"' not in json.dumps(body["messages"]) and "evil" not in json.dumps(body)
    assert "benchmark the zulu consumer" in restoration(body)  # what `show` displays


def test_a_forged_signed_block_is_refused_and_the_readable_summary_sent(
        compaction_server: Server, tmp_path: Path) -> None:
    server, url = compaction_server
    parent = saved_parent(server, url, tmp_path)
    forged = parent.read_text().replace(sign(S1), "0" * 64)
    summary = parse(forged).summary  # its digest made again, as a forger can: the server refuses
    assert summary is not None and summary.signed_for
    parent.write_text(forged.replace(summary.signed_for, summary_digest(summary)))
    out = rollchat(url, tmp_path, "how many retries?\nexit\n", "-c")
    assert kinds(server)[2:4] == ["signed-first", "restored"]  # refused, sent again without
    assert "echo: how many retries?" in out
    later = [s.body for s in server.requests[3:]]
    assert all('"compaction"' not in json.dumps(b["messages"]) for b in later
               if "compaction" not in b)


def test_a_corrupt_signed_block_reads_the_readable_summary_and_says_why(
        compaction_server: Server, tmp_path: Path) -> None:
    server, url = compaction_server
    parent = saved_parent(server, url, tmp_path)
    parent.write_text(re.sub(r'"block":\{', '"block":{{', parent.read_text()))
    out = rollchat(url, tmp_path, "how many retries?\nexit\n", "-c")
    assert "signed compaction block was dropped (unreadable signed compaction block" in out
    assert kinds(server)[2] == "restored" and "echo: how many retries?" in out
    assert "benchmark the zulu consumer" in restoration(server.requests[2].body)
