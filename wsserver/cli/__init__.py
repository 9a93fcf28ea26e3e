"""The ``wsserver`` command: serve, route, chat, voice, keys, usage."""
