"""Public attributes of the SDK's facade that live on the part that uses them.

:class:`~wsserver.client.session_client.SessionClient` is made of parts (the connection
loop, the handshake, voice, tools). A setting such as ``reconnect`` is read by one part
when it needs it, so the facade must not keep a copy that an assignment would leave
stale: the attribute reads and writes the part's own, under the same name.
"""

from __future__ import annotations

from typing import Any, Generic, TypeVar, overload

T = TypeVar("T")


class Delegated(Generic[T]):
    """An attribute read from and written to the part held in the owner's ``part``."""

    def __init__(self, part: str) -> None:
        """``part``: the facade's attribute holding the part; the name is the same on both."""
        self.part = part
        self.name = ""

    def __set_name__(self, owner: type[Any], name: str) -> None:
        self.name = name

    @overload
    def __get__(self, obj: None, owner: type[Any] | None = None) -> Delegated[T]: ...

    @overload
    def __get__(self, obj: object, owner: type[Any] | None = None) -> T: ...

    def __get__(self, obj: object | None, owner: type[Any] | None = None) -> T | Delegated[T]:
        if obj is None:
            return self
        value: T = getattr(getattr(obj, self.part), self.name)
        return value

    def __set__(self, obj: object, value: T) -> None:
        setattr(getattr(obj, self.part), self.name, value)
