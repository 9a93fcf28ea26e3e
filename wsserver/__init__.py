"""wsserver: a WebSocket session server for streamed model output with interrupts and resume."""

__version__ = "0.1.0"
