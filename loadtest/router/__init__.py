"""The worker reached directly against through the router: tokens/s, ping RTT, router CPU."""
