"""Configuration: defaults < file < environment < flags, resolved once into a frozen Config."""
