"""What every benchmark shares: configuration, processes, wire client, streaming load, reports."""
