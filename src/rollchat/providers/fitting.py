"""Sending a request with only the parameters its model takes (providers/model_params.py), and a
server's "unsupported parameter" refusal retried once without that parameter, remembered for
the model at that server, in this run and the next ones (providers/refused.py)."""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from rollchat.providers.model_params import fitted, without
from rollchat.providers.refused import REFUSED, Refused

log = logging.getLogger(__name__)
T = TypeVar("T")

# OpenAI: 400 {"error": {"type": "invalid_request_error", "param": "temperature",
# "code": "unsupported_value" | "unsupported_parameter", ...}} (platform.openai.com error
# codes; OpenHands/OpenHands#4131). Anthropic: 400 {"type": "error", "error": {"type":
# "invalid_request_error", "message": "`temperature` is deprecated for this model."}} or
# "temperature and top_p cannot both be specified for this model" (the first one named goes).
_OPENAI_CODES = ("unsupported_parameter", "unsupported_value")
_NAMED = re.compile(r"[`'\"]?([a-z_]+)[`'\"]? (?:is deprecated|is not supported|"
                    r"and [`'\"]?[a-z_]+[`'\"]? cannot both be specified|"
                    r"does not support)", re.IGNORECASE)
_EXTRA = re.compile(r"([a-z_]+): Extra inputs are not permitted", re.IGNORECASE)


def _error(body: object) -> Mapping[str, Any]:
    if isinstance(body, Mapping) and isinstance(body.get("error"), Mapping):
        return body["error"]  # type: ignore[no-any-return]
    return body if isinstance(body, Mapping) else {}


def refused_parameter(exc: BaseException, params: Mapping[str, Any]) -> str | None:
    """The parameter of ``params`` an SDK's HTTP 400 says the model does not take, or None
    when the error is anything else."""
    if getattr(exc, "status_code", None) != 400:
        return None
    error = _error(getattr(exc, "body", None))
    extra = params.get("extra_body")
    sent = set(params) | (set(extra) if isinstance(extra, Mapping) else set())
    param = error.get("param")
    if error.get("code") in _OPENAI_CODES and isinstance(param, str) and param in sent:
        return param
    if error.get("type") != "invalid_request_error":
        return None
    message = str(error.get("message") or "")
    for pattern in (_NAMED, _EXTRA):
        match = pattern.search(message)
        if match and match.group(1) in sent:
            return match.group(1)
    return None


def _retried(params: Mapping[str, Any], name: str) -> dict[str, Any]:
    out = without(params, {name})
    # OpenAI's newer models: "Use 'max_completion_tokens' instead"
    if name == "max_tokens" and "max_tokens" in params:
        out["max_completion_tokens"] = params["max_tokens"]
    return out


def create_fitted(create: Callable[..., T], params: Mapping[str, Any], model: str, *,
                  server: str | None = None, refused: Refused = REFUSED) -> T:
    """``create(**params)`` with only what ``model`` takes. A 400 refusing one of the
    parameters is retried once without it, and the parameter is not sent to the model at
    ``server`` (its base URL; None: the provider's own) again, in this run or the next."""
    sent = fitted(params, model)
    for name in sorted(refused.of(model, server)):
        sent = _retried(sent, name)
    try:
        return create(**sent)
    except Exception as exc:
        found = refused_parameter(exc, sent)
        if found is None:
            raise
    refused.add(model, found, server)
    log.info("%s refused the parameter %r: sent again without it, and not sent to it again",
             model, found)
    return create(**_retried(sent, found))
