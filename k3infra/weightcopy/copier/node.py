"""The weights kept on a GPU node: a copy of a complete revision in a node directory, verified against the bucket's
manifest as it is written, and the choice a server pod makes at start between it and the bucket.

The node copy mirrors the model directory under ``NODE_DIR/weights/PATH`` (``PATH``: the bucket URI's path after
the bucket). Every file is streamed to ``NAME.partial``, hashed on the way, checked against the manifest's size and
hash, then renamed into place; the bucket's completion marker, byte for byte, is written last as the copy's own
marker. A copy is the bucket's revision exactly when its marker equals the bucket's current one (the marker holds
the manifest's sha256) and every file of that manifest is there with its size: ``choose`` reads nothing else, so a
restart on the node decides in a moment. Anything else (no copy, an older revision, a file missing, an unreadable
marker) chooses the bucket: never fatal.

A node holds at most one marker, and only while its bytes are that marker's revision: a copy retires every marker on
the node before its first write (as the bucket sync does, ``marker.retire_markers``), and a file is kept only where
the node's record of verified files (``NODE_FILES``) gives it the manifest's hash, so a new revision whose shards
keep their sizes, or a return to an earlier revision, is copied again, never served with the other revision's bytes.
The record drops a file before it is rewritten and takes it back once verified: an interrupted copy leaves no file
the record vouches for wrongly. Once a revision is complete, the files it does not list (an earlier revision's)
are removed, so revisions do not pile up on the node.

A copy starts only where the node directory's filesystem keeps ``KEEP_FREE`` of itself free afterwards: on GKE and
EKS the NVMe array also holds the kubelet's and containerd's directories, and on a node whose array is not mounted
(a pool without its Local SSDs, a failed nodeadm localStorage, a wrong ``kubernetes.nodeLocalPath``) the hostPath
is created on the boot disk, which 1.56 TB of weights would fill: the kubelet would then evict the node's pods.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from shutil import disk_usage
from typing import Callable

from .hashing import Hasher
from .marker import MARKER_DIR, MARKER_PREFIX, manifest_key, marker_key
from .plan import Repo, RepoFile
from .sizes import READ_CHUNK
from .store import ObjectStore, split_uri

Log = Callable[[str], None]

FILES_IN_FLIGHT = 64
"""Files a node copy streams at once: one GET each, so the copy's rate is this many requests' (sizing: the fill)."""


KEEP_FREE = 0.20
"""The share of its filesystem a node copy leaves free: the kubelet's default hard eviction thresholds are
nodefs.available<10% and imagefs.available<15% (kubernetes/kubernetes pkg/kubelet/eviction/defaults_linux.go
``DefaultEvictionHard``), and the array holds the kubelet's nodefs and containerd's imagefs on GKE (concepts/local-ssd:
"GKE automatically mounts ... /var/lib/kubelet, /var/log/pods, and /var/lib/containerd" onto it) and on EKS
(amazon-eks-ami setup-local-disks bind mounts); five points above the higher one."""


NODE_FILES = f"{MARKER_DIR}/node-files.json"
"""The node's record of the files it verified, path to the manifest's hash, under the node copy's directory."""


def _log(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def node_root(node_dir: str | Path, dest: str) -> Path:
    """Where the node keeps the model directory ``dest`` (``SCHEME://BUCKET/PATH``): ``NODE_DIR/weights/PATH``."""
    path = split_uri(dest)[1].partition("/")[2]
    if not path or ".." in Path(path).parts:
        raise ValueError(f"{dest!r} names no model directory inside its bucket")
    return Path(node_dir) / "weights" / path


def _manifest_files(repo: str, manifest: dict[str, object]) -> list[RepoFile]:
    """The manifest's files as the copier's RepoFile (its hash as the Hub states it)."""
    files = []
    for entry in manifest["files"]:  # type: ignore[union-attr]
        h = str(entry["hash"])  # type: ignore[index]
        kind, _, hexdigest = h.partition(":")
        files.append(RepoFile(repo=repo, path=str(entry["path"]), size=int(entry["size"]),  # type: ignore[index]
                              sha256=hexdigest if kind == "sha256" else None,
                              git_oid=hexdigest if kind == "gitsha1" else ""))
    return files


def bucket_state(store: ObjectStore, r: Repo) -> tuple[bytes, list[RepoFile]] | None:
    """The bucket's completion marker of ``r`` and the files of the manifest it names (its sha256 checked), or None
    while the revision is incomplete or its manifest does not match its marker."""
    root = split_uri(r.dest)[1]
    marker = store.get(f"{root}/{marker_key(r.revision)}")
    if marker is None:
        return None
    body = store.get(f"{root}/{manifest_key(r.revision)}")
    if body is None or hashlib.sha256(body).hexdigest() != json.loads(marker).get("manifestSha256"):
        return None
    return marker, _manifest_files(r.repo, json.loads(body))


def _copy_file(store: ObjectStore, key: str, f: RepoFile, target: Path) -> bool:
    """Stream one object to ``target``, verified against the manifest's size and hash; False (nothing left) if not."""
    partial = target.with_name(target.name + ".partial")
    partial.parent.mkdir(parents=True, exist_ok=True)
    h, size = Hasher(f), 0
    with open(partial, "wb") as out:
        for chunk in store.read(key, READ_CHUNK):
            h.update(chunk)
            size += len(chunk)
            out.write(chunk)
        out.flush()
        os.fsync(out.fileno())
    if size != f.size or h.value() != f.expected_hash:
        partial.unlink()
        return False
    os.replace(partial, target)
    return True


def node_copy(store: ObjectStore, r: Repo, node_dir: str | Path, log: Log = _log,
              files_in_flight: int = FILES_IN_FLIGHT) -> bool:
    """Bring the node copy of ``r`` to the bucket's current revision: retire every marker on the node first (a pod
    starting meanwhile reads the bucket), copy every file the node's record does not give the manifest's hash with
    its size, then write the bucket's marker. True when the copy is complete; False when the bucket's revision is
    not, or a file did not verify."""
    state = bucket_state(store, r)
    if state is None:
        log(f"node copy: {r.dest} has no complete revision {r.revision} yet")
        return False
    marker, files = state
    local, root = node_root(node_dir, r.dest), split_uri(r.dest)[1]
    mark = local / marker_key(r.revision)
    if mark.exists() and mark.read_bytes() == marker and _present(local, files):
        return True
    for old in (local / MARKER_DIR).glob(f"{Path(MARKER_PREFIX).name}*"):
        old.unlink(missing_ok=True)
    record = _record(local)
    wanted = [f for f in files if not (record.get(f.path) == f.expected_hash and _has(local, f))]
    short = short_of_room(local, wanted)
    if short:
        log(f"node copy of {r.dest}: {short}; servers on this node load from the bucket")
        return False
    for f in wanted:
        record.pop(f.path, None)
    _write_record(local, record)
    lock = threading.Lock()

    def copy(f: RepoFile) -> bool:
        good = _copy_file(store, f"{root}/{f.path}", f, local / f.path)
        if good:  # recorded at once: a copy cut short resumes from the files it verified
            with lock:
                record[f.path] = f.expected_hash
                _write_record(local, record)
        return good

    with ThreadPoolExecutor(max_workers=max(1, files_in_flight)) as pool:
        ok = list(pool.map(copy, wanted))
    failed = [f.path for f, good in zip(wanted, ok) if not good]
    if failed:
        log(f"node copy: {len(failed)} file(s) did not match the manifest: {', '.join(failed[:5])}")
        return False
    _write_atomically(mark, marker)
    gone = _drop_unlisted(local, files)
    log(f"node copy of {r.dest} complete in {local} ({sum(f.size for f in files)} bytes"
        + (f"; {gone} file(s) of earlier revisions removed)" if gone else ")"))
    return True


def _drop_unlisted(local: Path, files: list[RepoFile]) -> int:
    """Remove the files of the node copy the manifest does not list (an earlier revision's, a ``.partial`` of a
    copy cut short), so revisions do not pile up on the node; the copier's own directory stays. How many went."""
    listed = {f.path for f in files}
    gone = 0
    for path in sorted(local.rglob("*")):
        rel = path.relative_to(local)
        if path.is_file() and rel.parts[0] != MARKER_DIR and str(rel) not in listed:
            path.unlink()
            gone += 1
    return gone


def _has(local: Path, f: RepoFile) -> bool:
    """``f`` is in the node copy with its size."""
    return (local / f.path).is_file() and (local / f.path).stat().st_size == f.size


def _record(local: Path) -> dict[str, str]:
    """The node's record of verified files (empty where there is none or it cannot be read: every file is copied)."""
    try:
        record = json.loads((local / NODE_FILES).read_bytes())
    except (OSError, ValueError):
        return {}
    return {str(k): str(v) for k, v in record.items()} if isinstance(record, dict) else {}


def _write_record(local: Path, record: dict[str, str]) -> None:
    _write_atomically(local / NODE_FILES, json.dumps(record, sort_keys=True).encode())


def _write_atomically(path: Path, body: bytes) -> None:
    """``body`` at ``path``, flushed to the disk before it replaces what was there."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".partial")
    with open(partial, "wb") as out:
        out.write(body)
        out.flush()
        os.fsync(out.fileno())
    os.replace(partial, path)


def short_of_room(local: Path, wanted: list[RepoFile]) -> str:
    """Why the filesystem holding ``local`` cannot take ``wanted`` and keep ``KEEP_FREE`` of itself free ("" when
    it can). Counts what the files already on the node hold towards them (a truncated file is rewritten)."""
    existing = Path(local)
    while not existing.exists():
        existing = existing.parent
    needed = sum(f.size - ((local / f.path).stat().st_size if (local / f.path).is_file() else 0) for f in wanted)
    usage = disk_usage(existing)
    if usage.free - needed >= KEEP_FREE * usage.total:
        return ""
    return (f"{needed} bytes to copy would leave {max(0, usage.free - needed)} of {usage.total} bytes free on the "
            f"filesystem of {existing}, under the {KEEP_FREE:.0%} the kubelet's eviction thresholds need (is the "
            "node's NVMe array mounted there?)")


def _present(local: Path, files: list[RepoFile]) -> bool:
    """Every file of the manifest is in the node copy with its size."""
    return all(_has(local, f) for f in files)


def choose(store: ObjectStore, r: Repo, node_dir: str | Path, log: Log = _log) -> str | None:
    """The node copy's directory when it is the bucket's current revision of ``r``; None (read the bucket) when it
    is not, or anything about it cannot be read. Never raises."""
    try:
        state = bucket_state(store, r)
        local = node_root(node_dir, r.dest)
        mark = local / marker_key(r.revision)
        if state is None or not mark.is_file() or mark.read_bytes() != state[0]:
            log(f"node copy of {r.dest}: not the bucket's current revision; loading from the bucket")
            return None
        if not _present(local, state[1]):
            log(f"node copy of {r.dest}: a file of the manifest is missing or truncated; loading from the bucket")
            return None
        log(f"node copy of {r.dest}: the bucket's revision {r.revision}; loading from {local}")
        return str(local)
    except Exception as e:  # noqa: BLE001 - a node copy that cannot be read is not used, never fatal
        log(f"node copy of {r.dest} unreadable ({type(e).__name__}: {e}); loading from the bucket")
        return None


def write_choice(path: str | Path, chosen: str | None) -> None:
    """The server's choice for the engine container: the node copy's directory, or an empty file (the bucket)."""
    Path(path).write_text(chosen or "")
