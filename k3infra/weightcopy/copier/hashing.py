"""The hash the Hub states for a file, computed over its bytes."""

from __future__ import annotations

import hashlib

from .plan import RepoFile


class Hasher:
    """The hash the Hub states for a file, computed on the way: sha256, or git's blob sha1."""

    def __init__(self, f: RepoFile) -> None:
        self.kind = "sha256" if f.sha256 else "gitsha1"
        self.h = hashlib.sha256() if f.sha256 else hashlib.sha1(f"blob {f.size}\0".encode())

    def update(self, data: bytes) -> None:
        """Hash the next bytes."""
        self.h.update(data)

    def value(self) -> str:
        """``KIND:HEX``."""
        return f"{self.kind}:{self.h.hexdigest()}"
