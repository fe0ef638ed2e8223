"""Where sessions are kept: the transcript format, session files, the index, locks, listing, prune,
export, import."""
