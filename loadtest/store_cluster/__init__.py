"""Store benchmark on Redis Cluster: a worker on a 3-primary cluster against one on a single
Redis, in the same run (``python -m loadtest.store_cluster``)."""
