"""How the runtime reaches a client: the Transport interface and its WebSocket implementation."""
