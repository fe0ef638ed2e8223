"""Text shared by every layer: cleaning what enters, wording helpers, phrase data, fuzzy
matching."""
