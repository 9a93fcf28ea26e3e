"""The worker registry: which workers are live, for placement by the router."""
