"""``python -m loadtest.workers``: ``wsserver serve --workers N`` against one process."""
