"""Send-path benchmark: bare websockets server, the worker, the worker's fast path."""
