"""Worker RSS per stalled session against the configured bounds."""
