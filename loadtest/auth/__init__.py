"""The handshake cost of authentication, beside no authentication."""
