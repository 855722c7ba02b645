"""The object store of a bucket URI's scheme."""

from __future__ import annotations

import json
import os
from typing import Any, Mapping

from .fsspec_store import FsspecStore
from .oss_store import OssStore
from .store import ObjectStore, split_uri


def open_store(scheme: str, options: Mapping[str, Any]) -> ObjectStore:
    """The object store for ``scheme`` (s3, gs, az, oss) with its options (``K3_COPY_STORAGE_OPTIONS``)."""
    if scheme in ("s3", "gs", "az"):
        return FsspecStore(scheme, options)
    if scheme == "oss":
        return OssStore(options)
    raise ValueError(f"no object store for scheme {scheme!r} (s3, gs, az, oss)")


def store_for(uri: str) -> ObjectStore:
    """The store of ``uri`` with the options in ``K3_COPY_STORAGE_OPTIONS`` (JSON)."""
    return open_store(split_uri(uri)[0], json.loads(os.environ.get("K3_COPY_STORAGE_OPTIONS") or "{}"))
