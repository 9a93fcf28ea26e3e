"""Malformed input against a live worker: crashes, tracebacks, undocumented closes."""
