"""Attaching files to a message, as a user does in the chat (piped through the CLI) against
the local Anthropic wire server with the real SDK: an image goes as an image before the text,
a text file after the message in a fence that names it; the transcript keeps the text and a
reference to the image saved beside the session; a file that cannot be attached says why and
sends nothing."""

from __future__ import annotations

import base64
import os
from pathlib import Path

from rollchat.storage.transcript import parse
from tests.agents.test_tool_images import png
from tests.e2e import PROMPT, clean_env, run_piped
from tests.terminal import Terminal, run_chat
from tests.wire_servers import WireServer, anthropic_server, text

__all__ = ["anthropic_server"]  # the fixture, imported for pytest


def _chat(server: WireServer, tmp_path: Path, lines: str) -> tuple[str, int]:
    done = run_piped(tmp_path, lines, "--provider", "anthropic", "--model", "test-model",
                     "--base-url", server.url,
                     env=clean_env(tmp_path / "home", ANTHROPIC_API_KEY="test"))
    return done.stdout + done.stderr, done.returncode


def test_an_image_and_a_text_file_go_with_the_next_message(anthropic_server: WireServer,
                                                           tmp_path: Path) -> None:
    image = png(4, 4)
    (tmp_path / "shot.png").write_bytes(image)
    (tmp_path / "notes.md").write_text("# Notes\n```\ncode\n```\n", encoding="utf-8")
    anthropic_server.push(text("A screenshot and notes."), text("Fine."))
    out, code = _chat(anthropic_server, tmp_path,
                      "attach shot.png\nattach 'notes.md'\nattach\nwhat are these?\nthanks\n")
    assert code == 0, out
    assert "Attached shot.png (image/png" in out and "Attached notes.md (" in out
    first = anthropic_server.bodies[0]["messages"][-1]["content"]
    assert first[0] == {"type": "image", "source": {
        "type": "base64", "media_type": "image/png", "data": base64.b64encode(image).decode()}}
    said = first[1]["text"]
    assert said.endswith("what are these?\n\n[attached file notes.md]\n````\n# Notes\n```\n"
                         "code\n```\n````")
    second = anthropic_server.bodies[1]["messages"]  # the image is sent again, byte for byte
    assert second[0]["content"][0] == first[0]
    assert all(b.get("type") != "image" for b in second[-1]["content"])  # attached once
    [session] = (tmp_path / "sessions").glob("*.md")
    turns = parse(session.read_text(encoding="utf-8")).turns
    [attached] = turns[0].attached
    assert (session.parent / attached.path).read_bytes() == image
    assert "[attached file notes.md]" in turns[0].user and turns[1].attached == ()


def test_what_cannot_be_attached_says_why_and_sends_nothing(anthropic_server: WireServer,
                                                            tmp_path: Path) -> None:
    (tmp_path / "blob.bin").write_bytes(b"\x00\xff\xfe binary")
    (tmp_path / "big.png").write_bytes(b"\x89PNG\r\n\x1a\n" + b"\0" * (6 * 1024 * 1024))
    anthropic_server.push(text("Hello."))
    out, code = _chat(anthropic_server, tmp_path,
                      "attach missing.png\nattach blob.bin\nattach big.png\nattach .\nhi\n")
    assert code == 0, out
    assert "attach: no such file: missing.png" in out
    assert "attach: blob.bin is neither UTF-8 text nor an image" in out
    assert "attach: big.png: image: image/png, 6,291,464 bytes, not shown: cannot be read as an " \
        "image" in " ".join(out.split())
    assert "attach: . is a folder" in out
    body = anthropic_server.bodies[0]  # only "hi" went to the model, with nothing attached
    assert [m["role"] for m in body["messages"]] == ["user"]
    assert body["messages"][0]["content"][-1]["text"].endswith("hi")
    assert "image" not in str(anthropic_server.bodies) and "attach" not in str(body)


SECRET = "sk-ant-attach-secret-0123456789"


def test_attach_keeps_to_regular_files_of_the_project(anthropic_server: WireServer,
                                                      tmp_path: Path) -> None:
    """The attacks of issue 33 (item 4): a symlink in a cloned project that leads to
    /proc/self/environ (the API key), files outside the project named by the user (piped: no
    one to ask), a FIFO (the chat hung on it), a device and a huge file (sizes told right)."""
    project, outside = tmp_path / "project", tmp_path / "x"
    (project / "docs").mkdir(parents=True)
    outside.write_text("outside the project\n", encoding="utf-8")
    (project / "docs" / "notes.txt").symlink_to("/proc/self/environ")
    (project / "docs" / "up.md").symlink_to(outside)
    (project / "ok.md").symlink_to(project / "docs" / "real.md")  # a link inside: fine
    (project / "docs" / "real.md").write_text("inside\n", encoding="utf-8")
    os.mkfifo(project / "pipe")
    with open(project / "huge.log", "wb") as f:
        f.truncate(int(3.1 * 2**30))  # sparse: no disk used
    anthropic_server.push(text("Hello."))
    lines = ["attach docs/notes.txt", "attach docs/up.md", "attach ../x", "attach /etc/shadow",
             f"attach {outside}", "attach pipe", "attach /dev/zero", "attach huge.log",
             "attach /proc/self/environ", "attach ok.md", "hi"]
    done = run_piped(project, "\n".join(lines) + "\n", "--provider", "anthropic", "--model",
                     "test-model", "--base-url", anthropic_server.url, timeout=30,
                     env=clean_env(tmp_path / "home", ANTHROPIC_API_KEY=SECRET))
    out = done.stdout + done.stderr
    assert done.returncode == 0, out
    assert "attach: docs/notes.txt links outside the project to /proc/self/environ" in out
    assert f"attach: docs/up.md links outside the project to {outside}" in out
    assert f"attach: ../x is outside the project ({outside}); attaching it is asked in a " \
        "terminal, never from piped input" in out
    assert "attach: /etc/shadow is outside the project (/etc/shadow)" in out
    assert f"attach: {outside} is outside the project" in out
    assert "attach: pipe is a FIFO (a named pipe), not a file" in out
    assert "attach: /dev/zero is a device, not a file" in out
    assert "attach: huge.log is 3.1 GB, over the 5 MB an attachment may be" in out
    assert "attach: /proc/self/environ is a proc file" in out
    assert "Attached ok.md (7 characters of text)" in out
    sent = str(anthropic_server.bodies)  # the message and the session's summary
    assert SECRET not in sent and "outside the project" not in sent and "root:" not in sent
    assert "[attached file ok.md]" in str(anthropic_server.bodies[0])
    [session] = (project / "sessions").glob("*.md")
    assert SECRET not in session.read_text(encoding="utf-8")


def test_a_file_outside_the_project_is_asked_once_in_a_terminal(
        anthropic_server: WireServer, tmp_path: Path) -> None:
    project, outside = tmp_path / "project", tmp_path / "x.md"
    project.mkdir()
    outside.write_text("from outside\n", encoding="utf-8")
    anthropic_server.push(text("Got it."))

    def script(term: Terminal) -> None:
        term.expect_exact(PROMPT)
        term.sendline("attach ../x.md")
        # (the question is wrapped at words to the terminal's width: the path is long)
        term.expect(r"is outside this project\. Send it to the\s+model\?")
        term.sendline("n")
        term.expect_exact("outside the project")
        term.expect_exact(PROMPT)
        term.sendline("attach ../x.md")
        term.expect(r"Send it to the\s+model\?")
        term.sendline("y")
        term.expect_exact("Attached ../x.md (13 characters of text)")
        term.expect_exact(PROMPT)
        term.sendline(f"attach {outside}")  # the same file: asked once
        term.expect_exact(f"Attached {outside} (13 characters of text)")
        term.expect_exact(PROMPT)
        term.sendline("exit")
        term.expect_exact("Goodbye!")

    assert run_chat(project, ["--provider", "anthropic", "--model", "test-model",
                                           "--base-url", anthropic_server.url], script,
                    env=clean_env(tmp_path / "home", ANTHROPIC_API_KEY="test")) == 0
    assert not anthropic_server.bodies  # nothing was sent: only attached
