"""The group's port: held by the parent so every generation of children binds the same one."""

from __future__ import annotations

import socket

from wsserver.supervisor.errors import PortUnavailable


def reserve_port(host: str, port: int) -> socket.socket:
    """A socket bound (not listening) to ``host:port`` with SO_REUSEPORT.

    With ``--port 0`` it picks the port the children then share. It never listens, so
    the kernel gives it no connections; while it is open no other program can take the
    port between two children's restarts.
    """
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        raise PortUnavailable(f"cannot resolve --host {host!r}: {exc}") from exc
    family, kind, proto, _, address = infos[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        sock.bind(address)
    except OSError as exc:
        sock.close()
        raise PortUnavailable(f"cannot bind {host}:{port}: {exc.strerror or exc}") from exc
    return sock
