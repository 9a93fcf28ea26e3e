"""The worker against a bare websockets server: tokens/s, interrupt latency, RSS per session."""
