"""wsserver's wire protocol, sans-I/O: messages, encodings, codes and session state machines.

Nothing here imports asyncio, websockets, redis or sockets, and nothing reads
the clock; everything is driven by feeding inputs and reading outputs.
"""

from protocol.client_session import ClientSession, ClientState
from protocol.codes import CLOSE_CODES, ERROR_CODES, CloseCode, Disposition, ErrorCode
from protocol.errors import ProtocolError, ProtocolViolation, ResumeRefused
from protocol.session import ResponseStatus, ServerSession, SessionLimits

__all__ = [
    "CLOSE_CODES",
    "ERROR_CODES",
    "ClientSession",
    "ClientState",
    "CloseCode",
    "Disposition",
    "ErrorCode",
    "ProtocolError",
    "ProtocolViolation",
    "ResponseStatus",
    "ResumeRefused",
    "ServerSession",
    "SessionLimits",
]
