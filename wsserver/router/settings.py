"""The router's configuration, from CLI flags and ``WSSERVER_ROUTER_*`` variables."""

from __future__ import annotations

import os
from typing import Any, Literal

from pydantic import ConfigDict, Field

from wsserver.frontdoor.config import FrontDoorSettings

ROUTER_ENV_PREFIX = "WSSERVER_ROUTER_"


class RouterSettings(FrontDoorSettings):
    """Router settings. Each field is a ``--flag`` and a ``WSSERVER_ROUTER_FIELD`` variable.

    The authentication, admin and TLS fields come from :class:`FrontDoorSettings`;
    the router checks credentials itself and forwards them, so workers check again.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    host: str = Field("127.0.0.1", description="address to listen on")
    port: int = Field(8080, ge=0, le=65535, description="port to listen on (0 picks a free one)")
    store: str = Field(
        "redis://127.0.0.1:6379/0",
        description="the workers' Redis store (redis+cluster://… for a Redis Cluster)",
    )
    store_timeout: float = Field(0.5, gt=0, description="seconds before a Redis call fails")
    store_max_connections: int = Field(
        64,
        ge=0,
        le=100_000,
        description="most connections to Redis, to each node; a call past them waits up to "
        "--store-timeout (0: no limit)",
    )
    refresh_interval: float = Field(1.0, gt=0, description="seconds between worker list reads")
    connect_timeout: float = Field(
        2.0, gt=0, description="seconds for a worker to accept, and again to answer the upgrade"
    )
    handshake_timeout: float = Field(10.0, gt=0, description="seconds to send the request head")
    max_head_bytes: int = Field(16384, ge=1024, description="largest HTTP request head")
    max_attempts: int = Field(5, ge=1, description="workers tried per connection before 503")
    metrics: Literal["on", "off"] = Field(
        "on", description="on or off: Prometheus metrics at GET /metrics (docs/METRICS.md)"
    )
    linger_timeout: float = Field(
        30.0, gt=0, description="seconds one direction may go on after the other closed"
    )
    # Without it, a vanished peer with unacknowledged data holds its connection and
    # buffers for the kernel's ~15 minutes of retransmissions.
    tcp_user_timeout: float = Field(
        30.0, ge=0, description="seconds sent data may stay unacknowledged (Linux; 0 = off)"
    )
    socket_buffer: int = Field(
        0,
        ge=0,
        description="kernel buffer per relayed connection in bytes: the send buffer to the "
        "client and the receive buffer from the worker (0 = kernel autotuning); bounds what a "
        "stalled client parks in the router, so the worker sees it stall (slow consumer, 4000)",
    )
    # The front door's first checks (Origin, handshake rate; the fields are in
    # FrontDoorSettings) run before a worker is even picked; the worker repeats them.
    worker_ca_file: str = Field(
        "",
        description="CA bundle that signs the certificates of wss:// workers "
        "(default: the system's)",
    )
    log_format: Literal["auto", "json", "human"] = Field(
        "auto",
        description="log lines on stderr: 'json' (one JSON object a line), 'human', or 'auto' "
        "(human on a terminal, json otherwise)",
    )

    @classmethod
    def from_env(cls, overrides: dict[str, Any] | None = None) -> RouterSettings:
        """Defaults, then ``WSSERVER_ROUTER_*`` variables, then explicit overrides."""
        values: dict[str, Any] = {}
        for name in cls.model_fields:
            raw = os.environ.get(ROUTER_ENV_PREFIX + name.upper())
            if raw is not None:
                values[name] = raw
        values.update({k: v for k, v in (overrides or {}).items() if v is not None})
        return cls.model_validate(values, strict=False)
