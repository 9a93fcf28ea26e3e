"""The router: places a connection on its session's worker and relays bytes both ways."""
