"""Compaction, one role per module: the summary request and its validation (request), the
local extractive summary (extractive), chunking and merging (chunks), the calls, background
pre-summaries and fitting (summarizer). When to compact is policy.plan's decision."""
