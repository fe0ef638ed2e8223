"""``rollchat show`` and ``compact --refresh`` of one huge session (issue 33, item 5): time and
peak memory (the child's ru_maxrss) of ``show`` piped to a file, ``show`` in a terminal (a pty;
$PAGER counts the bytes it is given) and ``compact --refresh``, for this tree and another
(``--old SRC``: e.g. main's src exported with ``git archive``), side by side in one run.

Run: .venv/bin/python bench/bench_show.py [--turns 200000] [--large N] [--old /tmp/rollchat-old/src]
     [--timeout 300] [--only piped terminal refresh]

``--large N``: N turns of 2.5 MB answers instead (prose paragraphs, every 7th a two-item
``- **item** ...`` list): 40 is a 100 MB session of few very large turns. The terminal is a
colour one (TERM=xterm-256color, COLORTERM=truecolor), as most are.
"""

# The session is written directly (render_header + render_turn), not imported: the phrases of
# bench_scale (near-identical prose), and every 40th turn one rich draws (a markdown list, a
# tool call and its result), so both of show's paths are taken.

from __future__ import annotations

import argparse
import os
import platform
import pty
import random
import select
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_scale import ROOT, WHEN, phrases

SESSION = "assistant_20261201_120000_b1g5"


def _write(directory: Path, count: int, turns: Iterator[Any]) -> Path:
    """The session file of ``count`` turns (``turns`` makes them), readable by its owner only."""
    from rollchat.domain import SessionHeader
    from rollchat.storage.transcript import render_header, render_turn

    header = SessionHeader(SESSION, WHEN, "Assistant", "config:assistant", "offline-model",
                           "offline", total_queries=count)
    path = directory / f"{SESSION}.md"
    with open(path, "w", encoding="utf-8") as f:
        f.write(render_header(header))
        for turn in turns:
            f.write(render_turn(turn, "Assistant"))
    os.chmod(path, 0o600)
    return path


def write_session(directory: Path, count: int) -> Path:
    from rollchat.domain import ToolCall, ToolExchange, Turn, Usage, answer_blocks

    rng = random.Random(count)

    def turns() -> Iterator[Turn]:
        for i in range(count):
            user, reply = phrases(i, rng)
            tools: tuple[ToolExchange, ...] = ()
            if i % 40 == 39:
                reply = f"Two things:\n\n- **first** {reply}\n- `second`"
                call = ToolCall(f"call_{i}", "read_file", {"path": f"src/m{i}.py"})
                tools = (ToolExchange(call, "line one\nline two"),)
            yield Turn("query", i + 1, WHEN + timedelta(seconds=i), user,
                       answer_blocks(reply, tools), elapsed=1.5,
                       usage=Usage(120 + i % 50, 40 + i % 30))

    return _write(directory, count, turns())


def write_large(directory: Path, count: int, size: int = 2_500_000) -> Path:
    """``count`` turns whose answers are ``size`` characters of markdown each."""
    from rollchat.domain import Turn, Usage, answer_blocks

    rng = random.Random(count)

    def turns() -> Iterator[Turn]:
        for i in range(count):
            blocks: list[str] = []
            length = 0
            while length < size:
                user, reply = phrases(len(blocks), rng)
                if len(blocks) % 7 == 6:
                    block = f"- **item** {reply}\n- `second` {user}"
                else:
                    block = f"{reply} {user} {reply}"
                blocks.append(block)
                length += len(block) + 2
            yield Turn("query", i + 1, WHEN + timedelta(seconds=i), f"question {i}",
                       answer_blocks("\n\n".join(blocks)), elapsed=1.5,
                       usage=Usage(120 + i, 40 + i))

    return _write(directory, count, turns())


def run(src: Path, command: list[str], timeout: float, *, terminal: bool,
        ) -> tuple[float | None, int, str, float]:
    """``command`` with rollchat from ``src``: (seconds or None, peak RSS in KB, what it said
    last or why it failed, the child's CPU seconds: user + system, which a shared machine's
    load inflates far less than the wall time). Piped: stdout to /dev/null through a file;
    terminal: a pty."""
    env = {**os.environ, "PYTHONPATH": f"{src}{os.pathsep}{ROOT}", "PAGER": "wc -c",
           "LESS": ""}
    env.pop("NO_COLOR", None)
    if terminal:
        env.update(TERM="xterm-256color", COLORTERM="truecolor")
    else:
        env["NO_COLOR"] = "1"
    start = time.perf_counter()
    if terminal:
        master, slave = pty.openpty()
        proc = subprocess.Popen(command, env=env, stdin=slave, stdout=slave, stderr=slave)
        os.close(slave)
    else:
        master = -1
        out = open(os.devnull, "wb")  # noqa: SIM115
        proc = subprocess.Popen(command, env=env, stdin=subprocess.DEVNULL, stdout=out,
                                stderr=subprocess.PIPE)
    said = b""
    try:
        deadline = start + timeout
        while True:
            if master >= 0:
                ready, _, _ = select.select([master], [], [], 0.5)
                if ready:
                    try:
                        chunk = os.read(master, 65536)
                    except OSError:
                        chunk = b""
                    said = (said + chunk)[-400:]
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.perf_counter() > deadline:
                proc.kill()
                proc.wait()
                return None, 0, f"did not finish in {timeout:.0f} s", 0.0
            if master < 0:
                time.sleep(0.2)
        seconds = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        if master < 0:
            assert proc.stderr is not None
            said = proc.stderr.read()[-400:]
    finally:
        if master >= 0:
            os.close(master)
        else:
            out.close()
        if proc.returncode is None:
            proc.kill()
            proc.wait()
    last = (said.decode("utf-8", "replace").strip().splitlines() or [""])[-1]
    cpu = usage.ru_utime + usage.ru_stime
    if proc.returncode != 0:
        return None, usage.ru_maxrss, f"exit {proc.returncode}: {last}", cpu
    return seconds, usage.ru_maxrss, last, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=200_000)
    parser.add_argument("--large", type=int, default=0,
                        help="this many turns of 2.5 MB instead (40: 100 MB)")
    parser.add_argument("--old", type=Path, help="another tree's src to run beside this one")
    parser.add_argument("--timeout", type=float, default=300.0)
    parser.add_argument("--only", nargs="*", default=["piped", "terminal", "refresh"])
    args = parser.parse_args()
    trees = {"this tree": ROOT / "src"}
    if args.old:
        trees["--old"] = args.old
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, Python "
          f"{platform.python_version()}, load {os.getloadavg()[0]:.1f}")
    with tempfile.TemporaryDirectory(prefix="bench-show-") as tmp:
        work = Path(tmp)
        config = work / "rollchat.yml"
        config.write_text("agents:\n  assistant:\n    provider: offline\n", encoding="utf-8")
        made = work / "made"
        made.mkdir()
        path = (write_large(made, args.large) if args.large else
                write_session(made, args.turns))
        count = args.large or args.turns
        print(f"session: {count:,} turns, {path.stat().st_size / 1e6:.1f} MB\n")
        print("| stage | " + " | ".join(trees) + " |")
        print("| --- |" + " --- |" * len(trees))
        stages = [("piped", "show, piped to a file", ["show", SESSION], False),
                  ("terminal", "show in a terminal (pty, PAGER='wc -c')", ["show", SESSION],
                   True),
                  ("refresh", "compact --refresh", ["compact", SESSION, "--refresh"], False)]
        for key, label, what, terminal in stages:
            if key not in args.only:
                continue
            cells = []
            for name, src in trees.items():
                copy = work / f"sessions-{name.replace(' ', '-')}"
                shutil.copytree(made, copy)
                command = [sys.executable, "-m", "rollchat", *what, "--sessions-dir",
                           str(copy), "--config", str(config)]
                seconds, peak, said, cpu = run(src, command, args.timeout, terminal=terminal)
                cells.append(said if seconds is None else
                             f"{seconds:.2f} s (CPU {cpu:.2f} s), peak {peak / 1024:.0f} MB")
                shutil.rmtree(copy)
            print(f"| {label} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
