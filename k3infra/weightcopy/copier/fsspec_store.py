"""``s3://``, ``gs://`` and ``az://`` buckets through fsspec: s3fs, gcsfs, adlfs."""

from __future__ import annotations

import glob
from typing import Any, Iterator, Mapping

from .store import HASH_METADATA_KEY, ObjectStat, Writer


class FsspecWriter:
    """A multipart upload through an fsspec file: each ``write`` of a whole part uploads it."""

    def __init__(self, f: Any) -> None:
        self.f = f

    def write(self, data: bytes) -> None:
        """Append one part."""
        self.f.write(data)

    def commit(self) -> None:
        """Complete the upload: the object appears."""
        self.f.close()

    def abort(self) -> None:
        """Abandon the upload (s3fs aborts the multipart upload; uncommitted Azure blocks and GCS resumable
        sessions expire). ``closed`` is set so that collecting the file does not commit it."""
        try:
            self.f.discard()
        finally:
            self.f.closed = True


class FsspecStore:
    """s3fs, gcsfs or adlfs: only how the hash metadata is written and read differs between them."""

    def __init__(self, scheme: str, options: Mapping[str, Any]) -> None:
        import fsspec  # pyright: ignore[reportMissingImports]

        self.scheme = scheme
        self.fs = fsspec.filesystem(scheme, skip_instance_cache=True, **dict(options))

    def _metadata_kwargs(self, hash_value: str) -> dict[str, Any]:
        meta = {HASH_METADATA_KEY: hash_value}
        return {"Metadata": meta} if self.scheme == "s3" else {"metadata": meta}

    def stat(self, key: str) -> ObjectStat | None:
        """Size and hash metadata, or None when the object does not exist."""
        try:
            info = self.fs.info(key, refresh=True) if self.scheme != "gs" else self.fs.info(key)
        except FileNotFoundError:
            return None
        if info.get("type") == "directory":
            return None
        if self.scheme == "s3":
            meta = self.fs.metadata(key, refresh=True) or {}
        else:
            meta = info.get("metadata") or {}
        return ObjectStat(size=int(info["size"]), hash=meta.get(HASH_METADATA_KEY))

    def writer(self, key: str, hash_value: str, part_size: int) -> Writer:
        """A multipart upload whose object carries ``hash_value`` as metadata."""
        return FsspecWriter(self.fs.open(key, "wb", block_size=part_size, **self._metadata_kwargs(hash_value)))

    def put(self, key: str, data: bytes) -> None:
        """Write a small object in one request."""
        with self.fs.open(key, "wb") as f:
            f.write(data)

    def get(self, key: str) -> bytes | None:
        """A small object's bytes, or None."""
        try:
            with self.fs.open(key, "rb") as f:
                return f.read()
        except FileNotFoundError:
            return None

    def read(self, key: str, chunk: int) -> Iterator[bytes]:
        """An object's bytes in order."""
        with self.fs.open(key, "rb", block_size=chunk) as f:
            while data := f.read(chunk):
                yield data

    def keys(self, prefix: str) -> list[str]:
        """Keys that start with ``prefix`` (``BUCKET/PATH``), listed afresh."""
        self.fs.invalidate_cache()
        return sorted(k for k in self.fs.glob(glob.escape(prefix) + "*") if not self.fs.isdir(k))

    def delete(self, key: str) -> None:
        """Remove an object (nothing when it is gone already)."""
        try:
            self.fs.rm_file(key)
        except FileNotFoundError:
            pass
