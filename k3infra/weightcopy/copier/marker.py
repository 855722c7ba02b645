"""The manifest and completion marker of a copied revision, and the wait for that marker."""

from __future__ import annotations

import hashlib
import json
import re
import sys
import time
from typing import Callable, Sequence

from .plan import Repo, RepoFile
from .store import ObjectStore, split_uri
from .verification import is_complete

MARKER_DIR = ".k3infra"
"""The copier's own objects, under the model directory."""


MARKER_PREFIX = f"{MARKER_DIR}/complete-"
"""Every completion marker's key starts so, relative to the model directory (the writer may delete these only)."""


def marker_key(revision: str) -> str:
    """Key of the completion marker of ``revision``, relative to the model directory."""
    return f"{MARKER_PREFIX}{safe_revision(revision)}.json"


def retire_markers(store: ObjectStore, root: str) -> list[str]:
    """Delete every completion marker under the model directory ``root`` (``BUCKET/PATH``); the keys deleted.

    Revisions share the directory and a copy overwrites files in place, so before the first write no marker there
    may stay valid: a server pod of the old revision that restarts mid-copy (a group recreated, a node repaired)
    would otherwise pass its wait on the old marker and load old and new shards mixed. It waits instead, and loads
    the new revision once ``mark_if_complete`` writes its marker."""
    gone = store.keys(f"{root}/{MARKER_PREFIX}")
    for key in gone:
        store.delete(key)
    return gone


def manifest_key(revision: str) -> str:
    """Key of the manifest of ``revision``, relative to the model directory."""
    return f"{MARKER_DIR}/manifest-{safe_revision(revision)}.json"


def safe_revision(revision: str) -> str:
    """``revision`` as it appears in the copier's object names (a branch such as ``refs/pr/1`` has slashes)."""
    return re.sub(r"[^A-Za-z0-9._-]", "_", revision)


def manifest(r: Repo, commit: str, files: Sequence[RepoFile]) -> bytes:
    """The manifest of a complete copy: every file with its size and verified hash (stable bytes)."""
    return json.dumps({"repo": r.repo, "revision": r.revision, "commit": commit, "destination": r.dest,
                       "files": [{"path": f.path, "size": f.size, "hash": f.expected_hash} for f in files],
                       "totalBytes": sum(f.size for f in files)}, indent=1, sort_keys=True).encode()


def mark_if_complete(store: ObjectStore, r: Repo, commit: str, files: Sequence[RepoFile], root: str) -> bool:
    """When every file of ``r`` is verified in the bucket, write its manifest, then its completion marker."""
    if not all(is_complete(store.stat(f"{root}/{f.path}"), f) for f in files):
        return False
    body = manifest(r, commit, files)
    store.put(f"{root}/{manifest_key(r.revision)}", body)
    store.put(f"{root}/{marker_key(r.revision)}", json.dumps({
        "repo": r.repo, "revision": r.revision, "commit": commit,
        "manifest": manifest_key(r.revision), "manifestSha256": hashlib.sha256(body).hexdigest()},
        sort_keys=True).encode())
    return True


def wait_for_marker(store: ObjectStore, r: Repo, timeout: float, interval: float,
                    log: Callable[[str], None] = lambda s: print(s, file=sys.stderr, flush=True)) -> bool:
    """Poll until the completion marker of ``r`` exists (True) or ``timeout`` passes (False)."""
    key = f"{split_uri(r.dest)[1]}/{marker_key(r.revision)}"
    deadline = time.monotonic() + timeout
    while True:
        body = store.get(key)
        if body is not None:
            log(f"weights complete: {body.decode(errors='replace')}")
            return True
        if time.monotonic() >= deadline:
            return False
        log(f"waiting for {r.dest}/{marker_key(r.revision)}")
        time.sleep(interval)
