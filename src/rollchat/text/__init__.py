"""Text shared by every layer, no terminal: normalize (what enters), wording (what people read),
phrases and named (phrase data for the offline model, compaction, audit and memory), fuzzy."""
