"""The front door: what a connection must get past before it reaches a session."""
