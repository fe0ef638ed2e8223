"""The in-chat ``model`` command: show the model and the choices, or switch to another model
for the rest of the chat (see Session.use_model)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rollchat.text.wording import human_tokens

if TYPE_CHECKING:
    from rollchat.ui.app import ChatApp

_SHOWN = 12  # choices listed by name; the rest are counted


def run_model(app: ChatApp, arg: str) -> bool:
    from rollchat.session.switch import choices

    session = app.session
    name = arg.strip()
    if name:
        old, window = session.model, session.use_model(name)
        change = "unchanged" if name == old else f"was {old}"
        app.out.info(f"Model: {name} from your next message ({change}); window "
                     f"{human_tokens(window)} tokens.")
        return False
    allowed = choices(session.config, session.agent, session.provider_name)
    app.out.info(f"Model: {session.model} via {session.provider_name}; window "
                 f"{human_tokens(session.budget.window)} tokens.")
    named = [m for m in allowed.named if m != session.model]
    listed = ", ".join(named[:_SHOWN]) + (f" and {len(named) - _SHOWN} more"
                                          if len(named) > _SHOWN else "")
    if allowed.any_name:
        app.out.dim("'model NAME' switches to any model the server serves"
                    + (f" (named in the config or known: {listed})." if named else "."))
    elif named:
        app.out.dim(f"'model NAME' switches for the rest of this chat; choices: {listed}.")
    else:
        app.out.dim("The offline model is the only one without an API key.")
    return False
