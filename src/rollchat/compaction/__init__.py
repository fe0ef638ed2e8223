"""Compaction: when (policy), the summary request (request), its calls, chunks and merging
(summarizer, chunks, carry), the local summary (extractive), audit, restore, and the one path
that summarizes a saved transcript (saved, with its cache; unsummarized for resume)."""
