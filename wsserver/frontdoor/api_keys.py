"""API keys: random secrets given to backends, stored only as SHA-256 hashes.

The keys file has one key per line, ``PRINCIPAL: SHA256-HEX [admin]``; blank lines
and ``#`` comments are ignored. ``wsserver keys new`` makes a key and its line.
The file is read again when it changes (checked at most once a second), so keys
rotate without a restart: add the new key's line, move clients over, remove the old.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import secrets
import time
from dataclasses import dataclass

from wsserver.frontdoor.errors import FrontDoorConfigError
from wsserver.frontdoor.principal import reserved_principal

log = logging.getLogger(__name__)

KEY_PREFIX = "wsk_"
"""Every key starts with it: easy to recognise in a leak scan, and redacted in logs."""

_PRINCIPAL = re.compile(r"^[A-Za-z0-9._@:+-]{1,128}$")
_HEX = re.compile(r"^[0-9a-f]{64}$")
_RECHECK_S = 1.0


def new_api_key() -> str:
    """A new random API key (256 bits)."""
    return KEY_PREFIX + secrets.token_urlsafe(32)


def hash_api_key(key: str) -> str:
    """The stored form of a key: its SHA-256, hex."""
    return hashlib.sha256(key.encode()).hexdigest()


def check_principal_name(name: str) -> str:
    """``name`` if it can name a principal (letters, digits, ``._@:+-``, up to 128)."""
    if not _PRINCIPAL.match(name):
        raise ValueError(f"invalid principal name {name!r}: use letters, digits and ._@:+-")
    if reserved_principal(name):
        raise ValueError(f"principal name {name!r} is reserved")
    return name


def key_line(principal: str, key: str, *, admin: bool = False) -> str:
    """The keys-file line of ``key`` for ``principal``."""
    check_principal_name(principal)
    return f"{principal}: {hash_api_key(key)}" + (" admin" if admin else "")


@dataclass(frozen=True, slots=True)
class KeyEntry:
    """One configured key: whose it is and whether it is an admin key."""

    principal: str
    admin: bool


def parse_keys(text: str, source: str = "keys file") -> dict[str, KeyEntry]:
    """Hash → entry from the keys-file format; ``FrontDoorConfigError`` on a bad line."""
    entries, bad = parse_keys_leniently(text)
    if bad:
        raise FrontDoorConfigError(
            f"{source} line {bad[0]}: expected 'PRINCIPAL: SHA256-HEX [admin]'"
        )
    return entries


def parse_keys_leniently(text: str) -> tuple[dict[str, KeyEntry], list[int]]:
    """Hash → entry of the well-formed lines, and the numbers of the others."""
    entries: dict[str, KeyEntry] = {}
    bad: list[int] = []
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        name, colon, rest = line.partition(":")
        fields = rest.split()
        if (
            not colon
            or not _PRINCIPAL.match(name.strip())
            or reserved_principal(name.strip())
            or not fields
            or not _HEX.match(fields[0].lower())
            or fields[1:] not in ([], ["admin"])
        ):
            bad.append(number)
            continue
        entries[fields[0].lower()] = KeyEntry(name.strip(), admin=fields[1:] == ["admin"])
    return entries, bad


class ApiKeyTable:
    """The configured keys, re-read from their file when it changes."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._entries: dict[str, KeyEntry] = {}
        self._mtime: float | None = None
        self._checked = 0.0
        self._load()

    def _load(self) -> None:
        try:
            stat = os.stat(self.path)
            with open(self.path, encoding="utf-8") as file:
                text = file.read()
        except OSError as exc:
            raise FrontDoorConfigError(f"cannot read the keys file {self.path}: {exc}") from exc
        self._entries = parse_keys(text, self.path)
        self._mtime = stat.st_mtime

    def _refresh(self) -> None:
        now = time.monotonic()
        if now - self._checked < _RECHECK_S:
            return
        self._checked = now
        try:
            stat = os.stat(self.path)
            if stat.st_mtime == self._mtime:
                return
            with open(self.path, encoding="utf-8") as file:
                text = file.read()
        except (OSError, UnicodeDecodeError) as exc:
            # Fail closed: a key must stop working once its line is gone, and a file
            # that is gone or unreadable holds no line.
            if self._entries:
                log.error("keys file %s unreadable, no API key is valid now: %s", self.path, exc)
            self._entries = {}
            self._mtime = None
            return
        # Only the well-formed lines count: a removed key stops working even when an
        # edit left another line broken (a half-written file heals at the next check).
        self._entries, bad = parse_keys_leniently(text)
        self._mtime = stat.st_mtime
        if bad:
            log.error(
                "keys file %s: lines %s are not 'PRINCIPAL: SHA256-HEX [admin]' and are ignored",
                self.path,
                ", ".join(map(str, bad[:10])),
            )

    def __len__(self) -> int:
        return len(self._entries)

    def lookup(self, key: str) -> KeyEntry | None:
        """The entry of a presented key, or None.

        A dict lookup by the key's hash: the time it takes depends on the hash,
        which says nothing usable about the key.
        """
        self._refresh()
        return self._entries.get(hash_api_key(key))
