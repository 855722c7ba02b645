"""What the copy needs of a bucket (``ObjectStore``), whichever SDK provides it."""

from __future__ import annotations

import dataclasses
from typing import Iterator, Protocol

HASH_METADATA_KEY = "k3sha256"
"""Object metadata that carries the verified SHA-256 (alphanumeric: valid on S3, GCS, Azure and OSS alike)."""


@dataclasses.dataclass(frozen=True)
class ObjectStat:
    """Size and the hash metadata the copy wrote (None when absent)."""

    size: int
    hash: str | None


class Writer(Protocol):
    """An object being written: parts in order, then commit (it appears) or abort (nothing appears)."""

    def write(self, data: bytes) -> None: ...
    def commit(self) -> None: ...
    def abort(self) -> None: ...


class ObjectStore(Protocol):
    """The little the copy needs of a bucket. Keys are full paths ``BUCKET/PATH``."""

    def stat(self, key: str) -> ObjectStat | None: ...
    def writer(self, key: str, hash_value: str, part_size: int) -> Writer: ...
    def put(self, key: str, data: bytes) -> None: ...
    def get(self, key: str) -> bytes | None: ...
    def read(self, key: str, chunk: int) -> Iterator[bytes]: ...
    def keys(self, prefix: str) -> list[str]: ...
    def delete(self, key: str) -> None: ...


def split_uri(uri: str) -> tuple[str, str]:
    """(scheme, BUCKET/PATH) of ``SCHEME://BUCKET/PATH``."""
    scheme, sep, rest = uri.partition("://")
    if not sep or not rest:
        raise ValueError(f"{uri!r} is not a SCHEME://BUCKET/PATH URI")
    return scheme, rest.rstrip("/")
