"""Memory across sessions: facts and episodes per agent (store), what the model or the
offline rules extract from a conversation (extract, rules), searching them (search), and how
they enter each request (layers); keeper runs it for a chat."""
