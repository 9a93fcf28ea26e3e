"""The cost of the worker's Prometheus metrics: CPU per delivered token, on vs off."""
