"""``python -m loadtest.capacity``: the measured figures behind ``docs/CAPACITY.md``."""
