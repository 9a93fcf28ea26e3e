"""Engines: what generates a response (the interface, the simulated engine, scripted runs)."""
