"""Real-model benchmark: the local engine through the worker vs the same engine called directly."""
