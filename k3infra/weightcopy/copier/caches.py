"""The engine's compile and JIT caches carried through the bucket: saved once per rank after a warm-up that served,
restored into a node's empty cache directory before a server pod starts there, so a new node warms up like a
restarted one.

A cache is keyed by what makes it valid (``cache_key``: the engine release, the image, the GPU model and the
layout). The engines keep a cache per rank (vLLM ``rank_{rank}_{dp_rank}`` directories), and a group's pods land on
new nodes in any order, so every pod of a group saves its node's caches under its rank within the group, and a
restore takes every rank's: ``PATH/.k3infra/warm-caches/KEY/rank-R-WRITER.tar`` (``WRITER`` unique to the save, so two
nodes saving one rank never write one object), followed by its record ``KEY/rank-R.json`` (the archive's name, size
and sha256, the rank and the key's parts), written last in one PUT: a record always names an archive whose bytes it
describes, and an archive without one is ignored. A node saves only when a server pod of this very key has marked
its cache directory warm (the flag holds the key and the pod's rank: a flag left by an earlier image or layout is
not this key's warm-up), staging the archive inside the cache directory (``.k3infra-*``: never saved), on the
node's disk, not in the agent's small scratch space. A restore reads each rank's record, streams the archive it
names while hashing it, and unpacks it only when size, hash, rank and key all match, all ranks into one staging
directory moved into place; a corrupt or mismatched archive, an archive with a member that would land outside the
directory, or any error leaves that rank out and is only logged: a cache is an optimisation, never a reason to fail
a start.
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
"""The file a server pod writes into its node's cache directory once its group has served (its leader's ``/health``
answered), holding ``KEY rank=R`` (``warm_flag_text``): the caches in the directory are the product of a complete
warm-up of that key by the group's rank R, worth saving. The pod removes it when it starts."""
MAX_RANKS = 1024
"""A rank beyond this in a flag or a record is not one of a group's (LWS groups are a few nodes)."""

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


def warm_flag_text(key: str, rank: int | str) -> str:
    """What a server pod of ``key`` at ``rank`` within its group writes into the warm flag."""
    return f"{key} rank={rank}"


def _flag_rank(flag: Path, key: str) -> int | None:
    """The rank the warm flag names for ``key``; None where there is no flag, or it is another key's or malformed."""
    if not flag.is_file():
        return None
    m = re.fullmatch(rf"{re.escape(key)} rank=(\d{{1,4}})", flag.read_text().strip())
    return int(m.group(1)) if m and int(m.group(1)) < MAX_RANKS else None


def _prefix(dest: str, key: str) -> str:
    """Where the archives and records of ``key`` live for the model directory ``dest`` (ends with a slash)."""
    return f"{split_uri(dest)[1]}/{CACHE_PREFIX}/{key}/"


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
    """Save ``cache_dir`` under ``key`` and the rank its warm flag names, once a server of this key has marked it
    and the bucket has no record for that rank yet. True when the bucket holds it afterwards; False (logged)
    otherwise. Never raises."""
    prefix = _prefix(dest, key)
    try:
        d = Path(cache_dir)
        rank = _flag_rank(d / WARM_FLAG, key)
        if rank is None:
            return False
        record = f"{prefix}rank-{rank}.json"
        if store.get(record) is not None:
            return True
        archive = f"{prefix}rank-{rank}-{uuid.uuid4().hex[:12]}.tar"
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
        store.put(record, json.dumps({"key": key, "parts": dict(parts), "rank": rank,
                                      "archive": archive.rpartition("/")[2], "size": size,
                                      "sha256": digest.hexdigest()}, sort_keys=True).encode())
        log(f"warm caches of rank {rank} saved as {archive} ({size} bytes)")
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
    """Restore every rank's caches saved under ``key`` into ``cache_dir`` when it is empty. What happened, one of
    ``restored`` (at least one rank's; a rank left out is logged), ``kept`` (the directory has caches of its own),
    ``none`` (nothing saved for the key) or ``ignored: WHY`` (no rank's archive could be used: a record that does
    not match its key or rank, an archive whose size or hash differs from its record, an unsafe member, an error);
    the directory is unchanged unless ``restored``. Never raises."""
    prefix = _prefix(dest, key)
    d = Path(cache_dir)
    try:
        if d.is_dir() and any(not p.name.startswith(OWN_PREFIX) for p in d.iterdir()):
            return "kept"
        records = sorted(k for k in store.keys(prefix) if re.fullmatch(r"rank-\d{1,4}\.json", k[len(prefix):]))
        if not records:
            return "none"
        d.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(prefix=f"{OWN_PREFIX}restore-", dir=d) as tmp:
            staged, taken, why = Path(tmp) / "cache", [], []
            for record in records:
                problem = _unpack_rank(store, prefix, record, key, parts, Path(tmp), staged)
                if problem:
                    why.append(problem)
                    log(f"warm caches of {record[len(prefix):-5]} ignored: {problem}")
                else:
                    taken.append(record[len(prefix):-5])
            if not taken:
                return f"ignored: {why[0]}"
            for entry in staged.iterdir():
                os.replace(entry, d / entry.name)
        log(f"warm caches restored from {prefix} ({', '.join(taken)})")
        return "restored"
    except Exception as e:  # noqa: BLE001 - a cache that cannot be restored is not used, never fatal
        return _ignored(log, f"{type(e).__name__}: {e}")


def _unpack_rank(store: ObjectStore, prefix: str, record: str, key: str, parts: Mapping[str, str], tmp: Path,
                 staged: Path) -> str:
    """Unpack the archive ``record`` names into ``staged`` after checking it against the record; "" when done, else
    why not (``staged`` then holds nothing of it: each archive is checked whole before any member is unpacked)."""
    meta = json.loads(store.get(record) or b"{}")
    rank = record[len(prefix) + len("rank-"):-len(".json")]
    if meta.get("key") != key or meta.get("parts") != dict(parts) or str(meta.get("rank")) != rank:
        return f"the record names {meta.get('parts')} rank {meta.get('rank')}, not {dict(parts)} rank {rank}"
    name = str(meta.get("archive") or "")
    if not re.fullmatch(rf"rank-{rank}-[0-9a-f]{{12}}\.tar", name):
        return f"the record names the archive {name!r}, not one of rank {rank}'s"
    packed, digest, size = tmp / f"rank-{rank}.tar", hashlib.sha256(), 0
    with open(packed, "wb") as out:
        for chunk in store.read(prefix + name, READ_CHUNK):
            digest.update(chunk)
            size += len(chunk)
            out.write(chunk)
    try:
        if size != meta.get("size") or digest.hexdigest() != meta.get("sha256"):
            return (f"the archive ({size} bytes, sha256 {digest.hexdigest()}) differs from its record "
                    f"({meta.get('size')} bytes, sha256 {meta.get('sha256')})")
        with tarfile.open(packed) as tar:
            try:
                members = _safe_members(tar)
            except ValueError as e:
                return f"ValueError: {e}"
            tar.extractall(staged, members=members)
        return ""
    finally:
        packed.unlink(missing_ok=True)


def _ignored(log: Log, why: str) -> str:
    log(f"warm caches ignored: {why}")
    return f"ignored: {why}"

