"""Session stores: the interface, the memory store and the Redis store side by side."""
