"""Memory: facts and episodes kept across sessions (the store), and how they enter requests."""
