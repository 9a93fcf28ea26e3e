"""The Redis session store against the memory store, and the reconnect storm."""
