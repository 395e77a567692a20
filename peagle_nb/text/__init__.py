"""The text the tiny models learn and decode: the training corpus (v1 and v3) and the prompt files."""
