"""The worker process: accepts connections, serves HTTP endpoints, drains on SIGTERM."""
