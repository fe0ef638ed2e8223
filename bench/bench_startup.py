"""Start-up time: `rollchat --version` and the time until the first prompt is drawn.

Usage: python bench/bench_startup.py [--runs N]
Runs side by side with `python -c pass` (the interpreter's own floor) and a bare
prompt_toolkit PromptSession (the floor of any prompt_toolkit REPL), so the ratios are
meaningful on a noisy machine. Needs pexpect (installed with the test extra).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

import pexpect

# Like a user's machine: byte-code caches are written and reused (this sandbox sets
# PYTHONDONTWRITEBYTECODE, which would recompile every module of rollchat at every start).
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def _time_cmd(args: list[str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(args, check=True, stdout=subprocess.DEVNULL, env=ENV)
    return time.perf_counter() - t0


# The same first prompt, drawn by prompt_toolkit alone (with a bottom toolbar, as rollchat's).
BARE = ("from prompt_toolkit import PromptSession\n"
        "PromptSession(bottom_toolbar=' toolbar ').prompt('You: ')")


def _time_first_prompt(tmp: str, bare: bool = False) -> float:
    env = {**ENV, "PROMPT_TOOLKIT_NO_CPR": "1", "HOME": tmp, "XDG_DATA_HOME": tmp,
           "XDG_CONFIG_HOME": tmp, "TERM": "xterm"}
    for key in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY"):
        env.pop(key, None)
    args = ["-c", BARE] if bare else ["-m", "rollchat", "--sessions-dir", f"{tmp}/s"]
    t0 = time.perf_counter()
    child = pexpect.spawn(sys.executable, args, env=env, cwd=tmp, encoding="utf-8", timeout=10)
    child.expect("You:")
    elapsed = time.perf_counter() - t0
    child.sendeof()
    child.expect(pexpect.EOF)
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=15)
    runs = parser.parse_args().runs
    rollchat = [sys.executable, "-m", "rollchat", "--version"]
    floor, version, bare, prompt = [], [], [], []
    with tempfile.TemporaryDirectory() as tmp:
        _time_first_prompt(tmp)  # warm the file cache
        _time_first_prompt(tmp, bare=True)
        for _ in range(runs):
            floor.append(_time_cmd([sys.executable, "-c", "pass"]))
            version.append(_time_cmd(rollchat))
            bare.append(_time_first_prompt(tmp, bare=True))
            prompt.append(_time_first_prompt(tmp))
    for name, values in (("python -c pass", floor), ("rollchat --version", version),
                         ("bare PromptSession", bare), ("first prompt", prompt)):
        med = statistics.median(values)
        print(f"{name:<20} median {med * 1000:7.1f} ms   min {min(values) * 1000:7.1f} ms   "
              f"x{med / statistics.median(floor):.1f} of the interpreter floor   "
              f"x{med / statistics.median(bare):.2f} of a bare PromptSession")


if __name__ == "__main__":
    main()
