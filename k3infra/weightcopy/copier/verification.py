"""Is an object a verified copy of its file: by its size and hash metadata, or (deep) by rereading it."""

from __future__ import annotations

from typing import Sequence

from .hashing import Hasher
from .plan import Repo, RepoFile
from .sizes import READ_CHUNK
from .store import ObjectStat, ObjectStore, split_uri


def is_complete(stat: ObjectStat | None, f: RepoFile) -> bool:
    """The object is there with the Hub's size and the hash the copy verified."""
    return stat is not None and stat.size == f.size and stat.hash == f.expected_hash


def content_hash(store: ObjectStore, key: str, f: RepoFile) -> str:
    """The hash of an object's bytes, of the kind the Hub states for ``f``."""
    h = Hasher(f)
    for c in store.read(key, READ_CHUNK):
        h.update(c)
    return h.value()


def verify(r: Repo, store: ObjectStore, files: Sequence[RepoFile], deep: bool) -> dict[str, str]:
    """Problems per file: missing, wrong size or metadata, or (``deep``) content whose hash differs."""
    root = split_uri(r.dest)[1]
    problems: dict[str, str] = {}
    for f in files:
        key = f"{root}/{f.path}"
        st = store.stat(key)
        if not is_complete(st, f):
            problems[f.path] = "missing" if st is None else f"size {st.size}, hash metadata {st.hash}"
            continue
        if deep and (got := content_hash(store, key, f)) != f.expected_hash:
            problems[f.path] = f"content hash {got}"
    return problems
