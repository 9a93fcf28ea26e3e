"""Store connection benchmark: a worker's Redis connections under a session storm."""
