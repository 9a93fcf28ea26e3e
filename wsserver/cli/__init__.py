"""The ``wsserver`` command: serve, router, chat (and voice chat), keys, usage."""
