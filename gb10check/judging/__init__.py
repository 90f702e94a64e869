"""Judging: verdicts, the hint catalogue and its commands, the root cause first, the known issues."""
