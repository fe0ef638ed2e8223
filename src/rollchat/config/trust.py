"""Trust for project config files (./rollchat.yml in the directory rollchat starts in): which
settings need it, the record of trusted files (path and SHA-256, in the user config directory),
and the one line that says what an untrusted file could not set."""

from __future__ import annotations

import json
import os
import secrets
from collections.abc import Callable, MutableMapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rollchat.errors import ConfigError
from rollchat.providers.names import AUTO, OFFLINE

TRUST_FILE = "trusted.json"
TRUST_COMMAND = "rollchat trust"
# Settings that can send the API key (or another secret) somewhere else: never from an
# untrusted file. Paths are allowed while they stay inside the project directory.
# An agent file is code, and approval and allow let tools run unasked: never untrusted either.
KEY_SETTINGS = ("base_url", "api_key_env", "file", "approval", "allow")
PATH_SETTINGS = ("system_prompt_file", "history_file", "dir", "skills_dir", "user_dir")
# Settings never taken untrusted, by their dotted key: which files become the system prompt
# and how much of them (instructions: the user's own files too), and where memory is kept
# (facts planted in a repository must not become "facts about the user").
TRUSTED_ONLY = ("instructions.files", "instructions.max_bytes", "memory.dir", "memory.user_dir")
# Limits an untrusted file may tighten (at most the default) but never loosen: more output,
# more rounds, more retries, longer waits, larger requests (a higher compaction threshold, a
# longer kept tail) and compactions the user did not ask for (compact_every_turns: 0 is off)
# cost money and time the user did not choose; a slower offline model (offline_word_delay, at
# most a terminal's delay) only wastes it.
LIMITS = ("max_output_tokens", "max_tool_rounds", "max_retries", "base_delay", "max_delay",
          "request_timeout", "max_words", "timeout_seconds", "max_tokens", "last_n",
          "max_share", "extract_timeout_seconds", "compact_threshold", "keep_recent_turns",
          "compact_every_turns", "offline_word_delay")
# Margins: larger is safer (compaction comes earlier), so an untrusted file may raise one (up to
# its cap) but never lower it below the default.
MARGINS = ("safety_margin_tokens",)
# Sizes whose default depends on the model or the server (None): an untrusted file may set
# null or one of these values (each at most any default), nothing larger. concurrency: 1
# request at a time (the default for a local server; the official APIs take any number);
# max_result_tokens: none (its default is a tenth of the window, not known here); thinking:
# off (a budget or "on" spends output tokens the user did not choose).
SIZES: dict[str, tuple[object, ...]] = {"concurrency": (1,), "max_result_tokens": (),
                                        "thinking": ("off",)}
# Settings that choose who reads the conversation or what it costs, by their name: taken from
# an untrusted file only with one of these values (nothing sent elsewhere, no call or cost
# added). provider/model (agents.*, summary.*): the conversation sent with the user's keys to
# another provider or a dearer model; summary.on_exit/one_shot "model": a summary call the user
# did not choose; session.history "relevant": prompt caching off, every request paid in full.
SAFE_ONLY: dict[str, tuple[object, ...]] = {
    "provider": (None, AUTO, OFFLINE), "model": (None,), "on_exit": ("auto", "local", "skip"),
    "one_shot": ("local",), "history": ("all",)}
# A time whose default is the safe side from below: memory.idle_seconds lower than its
# default is a fact-extraction call at every pause; 0 (never) or a longer wait is taken.
OFF_OR_LONGER = ("idle_seconds",)
# By their key in a ``models.<name>`` entry: ``store: true`` has OpenAI keep the conversation on
# its servers, and a ``price`` changes the costs the user is shown. Never untrusted (store:
# false, the default, is taken).
MODEL_TRUSTED_ONLY = ("price",)
# Sizes by their key in a ``models.<name>`` entry: a window set lower multiplies compactions
# (summary calls), a higher one sends requests past the model's own. Never untrusted.
MODEL_SIZES = ("context_window",)


@dataclass(frozen=True)
class Untrusted:
    """A project file read without trust: its directory (paths must stay inside it) and why
    it is not trusted ("is not trusted", "changed since you trusted it")."""

    project_dir: Path
    reason: str


TrustCheck = Callable[[str], "Untrusted | None"]  # the file's SHA-256 -> None when trusted


def _inside(path: Path, root: Path) -> bool:
    try:
        path.resolve().relative_to(root.resolve())
    except (ValueError, OSError, RuntimeError):  # outside, or a symlink loop
        return False
    return True


def confine(values: MutableMapping[str, Any], dotted: str, base_dir: Path,
            untrusted: Untrusted | None, ignored: list[str], defaults: object = None) -> None:
    """Drop from ``values`` (one mapping of the file, at ``dotted``) what an untrusted file may
    not set, adding the dotted keys to ``ignored``; a no-op for a trusted file. ``defaults``:
    the part's default values, which a limit may not exceed."""
    if untrusted is None:
        return
    for name in list(values):
        key, value = f"{dotted}.{name}", values[name]
        if key in TRUSTED_ONLY:
            pass
        elif name in LIMITS:  # (a limit with no default to compare with is never taken)
            default = getattr(defaults, name, None)
            if value is None or (default is not None and value <= default):
                continue
        elif name in MARGINS:
            default = getattr(defaults, name, None)
            if value is None or (default is not None and value >= default):
                continue
        elif name in SIZES:
            if value is None or value in SIZES[name]:
                continue
        elif name in SAFE_ONLY:
            if value in SAFE_ONLY[name]:
                continue
        elif name in OFF_OR_LONGER:
            default = getattr(defaults, name, None)
            if value == 0 or (default is not None and value >= default):
                continue
        elif name in PATH_SETTINGS and name not in KEY_SETTINGS:
            if value is None or _inside(value if value.is_absolute() else base_dir / value,
                                        untrusted.project_dir):
                continue
        elif name not in KEY_SETTINGS:
            continue
        del values[name]
        ignored.append(key)


def confine_model(values: MutableMapping[str, Any], dotted: str, untrusted: Untrusted | None,
                  ignored: list[str]) -> None:
    """The same for one ``models.<name>`` entry: its sizes and price never untrusted, ``store``
    only when false."""
    if untrusted is None:
        return
    for name in (*MODEL_SIZES, *MODEL_TRUSTED_ONLY, "store"):
        if values.get(name) is not None and (name != "store" or values[name]):
            del values[name]
            ignored.append(f"{dotted}.{name}")


def notice(display: str, untrusted: Untrusted, ignored: list[str]) -> str | None:
    """The one line shown when settings were ignored (None when none were)."""
    if not ignored:
        return None
    keys = ", ".join(ignored)
    if untrusted.reason == CHANGED:
        return (f"{display} changed since you trusted it, so {keys} {_were(ignored)} ignored; "
                f"review the file, then run `{TRUST_COMMAND}` to apply {_them(ignored)}")
    names = {k.rsplit(".", 1)[-1] for k in ignored}
    risks = ["send your API key elsewhere", "use files outside this directory"]
    if any(k.startswith("instructions.") for k in ignored):
        risks.append("choose which files are sent as instructions")
    if any(k.startswith("memory.") and k.rsplit(".", 1)[-1] in ("dir", "user_dir")
           for k in ignored):
        risks.append("choose where memory is kept")
    if names & set(LIMITS):
        risks.append("raise a limit")
    if names & set(MARGINS):
        risks.append("lower a safety margin")
    if names & {*SIZES, *MODEL_SIZES}:
        risks.append("size requests")
    if names & {"provider", "model"}:
        risks.append("send your conversation to another provider or model")
    if "store" in names:
        risks.append("have the provider keep your conversation")
    if names & {"on_exit", "one_shot", "history", *OFF_OR_LONGER}:
        risks.append("add model calls or turn off prompt caching")
    if "price" in names:
        risks.append("change the costs you are shown")
    if any(n.startswith("mcp_servers") for n in names):
        risks.append("start MCP servers")
    if "hooks" in names:
        risks.append("run commands (hooks)")
    if names & {"file", "approval", "allow"}:
        risks.append("run code or tools without asking")
    what = ", ".join(risks[:-1]) + " or " + risks[-1]
    return (f"{display} is not trusted, so {keys} {_were(ignored)} ignored (settings that "
            f"{what}); if you trust the file, run `{TRUST_COMMAND}` to apply {_them(ignored)}")


def _were(items: list[str]) -> str:
    return "was" if len(items) == 1 else "were"


def _them(items: list[str]) -> str:
    return "it" if len(items) == 1 else "them"


# ---------------------------------------------------------------------------------------------
# The record of trusted files.

NOT_TRUSTED = "is not trusted"
CHANGED = "changed since you trusted it"


def _record_path(user_config_dir: Path) -> Path:
    return user_config_dir / TRUST_FILE


def _read_record(user_config_dir: Path) -> dict[str, str]:
    """The trusted files (absolute path -> SHA-256); ConfigError when the record is unreadable
    or damaged (it is never silently replaced)."""
    path = _record_path(user_config_dir)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise ConfigError(f"{path}: cannot read the list of trusted config files ({exc}); "
                          "fix or delete it, then trust your project files again") from None
    files = data.get("files") if isinstance(data, dict) else None
    if not isinstance(files, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in files.items()):
        raise ConfigError(f"{path}: not a list of trusted config files; fix or delete it, then "
                          "trust your project files again")
    return dict(files)


def trust_check(path: Path, user_config_dir: Path) -> TrustCheck:
    """How load_file asks whether the project file at ``path`` is trusted: its hash must be
    the one recorded for its path. A damaged record trusts nothing."""
    key = str(path.resolve())

    def check(sha256: str) -> Untrusted | None:
        try:
            recorded = _read_record(user_config_dir).get(key)
        except ConfigError:
            recorded = None
        if recorded == sha256:
            return None
        return Untrusted(path.parent, NOT_TRUSTED if recorded is None else CHANGED)

    return check


def record_trust(path: Path, sha256: str, user_config_dir: Path) -> Path:
    """Record ``path`` as trusted with this content hash (replacing an older hash); the record
    is rewritten atomically, owner-only. Returns the record's path."""
    files = _read_record(user_config_dir)
    files[str(path.resolve())] = sha256
    target = _record_path(user_config_dir)
    tmp = target.with_name(f".{TRUST_FILE}.tmp-{os.getpid()}-{secrets.token_hex(4)}")
    try:
        user_config_dir.mkdir(parents=True, mode=0o700, exist_ok=True)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump({"version": 1, "files": files}, handle, indent=2, sort_keys=True)
            handle.write("\n")
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, target)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise ConfigError(f"{target}: cannot record the trust: {exc.strerror or exc}") from None
    return target
