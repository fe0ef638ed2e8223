"""Asking a server the model's context window before the first request: llama.cpp
(``/v1/models`` meta ``n_ctx``, ``/props``), vLLM (``max_model_len``), OpenRouter and others
(``context_length``), Ollama (``/api/show``: ``num_ctx`` as configured, else ``/api/ps``), LM
Studio (``/api/v0/models``); a provider that tells it through its SDK (``WindowTeller``:
Anthropic's ``GET /v1/models/{id}``, ``max_input_tokens``)."""

# The shapes: tests/fixtures/real/ (llama.cpp's own bytes, recorded) and the Ollama and vLLM
# documented ones beside them (their sources in PROVENANCE.md). Each question has a short
# timeout and any failure is "nothing stated": the window then comes from the table.

from __future__ import annotations

import json
import re
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, Protocol, runtime_checkable
from urllib.parse import urlsplit, urlunsplit

WindowSource = Literal["server", "configured", "guess"]
PROBE_SECONDS = 2.0  # each question; a local server answers these in milliseconds
OLLAMA_DEFAULT = 4_096  # docs/context-length.mdx: "< 24 GiB VRAM: 4k context"


@dataclass(frozen=True)
class StatedWindow:
    """A window a server told: ``source`` server (stated), configured (Ollama's num_ctx) or
    guess (Ollama's default, the model's own length not being what it runs with);
    ``where``: the endpoint and field that said it."""

    tokens: int
    source: WindowSource
    where: str


@runtime_checkable
class WindowTeller(Protocol):
    """A provider that tells a model's window itself (its SDK's models endpoint); None when
    it does not say. Raises when the server cannot be reached (asked again later)."""

    def stated_window(self, model: str) -> StatedWindow | None: ...


Fetch = Callable[[str, "Mapping[str, Any] | None"], Any]  # (url, JSON body or None) -> JSON


def fetch_json(url: str, body: Mapping[str, Any] | None,
               timeout: float = PROBE_SECONDS) -> Any:
    """GET (or POST ``body``) ``url``; its JSON, or None on any failure."""
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, data=data, headers={
        "Content-Type": "application/json", "Accept": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return json.loads(response.read(1_000_000))
    except (OSError, ValueError, urllib.error.URLError):
        return None


def server_root(base_url: str) -> str:
    """``http://host:port`` plus any path before ``/v1`` (where the native APIs live)."""
    parts = urlsplit(base_url)
    path = re.sub(r"/v1/?$", "", parts.path.rstrip("/"))
    return urlunsplit((parts.scheme, parts.netloc, path, "", ""))


def probe_window(base_url: str, model: str, fetch: Fetch = fetch_json) -> StatedWindow | None:
    """The window the server at ``base_url`` states for ``model``; None when none does."""
    root = server_root(base_url)
    models = fetch(f"{root}/v1/models", None)
    found = from_models(models, model)
    if found is not None:
        return found
    if _llama_cpp(models):  # its models without meta (a router's): /props says it
        found = from_props(fetch(f"{root}/props", None))
        if found is not None:
            return found
    version = fetch(f"{root}/api/version", None)  # Ollama's: POST only to an Ollama server
    if isinstance(version, Mapping) and "version" in version:
        return from_ollama(fetch(f"{root}/api/show", {"model": model}),
                           fetch(f"{root}/api/ps", None), model)
    return from_lm_studio(fetch(f"{root}/api/v0/models", None), model)


def reported_model(base_url: str, fetch: Fetch = fetch_json) -> str | None:
    """The model a server reports at ``/v1/models`` when it serves just one (llama.cpp: its
    ``-m`` path or ``--alias``); None when it reports none, several, or does not answer."""
    models = fetch(f"{server_root(base_url)}/v1/models", None)
    data = models.get("data") if isinstance(models, Mapping) else None
    if not isinstance(data, list) or len(data) != 1 or not isinstance(data[0], Mapping):
        return None
    name = data[0].get("id")
    return name if isinstance(name, str) and name.strip() else None


def _llama_cpp(models: object) -> bool:
    data = models.get("data") if isinstance(models, Mapping) else None
    return isinstance(data, list) and any(
        isinstance(e, Mapping) and e.get("owned_by") == "llamacpp" for e in data)


def _positive(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 \
        else None


def _entry(data: object, model: str, key: str = "id") -> Mapping[str, Any] | None:
    """The entry of ``model`` in a ``data`` / ``models`` list (the only one if just one)."""
    if not isinstance(data, list):
        return None
    entries = [e for e in data if isinstance(e, Mapping)]
    for entry in entries:
        if entry.get(key) == model or entry.get("name") == model:
            return entry
    return entries[0] if len(entries) == 1 else None


def from_models(body: object, model: str) -> StatedWindow | None:
    """``/v1/models``: llama.cpp's ``meta.n_ctx`` (its ``n_ctx_train`` is not it), vLLM's
    ``max_model_len``, ``context_length`` (OpenRouter's, SGLang's)."""
    entry = _entry(body.get("data"), model) if isinstance(body, Mapping) else None
    if entry is None:
        return None
    meta = entry.get("meta")
    if isinstance(meta, Mapping) and _positive(meta.get("n_ctx")):
        return StatedWindow(meta["n_ctx"], "server", "/v1/models meta.n_ctx")
    for field in ("max_model_len", "context_length"):  # vLLM; OpenRouter, SGLang and others
        if _positive(entry.get(field)):
            return StatedWindow(entry[field], "server", f"/v1/models {field}")
    return None


def from_props(body: object) -> StatedWindow | None:
    """llama.cpp's ``/props``: ``default_generation_settings.n_ctx``."""
    settings = body.get("default_generation_settings") if isinstance(body, Mapping) else None
    n_ctx = _positive(settings.get("n_ctx")) if isinstance(settings, Mapping) else None
    return StatedWindow(n_ctx, "server", "/props n_ctx") if n_ctx else None


def from_ollama(show: object, running: object, model: str) -> StatedWindow | None:
    """Ollama: ``num_ctx`` as configured in the model's parameters (what it runs with),
    else the loaded model's ``context_length`` (``/api/ps``), else its default (4K) within
    the model's own ``<arch>.context_length`` (a guess: the server may be set otherwise)."""
    if not isinstance(show, Mapping):
        return None
    match = re.search(r"^\s*num_ctx\s+(\d+)", str(show.get("parameters") or ""), re.M)
    if match and int(match.group(1)) > 0:
        return StatedWindow(int(match.group(1)), "configured", "/api/show parameters num_ctx")
    loaded = _entry(running.get("models"), model, "model") if isinstance(
        running, Mapping) else None
    if loaded is not None and _positive(loaded.get("context_length")):
        return StatedWindow(loaded["context_length"], "server", "/api/ps context_length")
    info = show.get("model_info")
    if not isinstance(info, Mapping):
        return None
    arch = info.get("general.architecture")
    longest = _positive(info.get(f"{arch}.context_length"))
    if longest is None:
        return None
    return StatedWindow(min(longest, OLLAMA_DEFAULT), "guess",
                        f"/api/show {arch}.context_length {longest:,}, Ollama's default")


def from_lm_studio(body: object, model: str) -> StatedWindow | None:
    """LM Studio's ``/api/v0/models``: ``loaded_context_length`` once loaded, else
    ``max_context_length`` (a guess: the model's longest, not what it will be loaded with)."""
    entry = _entry(body.get("data"), model) if isinstance(body, Mapping) else None
    if entry is None:
        return None
    if _positive(entry.get("loaded_context_length")):
        return StatedWindow(entry["loaded_context_length"], "server",
                            "/api/v0/models loaded_context_length")
    if _positive(entry.get("max_context_length")):  # not loaded: what it may be loaded with
        return StatedWindow(entry["max_context_length"], "guess",
                            "/api/v0/models max_context_length")
    return None


_asked: set[tuple[str, str]] = set()


def ask_once(base_url: str | None, model: str, *, teller: bool = False) -> bool:
    """True the first time in this process a server and model are to be asked: a provider
    that tells windows itself (``teller``) at any URL (None: its own), else a server at
    ``base_url`` that is not an official API (whose models endpoint states no window:
    rollchat's table has them)."""
    if not teller and (not base_url or not askable(base_url)):
        return False
    key = (base_url or "", model)
    if key in _asked:
        return False
    _asked.add(key)
    return True


def askable(base_url: str) -> bool:
    """A server asked for its windows: not the official APIs (their windows are in
    rollchat's table)."""
    return (urlsplit(base_url).hostname or "") not in ("api.openai.com", "api.anthropic.com")
