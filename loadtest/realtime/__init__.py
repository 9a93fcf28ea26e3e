"""The ``/v1/realtime`` dialect's cost: TTFT and cancel -> done against the native protocol."""
