"""What a hook that prints without end costs rollchat: the peak resident memory of a piped
offline chat (``rollchat`` itself, through wait4) whose UserPromptSubmit hook prints N MB
(``yes | head -c N``), and how long the message took. The hook's output is read bounded
(tools/children.py): the peak should not grow with N.

Usage: python bench/bench_hook_output.py [--mb 100 400 1600]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def run(mb: int) -> tuple[float, float]:
    """(peak RSS in MB, seconds) of one chat whose hook prints ``mb`` MB."""
    with tempfile.TemporaryDirectory() as tmp:
        where = Path(tmp)
        command = f"yes | head -c {mb * 1_000_000}"
        (where / "config.yml").write_text(
            "summary:\n  provider: offline\nmemory:\n  enabled: false\nui:\n"
            "  offline_word_delay: 0\nhooks:\n  UserPromptSubmit:\n"
            f"    - command: {json.dumps(command)}\n", encoding="utf-8")
        env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
        env.update(HOME=str(where / "home"), XDG_CONFIG_HOME=str(where / "home" / "config"),
                   XDG_DATA_HOME=str(where / "home" / "data"))
        started = time.perf_counter()
        child = subprocess.Popen([sys.executable, "-m", "rollchat", "--config",
                                  str(where / "config.yml"), "--provider", "offline"],
                                 cwd=where, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL, env=env)
        assert child.stdin is not None
        child.stdin.write(b"hello\n")
        child.stdin.close()
        _, status, usage = os.wait4(child.pid, 0)
        seconds = time.perf_counter() - started
        assert os.waitstatus_to_exitcode(status) == 0, status
        return usage.ru_maxrss / 1024, seconds


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mb", type=int, nargs="+", default=[100, 400, 1600])
    args = parser.parse_args()
    for mb in args.mb:
        peak, seconds = run(mb)
        print(f"hook prints {mb:>5} MB: rollchat peak RSS {peak:7.1f} MB, {seconds:5.1f} s")


if __name__ == "__main__":
    main()
