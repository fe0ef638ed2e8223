"""One model call with its tool loop, and the request it sends (working context, hygiene,
history)."""
