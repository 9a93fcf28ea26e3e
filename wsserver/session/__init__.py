"""The live session on a worker: executes the session core's effects with tasks and timers."""
