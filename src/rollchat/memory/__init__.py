"""Memory across sessions: facts and episodes per agent (store.py), what the model or the
offline rules extract from a conversation (extract.py), searching them (search.py), and how
they enter each request (layers.py)."""
