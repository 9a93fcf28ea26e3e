"""How a WebSocket connection ended, read from its closing handshake."""

from __future__ import annotations

from websockets.protocol import Protocol as WebSocketState

from protocol.codes import CLOSE_CODES, CloseCode, Disposition
from protocol.session.inputs import Departure


def departure_of(protocol: WebSocketState) -> tuple[Departure, str]:
    """How a WebSocket connection ended, from its closing handshake, and the reason."""
    sent, rcvd = protocol.close_sent, protocol.close_rcvd
    if sent is not None and (rcvd is None or not protocol.close_rcvd_then_sent):
        # The server (or the websockets library for us, e.g. 1009) started the close.
        info = CLOSE_CODES.get(sent.code)
        if info is not None and info.disposition is Disposition.TERMINAL:
            return Departure.ENDED, info.name
        return Departure.LOST, "connection_lost"
    if rcvd is not None:
        if rcvd.code == CloseCode.NORMAL:
            return Departure.ENDED, "client_closed"
        if rcvd.code == CloseCode.GOING_AWAY:
            # A browser sends 1001 by itself when its page unloads or reloads: the
            # page comes back for the answer, as after a drop.
            return Departure.LOST, "connection_lost"
        return Departure.CLOSED_RESUMABLE, "client_closed"
    return Departure.LOST, "connection_lost"
