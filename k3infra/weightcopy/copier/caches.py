"""The engine's compile and JIT caches carried through the bucket: saved once after a warm-up that served, restored
into a node's empty cache directory before a server pod starts there, so a new node warms up like a restarted one.

A cache is keyed by what makes it valid (``cache_key``: the engine release, the image, the GPU model and the
layout) and stored as one tar archive under ``PATH/.k3infra/warm-caches/KEY-WRITER.tar`` beside the weights (``WRITER``
unique to the save, so two nodes saving the same key never write one object), followed by its record ``KEY.json``
(the archive's name, size and sha256, and the key's parts). The record is written last, in one PUT: it always names
an archive whose bytes it describes, and an archive without one is ignored. A node saves only when a server pod of
this very key has marked its cache directory warm (the flag holds the key: a flag left by an earlier image or layout
is not this key's warm-up), staging the archive inside the cache directory (``.k3infra-*``: never saved), on the
node's disk, not in the agent's small scratch space. A restore reads the record, streams the archive it names while
hashing it, and unpacks it only when size, hash and key all match, into a staging directory moved into place; a
corrupt or mismatched archive, an archive with a member that would land outside the directory, or any error leaves
the directory as it was and is only logged: a cache is an optimisation, never a reason to fail a start.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sys
import tarfile
import tempfile
import uuid
from pathlib import Path
from typing import Callable, Mapping

from .marker import MARKER_DIR
from .sizes import DEFAULT_PART_SIZE, READ_CHUNK
from .store import ObjectStore, split_uri

Log = Callable[[str], None]

OWN_PREFIX = ".k3infra-"
"""The copier's own entries in a cache directory start so; they are never saved and do not count as caches."""
WARM_FLAG = f"{OWN_PREFIX}warm"
"""The file a server pod writes into its node's cache directory once its engine has served (``/health`` answered),
holding the pod's cache key: the caches in the directory are the product of a complete warm-up of that key, worth
saving. The pod removes it when it starts."""

CACHE_PREFIX = f"{MARKER_DIR}/warm-caches"
"""Where the caches live, relative to the model directory."""


def _log(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def cache_key(parts: Mapping[str, str]) -> str:
    """A stable object name of the key's parts (engine release, image, GPU model, layout): readable, then the
    sha256 of all parts, so two keys never share an archive."""
    canonical = json.dumps(dict(parts), sort_keys=True)
    readable = re.sub(r"[^A-Za-z0-9._-]+", "_", "-".join(parts[k] for k in sorted(parts)))[:80]
    return f"{readable}-{hashlib.sha256(canonical.encode()).hexdigest()[:16]}"


def _keys(dest: str, key: str) -> tuple[str, str]:
    """(the prefix of the archives, the record's object key) of ``key`` for the model directory ``dest``."""
    root = split_uri(dest)[1]
    return f"{root}/{CACHE_PREFIX}/{key}-", f"{root}/{CACHE_PREFIX}/{key}.json"


def _pack(cache_dir: Path, out: Path) -> None:
    """The directory as a tar archive, members in sorted order; the copier's own entries (``.k3infra-*``: the warm
    flag, a restore in progress) and symbolic links left out."""
    with tarfile.open(out, "w") as tar:
        for path in sorted(cache_dir.rglob("*")):
            rel = path.relative_to(cache_dir)
            if rel.parts[0].startswith(OWN_PREFIX) or path.is_symlink():
                continue
            tar.add(path, arcname=str(rel), recursive=False)


def save_cache(store: ObjectStore, dest: str, key: str, parts: Mapping[str, str], cache_dir: str | Path,
               log: Log = _log) -> bool:
    """Save ``cache_dir`` under ``key`` once a server of this key has marked it warm (its flag holds ``key``) and the
    bucket has no record for the key yet. True when the bucket holds it afterwards; False (logged) otherwise. Never
    raises."""
    prefix, record = _keys(dest, key)
    try:
        if store.get(record) is not None:
            return True
        d = Path(cache_dir)
        flag = d / WARM_FLAG
        if not flag.is_file() or flag.read_text().strip() != key:
            return False
        archive = f"{prefix}{uuid.uuid4().hex[:12]}.tar"
        with tempfile.TemporaryDirectory(prefix=f"{OWN_PREFIX}save-", dir=d) as tmp:
            packed = Path(tmp) / "cache.tar"
            _pack(d, packed)
            digest, size = hashlib.sha256(), packed.stat().st_size
            with open(packed, "rb") as f:
                for chunk in iter(lambda: f.read(READ_CHUNK), b""):
                    digest.update(chunk)
            writer = store.writer(archive, f"sha256:{digest.hexdigest()}", DEFAULT_PART_SIZE)
            try:
                with open(packed, "rb") as f:
                    for chunk in iter(lambda: f.read(DEFAULT_PART_SIZE), b""):
                        writer.write(chunk)
                writer.commit()
            except BaseException:
                writer.abort()
                raise
        store.put(record, json.dumps({"key": key, "parts": dict(parts), "archive": archive.rpartition("/")[2],
                                      "size": size, "sha256": digest.hexdigest()}, sort_keys=True).encode())
        log(f"warm caches saved as {archive} ({size} bytes)")
        return True
    except Exception as e:  # noqa: BLE001 - a cache not saved costs the next node a full warm-up, nothing else
        log(f"warm caches not saved ({type(e).__name__}: {e})")
        return False


def _safe_members(tar: tarfile.TarFile) -> list[tarfile.TarInfo]:
    """The archive's members, refused whole if one is not a plain file or directory inside the directory."""
    members = tar.getmembers()
    for m in members:
        if not (m.isfile() or m.isdir()) or m.name.startswith("/") or ".." in Path(m.name).parts:
            raise ValueError(f"member {m.name!r} is not a file or directory inside the cache")
    return members


def restore_cache(store: ObjectStore, dest: str, key: str, parts: Mapping[str, str], cache_dir: str | Path,
                  log: Log = _log) -> str:
    """Restore the caches saved under ``key`` into ``cache_dir`` when it is empty. What happened, one of
    ``restored``, ``kept`` (the directory has caches of its own), ``none`` (nothing saved for the key) or
    ``ignored: WHY`` (a record that does not match its key, an archive whose size or hash differs from its
    record, an unsafe member, an error); the directory is unchanged unless ``restored``. Never raises."""
    prefix, record = _keys(dest, key)
    d = Path(cache_dir)
    try:
        if d.is_dir() and any(not p.name.startswith(OWN_PREFIX) for p in d.iterdir()):
            return "kept"
        body = store.get(record)
        if body is None:
            return "none"
        meta = json.loads(body)
        if meta.get("key") != key or meta.get("parts") != dict(parts):
            return _ignored(log, f"the record names {meta.get('parts')}, not {dict(parts)}")
        name = str(meta.get("archive") or "")
        if not (name.startswith(f"{key}-") and re.fullmatch(r"[0-9a-f]{12}\.tar", name[len(key) + 1:])):
            return _ignored(log, f"the record names the archive {name!r}, not one of the key's")
        archive = prefix.rpartition("/")[0] + "/" + name
        d.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(prefix=f"{OWN_PREFIX}restore-", dir=d) as tmp:
            packed, staged = Path(tmp) / "cache.tar", Path(tmp) / "cache"
            digest, size = hashlib.sha256(), 0
            with open(packed, "wb") as out:
                for chunk in store.read(archive, READ_CHUNK):
                    digest.update(chunk)
                    size += len(chunk)
                    out.write(chunk)
            if size != meta.get("size") or digest.hexdigest() != meta.get("sha256"):
                return _ignored(log, f"the archive ({size} bytes, sha256 {digest.hexdigest()}) differs from its "
                                     f"record ({meta.get('size')} bytes, sha256 {meta.get('sha256')})")
            with tarfile.open(packed) as tar:
                tar.extractall(staged, members=_safe_members(tar))
            d.mkdir(parents=True, exist_ok=True)  # a mount point stays: its entries move in
            for entry in staged.iterdir():
                os.replace(entry, d / entry.name)
        log(f"warm caches restored from {archive} ({size} bytes)")
        return "restored"
    except Exception as e:  # noqa: BLE001 - a cache that cannot be restored is not used, never fatal
        return _ignored(log, f"{type(e).__name__}: {e}")


def _ignored(log: Log, why: str) -> str:
    log(f"warm caches ignored: {why}")
    return f"ignored: {why}"

