"""Copy a pinned Hugging Face revision into a bucket: streamed, sharded over workers, verified, resumable.

The sync Job runs this file as it is (a ConfigMap; it imports nothing of k3infra). One code path for every
cloud: the Hub side is huggingface_hub (files stored on Xet stream through hf_xet's ordered download stream,
its high-throughput backend; other files through ``HfFileSystem``'s streaming reads), the bucket side an
``ObjectStore``: fsspec's s3fs, gcsfs and adlfs for ``s3://``, ``gs://`` and ``az://``, the OSS SDK for
``oss://`` (ossfs writes appendable objects, capped at 5 GB, without metadata).

``sync`` (worker INDEX of N, an Indexed Job's ``JOB_COMPLETION_INDEX``):

1. lists the revision's files with their Hub metadata (size; LFS sha256, or the git blob id of small files);
2. assigns files to workers deterministically, largest first to the least-loaded worker (every worker computes
   the same assignment);
3. skips a file whose object has the expected size and carries the expected hash in its metadata (no reread);
4. streams every other file: a reader thread pulls bytes from the Hub into parts of ``--part-size`` (a bounded
   queue of ``--queue-parts`` parts), the writer uploads each part as it comes (a multipart upload carrying the
   expected hash as metadata) while the next part downloads; ``--streams`` files in flight per worker. The
   bytes are hashed on the way; a size or hash that differs from the Hub's aborts the upload (nothing is
   committed) and fails the file;
5. when every file of every repository is in (whichever worker finishes last sees it), writes the manifest and
   then the completion marker, ``.k3infra/complete-REVISION.json`` under the model directory. The server pods
   wait for that marker (``wait``) before the engine starts.

A rerun after any failure copies only what is missing or wrong. ``verify --deep`` rereads every object and
checks its content hash (for bit rot or out-of-band writes; the normal check trusts the metadata it wrote).
Memory per worker: about ``streams x (queue_parts + 2) x part_size``.

Every command first checks that the pod's identity can reach the bucket (``sync``: write an object; ``wait`` and
``verify``: read). A grant made moments before the pod started may not have propagated yet (Azure role assignments
"up to 10 minutes", Google Cloud IAM "potentially 7 minutes or longer", AWS and Alibaba eventually consistent):
authorization failures (HTTP 401/403 and each SDK's credential errors) are retried with exponential backoff for
``--auth-window`` seconds from the first request, then the command fails saying what was refused and why it may be.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import dataclasses
import hashlib
import json
import os
import queue
import re
import sys
import threading
import time
from typing import Any, Callable, Iterable, Iterator, Mapping, Protocol, Sequence

HASH_METADATA_KEY = "k3sha256"
"""Object metadata that carries the verified SHA-256 (alphanumeric: valid on S3, GCS, Azure and OSS alike)."""
MARKER_DIR = ".k3infra"
MiB = 2**20
DEFAULT_PART_SIZE = 64 * MiB
DEFAULT_STREAMS = 4
DEFAULT_QUEUE_PARTS = 2
ACCESS_CHECK_KEY = f"{MARKER_DIR}/access-check"
"""The small object ``sync`` writes at start to prove its identity may write (overwritten by every run)."""
AUTH_BACKOFF_FIRST = 2.0
AUTH_BACKOFF_MAX = 30.0
"""Seconds between retries of a refused authorization: doubling from the first to the most."""


class CopyError(RuntimeError):
    """A file that could not be copied and verified."""


class AuthorizationError(RuntimeError):
    """The pod's identity was refused access to the bucket for the whole propagation window."""


# ---------------------------------------------------------------------------------------------------------------
# What to copy


@dataclasses.dataclass(frozen=True)
class RepoFile:
    """One file of a Hub repository at a revision, with what the Hub states about it."""

    repo: str
    path: str
    size: int
    sha256: str | None
    """LFS sha256 (large files); None for files stored in git."""
    git_oid: str
    """Git blob id: for files in git, sha1 of ``blob SIZE\\0CONTENT``."""
    xet_hash: str | None = None

    @property
    def expected_hash(self) -> str:
        """The hash the copy checks: ``sha256:HEX`` for LFS files, ``gitsha1:HEX`` for the rest."""
        return f"sha256:{self.sha256}" if self.sha256 else f"gitsha1:{self.git_oid}"


@dataclasses.dataclass(frozen=True)
class Repo:
    """A repository to copy: Hub id, revision and destination URI (``SCHEME://BUCKET/PATH``)."""

    repo: str
    revision: str
    dest: str

    @staticmethod
    def parse(spec: str) -> "Repo":
        """``REPO@REVISION=DEST``."""
        m = re.fullmatch(r"([^@=\s]+)@([^=\s]+)=(\S+://\S+)", spec)
        if not m:
            raise argparse.ArgumentTypeError(f"{spec!r}: expected REPO@REVISION=SCHEME://BUCKET/PATH")
        return Repo(m.group(1), m.group(2), m.group(3).rstrip("/"))


def marker_key(revision: str) -> str:
    """Key of the completion marker of ``revision``, relative to the model directory."""
    return f"{MARKER_DIR}/complete-{_safe(revision)}.json"


def manifest_key(revision: str) -> str:
    """Key of the manifest of ``revision``, relative to the model directory."""
    return f"{MARKER_DIR}/manifest-{_safe(revision)}.json"


def _safe(revision: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]", "_", revision)


def list_repo_files(repo: str, revision: str, token: str | None) -> tuple[str, list[RepoFile]]:
    """(commit sha, files) of ``repo`` at ``revision``, from the Hub's tree listing."""
    from huggingface_hub import HfApi  # pyright: ignore[reportMissingImports]
    from huggingface_hub.hf_api import RepoFile as HubFile  # pyright: ignore[reportMissingImports]

    api = HfApi(token=token)
    info = api.model_info(repo, revision=revision)
    commit = str(info.sha or revision)
    files = []
    for entry in api.list_repo_tree(repo, revision=commit, recursive=True):
        if not isinstance(entry, HubFile):
            continue  # a folder
        lfs = getattr(entry, "lfs", None)
        files.append(RepoFile(repo=repo, path=entry.path, size=int(entry.size), git_oid=entry.blob_id,
                              sha256=(lfs.sha256 if lfs is not None else None),
                              xet_hash=getattr(entry, "xet_hash", None)))
    return commit, sorted(files, key=lambda f: f.path)


def assign(files: Sequence[RepoFile], workers: int) -> list[list[RepoFile]]:
    """Files per worker, balanced by size: largest first, each to the worker with the fewest bytes so far (ties
    to the lowest index). Deterministic: every worker computes the same assignment from the same listing."""
    if workers < 1:
        raise ValueError("workers must be at least 1")
    shards: list[list[RepoFile]] = [[] for _ in range(workers)]
    loads = [0] * workers
    for f in sorted(files, key=lambda f: (-f.size, f.repo, f.path)):
        i = min(range(workers), key=lambda w: (loads[w], w))
        shards[i].append(f)
        loads[i] += f.size
    return shards


# ---------------------------------------------------------------------------------------------------------------
# The Hub side


def hub_stream(f: RepoFile, revision: str, token: str | None, chunk: int = 8 * MiB) -> Iterator[bytes]:
    """The bytes of ``f``, in order, as they arrive: hf_xet's ordered stream for Xet-stored files, else
    ``HfFileSystem``'s streaming read (which reconnects at the current offset on a dropped connection)."""
    if f.xet_hash and os.environ.get("K3_COPY_DISABLE_XET") != "1":
        stream = _xet_stream(f, revision, token)
        if stream is not None:
            yield from stream
            return
    from huggingface_hub import HfFileSystem, constants  # pyright: ignore[reportMissingImports]

    fs = HfFileSystem(endpoint=constants.ENDPOINT, token=token)  # one cached instance per endpoint and token
    with fs.open(f"{f.repo}/{f.path}", "rb", revision=revision, block_size=0) as src:
        while True:
            data = src.read(chunk)
            if not data:
                return
            yield bytes(data)  # pyright: ignore[reportArgumentType] - a binary-mode file reads bytes


def _xet_stream(f: RepoFile, revision: str, token: str | None) -> Iterator[bytes] | None:
    try:
        import hf_xet  # pyright: ignore[reportMissingImports]
        from huggingface_hub import constants  # pyright: ignore[reportMissingImports]
        from huggingface_hub.utils import build_hf_headers  # pyright: ignore[reportMissingImports]
        from huggingface_hub.utils._xet import (  # pyright: ignore[reportMissingImports]
            XetTokenType,
            get_xet_session,
            xet_connection_info_refresh_url,
        )
    except ImportError:
        return None
    from urllib.parse import quote

    refresh = xet_connection_info_refresh_url(token_type=XetTokenType.READ, repo_id=f.repo, repo_type="model",
                                              revision=quote(revision, safe=""), endpoint=constants.ENDPOINT)
    group = get_xet_session().new_download_stream_group(
        token_refresh_url=refresh, token_refresh_headers=build_hf_headers(token=token))
    info = getattr(hf_xet, "XetFileInfo")(f.xet_hash, f.size)  # a compiled module: no stubs
    return iter(group.download_stream(info))


# ---------------------------------------------------------------------------------------------------------------
# The bucket side


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


class OssWriter:
    """A multipart upload through the OSS SDK (alibabacloud-oss-v2)."""

    def __init__(self, client: Any, oss: Any, bucket: str, key: str, hash_value: str) -> None:
        self.client, self.oss, self.bucket, self.key = client, oss, bucket, key
        self.upload_id = client.initiate_multipart_upload(oss.InitiateMultipartUploadRequest(
            bucket=bucket, key=key, metadata={HASH_METADATA_KEY: hash_value})).upload_id
        self.parts: list[Any] = []

    def write(self, data: bytes) -> None:
        """Upload the next part."""
        n = len(self.parts) + 1
        r = self.client.upload_part(self.oss.UploadPartRequest(bucket=self.bucket, key=self.key, part_number=n,
                                                               upload_id=self.upload_id, body=data))
        self.parts.append(self.oss.UploadPart(part_number=n, etag=r.etag))

    def commit(self) -> None:
        """Complete the multipart upload."""
        self.client.complete_multipart_upload(self.oss.CompleteMultipartUploadRequest(
            bucket=self.bucket, key=self.key, upload_id=self.upload_id,
            complete_multipart_upload=self.oss.CompleteMultipartUpload(parts=self.parts)))

    def abort(self) -> None:
        """Abort the multipart upload."""
        self.client.abort_multipart_upload(self.oss.AbortMultipartUploadRequest(
            bucket=self.bucket, key=self.key, upload_id=self.upload_id))


class OssStore:
    """OSS through its SDK. Credentials: the pod's RRSA role (ALIBABA_CLOUD_ROLE_ARN, ..._OIDC_PROVIDER_ARN,
    ..._OIDC_TOKEN_FILE, injected by ack-pod-identity-webhook) through alibabacloud-credentials' default chain."""

    def __init__(self, options: Mapping[str, Any], client: Any = None, sdk: Any = None) -> None:
        if sdk is None:
            import alibabacloud_oss_v2 as sdk  # pyright: ignore[reportMissingImports]
        oss = self.oss = sdk
        if client is None:
            cfg = oss.config.load_default()
            cfg.region = options["region"]
            if options.get("endpoint"):
                cfg.endpoint = options["endpoint"]
            cfg.credentials_provider = _oss_credentials(oss)
            client = oss.Client(cfg)
        self.client = client

    @staticmethod
    def _split(key: str) -> tuple[str, str]:
        bucket, _, path = key.partition("/")
        return bucket, path

    def stat(self, key: str) -> ObjectStat | None:
        """Size and hash metadata, or None when the object does not exist."""
        bucket, path = self._split(key)
        try:
            r = self.client.head_object(self.oss.HeadObjectRequest(bucket=bucket, key=path))
        except Exception as e:  # the SDK wraps a 404 in OperationError
            if "404" in str(e) or "NoSuchKey" in str(e):
                return None
            raise
        meta = {k.lower(): v for k, v in (r.metadata or {}).items()}
        return ObjectStat(size=int(r.content_length), hash=meta.get(HASH_METADATA_KEY))

    def writer(self, key: str, hash_value: str, part_size: int) -> Writer:
        """A multipart upload carrying ``hash_value`` as ``x-oss-meta-k3sha256``."""
        bucket, path = self._split(key)
        return OssWriter(self.client, self.oss, bucket, path, hash_value)

    def put(self, key: str, data: bytes) -> None:
        """Write a small object."""
        bucket, path = self._split(key)
        self.client.put_object(self.oss.PutObjectRequest(bucket=bucket, key=path, body=data))

    def get(self, key: str) -> bytes | None:
        """A small object's bytes, or None."""
        if self.stat(key) is None:
            return None
        return b"".join(self.read(key, 8 * MiB))

    def read(self, key: str, chunk: int) -> Iterator[bytes]:
        """An object's bytes in order."""
        bucket, path = self._split(key)
        r = self.client.get_object(self.oss.GetObjectRequest(bucket=bucket, key=path))
        yield from r.body.iter_bytes(block_size=chunk)


def _oss_credentials(oss: Any) -> Any:
    from alibabacloud_credentials.client import Client  # pyright: ignore[reportMissingImports]

    chain = Client()

    def get() -> Any:
        c = chain.get_credential()
        return oss.credentials.Credentials(access_key_id=c.access_key_id, access_key_secret=c.access_key_secret,
                                           security_token=c.security_token)

    return oss.credentials.CredentialsProviderFunc(get)


def split_uri(uri: str) -> tuple[str, str]:
    """(scheme, BUCKET/PATH) of ``SCHEME://BUCKET/PATH``."""
    scheme, sep, rest = uri.partition("://")
    if not sep or not rest:
        raise ValueError(f"{uri!r} is not a SCHEME://BUCKET/PATH URI")
    return scheme, rest.rstrip("/")


def open_store(scheme: str, options: Mapping[str, Any]) -> ObjectStore:
    """The object store for ``scheme`` (s3, gs, az, oss) with its options (``K3_COPY_STORAGE_OPTIONS``)."""
    if scheme in ("s3", "gs", "az"):
        return FsspecStore(scheme, options)
    if scheme == "oss":
        return OssStore(options)
    raise ValueError(f"no object store for scheme {scheme!r} (s3, gs, az, oss)")


# ---------------------------------------------------------------------------------------------------------------
# Authorization at start


AUTH_STATUS = frozenset({401, 403})
AUTH_ERROR_CODES = frozenset({
    # S3 (botocore ClientError codes; a HEAD answer has no body, and botocore names its status instead); OSS shares
    # AccessDenied, InvalidAccessKeyId and SignatureDoesNotMatch
    "AccessDenied", "AllAccessDisabled", "ExpiredToken", "InvalidAccessKeyId", "InvalidToken", "SignatureDoesNotMatch",
    "403", "401",
    # Azure Storage (x-ms-error-code)
    "AuthorizationFailure", "AuthorizationPermissionMismatch", "AuthenticationFailed", "InvalidAuthenticationInfo",
    # OSS (ServiceError.code)
    "SecurityTokenExpired", "InvalidSecurityToken",
})
"""Error codes that mean "this identity may not (yet)": the services' documented authorization errors."""
AUTH_ERROR_TYPES = frozenset({
    "NoCredentialsError", "PartialCredentialsError", "CredentialRetrievalError",  # botocore
    "ClientAuthenticationError", "CredentialUnavailableError",  # azure-core, azure-identity
    "RefreshError", "DefaultCredentialsError",  # google-auth (under gcsfs)
    "CredentialException",  # alibabacloud-credentials
    "CredentialsEmptyError", "CredentialsFetchError",  # alibabacloud-oss-v2
})
"""Exception types (by name: the copier imports only its own scheme's SDK) raised when the identity's credentials
cannot be had, e.g. a federated credential whose trust has not reached the token service."""


def _causes(e: BaseException) -> Iterator[BaseException]:
    """``e`` and every exception it wraps (cause, context, the OSS SDK's ``unwrap``), each once."""
    seen: set[int] = set()
    todo: list[BaseException] = [e]
    while todo:
        x = todo.pop()
        if id(x) in seen:
            continue
        seen.add(id(x))
        yield x
        unwrap = getattr(x, "unwrap", None)
        inner = unwrap() if callable(unwrap) else None
        todo += [c for c in (x.__cause__, x.__context__, inner) if isinstance(c, BaseException)]


def is_authorization_error(e: BaseException) -> bool:
    """True when ``e`` (or what it wraps) says the caller is not authenticated or not authorized: s3fs's and
    adlfs's PermissionError, gcsfs's "Forbidden" (it raises a plain OSError for 403, ``gcsfs/retry.py``), HTTP 401/403
    on an SDK's error, a documented authorization error code, or a credential provider's failure."""
    for x in _causes(e):
        if isinstance(x, PermissionError) or {t.__name__ for t in type(x).__mro__} & AUTH_ERROR_TYPES:
            return True
        if type(x) is OSError and str(x).startswith("Forbidden"):
            return True
        for attr in ("status_code", "status", "code"):
            value = getattr(x, attr, None)
            if isinstance(value, int) and value in AUTH_STATUS:
                return True
        for attr in ("code", "error_code"):
            value = getattr(x, attr, None)
            if isinstance(value, str) and value in AUTH_ERROR_CODES:
                return True
        response = getattr(x, "response", None)
        if isinstance(response, dict):
            error = response.get("Error") or {}
            status = (response.get("ResponseMetadata") or {}).get("HTTPStatusCode")
            if error.get("Code") in AUTH_ERROR_CODES or status in AUTH_STATUS:
                return True
    return False


def _error_code(x: BaseException) -> str | None:
    """The service's own error code or HTTP status on one exception, where it carries one."""
    response = getattr(x, "response", None)
    if isinstance(response, dict) and (response.get("Error") or {}).get("Code"):
        return str(response["Error"]["Code"])
    for attr in ("error_code", "code", "status_code"):
        value = getattr(x, attr, None)
        if isinstance(value, (str, int)) and not isinstance(value, bool) and value:
            return str(value)
    return None


def _summary(e: BaseException) -> str:
    """The first line of an error, with its type and the service's error code found in what it wraps."""
    text = str(e).strip().splitlines()
    codes = [c for c in (_error_code(x) for x in _causes(e)) if c]
    return f"{type(e).__name__}: {text[0] if text else ''}{f' ({codes[0]})' if codes else ''}"[:300]


def check_access(store: ObjectStore, roots: Sequence[str], write: bool, window: float,
                 log: Callable[[str], None], clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep) -> None:
    """Prove the identity can read each of ``roots`` (and, with ``write``, write under it), retrying authorization
    failures with backoff for ``window`` seconds from the first request. Other errors are raised at once; an
    authorization failure after the window raises AuthorizationError."""
    started = clock()
    deadline = started + max(0.0, window)
    delay = AUTH_BACKOFF_FIRST
    for root in roots:
        key = f"{root}/{ACCESS_CHECK_KEY}"
        refused = 0
        while True:
            try:
                store.stat(key)
                if write:
                    store.put(key, json.dumps({"checked": "write access of the weight sync"}).encode())
                if refused:
                    log(f"access to {root} granted after {refused} refusal(s), {clock() - started:.0f} s")
                break
            except Exception as e:  # noqa: BLE001 - only authorization failures are retried
                if not is_authorization_error(e):
                    raise
                refused += 1
                left = deadline - clock()
                if left <= 0:
                    what = "write to" if write else "read"
                    raise AuthorizationError(
                        f"this pod's identity may not {what} {root}: still refused {clock() - started:.0f} s after its "
                        f"first attempt ({_summary(e)}). A new role grant or federated credential takes a while to "
                        "propagate (Azure: up to 10 minutes; Google Cloud: up to 7 minutes or longer), and a retry "
                        "of this pod waits again; if it persists, check that the pod's Kubernetes service account is "
                        "the one bound to the bucket's identity and that the identity holds the bucket's "
                        f"{'writer' if write else 'reader'} role") from e
                wait = min(delay, left)
                log(f"access to {root} refused ({_summary(e)}); a new grant may still be propagating: retrying in "
                    f"{wait:.1f} s ({left:.0f} s of the window left)")
                sleep(wait)
                delay = min(delay * 2, AUTH_BACKOFF_MAX)


# ---------------------------------------------------------------------------------------------------------------
# One file


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


_DONE = object()


def _parts(chunks: Iterable[bytes], part_size: int) -> Iterator[bytes]:
    """Regroup a byte stream into parts of ``part_size`` (the last may be shorter), copying each byte once."""
    pending: list[bytes | memoryview] = []
    size = 0
    for c in chunks:
        view = memoryview(c)
        while len(view):
            take = min(len(view), part_size - size)
            pending.append(c if take == len(c) and not pending and size == 0 and take == part_size else view[:take])
            size += take
            view = view[take:]
            if size == part_size:
                only = pending[0]
                yield only if len(pending) == 1 and isinstance(only, bytes) else b"".join(pending)
                pending, size = [], 0
    if pending:
        yield b"".join(pending)


def copy_file(f: RepoFile, source: Iterable[bytes], store: ObjectStore, key: str, part_size: int,
              queue_parts: int) -> int:
    """Stream ``source`` into ``key``, verified: returns the bytes written. A reader thread fills a queue of at
    most ``queue_parts`` parts while this thread uploads; the hash and size are checked before the commit."""
    q: queue.Queue[Any] = queue.Queue(maxsize=max(1, queue_parts))
    hasher = Hasher(f)
    failure: list[BaseException] = []
    stop = threading.Event()

    def read() -> None:
        try:
            for part in _parts(source, part_size):
                hasher.update(part)
                while not stop.is_set():
                    try:
                        q.put(part, timeout=0.5)
                        break
                    except queue.Full:
                        continue
                if stop.is_set():
                    return
        except BaseException as e:  # noqa: BLE001 - handed to the writer
            failure.append(e)
        finally:
            q.put(_DONE)

    writer = store.writer(key, f.expected_hash, part_size)
    reader = threading.Thread(target=read, name=f"read {f.path}", daemon=True)
    reader.start()
    written = 0
    try:
        while (part := q.get()) is not _DONE:
            writer.write(part)
            written += len(part)
        reader.join()
        if failure:
            raise CopyError(f"{f.repo}/{f.path}: reading from the Hub failed: {failure[0]}") from failure[0]
        got = hasher.value()
        if written != f.size or got != f.expected_hash:
            raise CopyError(f"{f.repo}/{f.path}: got {written} bytes with {got}; the Hub states {f.size} bytes with "
                            f"{f.expected_hash}")
    except BaseException:
        stop.set()
        writer.abort()
        raise
    writer.commit()
    return written


def is_complete(stat: ObjectStat | None, f: RepoFile) -> bool:
    """The object is there with the Hub's size and the hash the copy verified."""
    return stat is not None and stat.size == f.size and stat.hash == f.expected_hash


# ---------------------------------------------------------------------------------------------------------------
# A worker


@dataclasses.dataclass
class Report:
    """What one worker did."""

    copied: list[str] = dataclasses.field(default_factory=list)
    skipped: list[str] = dataclasses.field(default_factory=list)
    failed: dict[str, str] = dataclasses.field(default_factory=dict)
    bytes_copied: int = 0
    seconds: float = 0.0
    completed: list[str] = dataclasses.field(default_factory=list)
    """Repositories this worker found complete and marked."""

    def as_json(self) -> str:
        """One JSON line for the Job's log."""
        return json.dumps({"copied": self.copied, "skipped": self.skipped, "failed": self.failed,
                           "bytesCopied": self.bytes_copied, "seconds": round(self.seconds, 3),
                           "gbps": round(self.bytes_copied * 8 / 1e9 / self.seconds, 3) if self.seconds else 0,
                           "completed": self.completed}, sort_keys=True)


Source = Callable[[RepoFile, str], Iterable[bytes]]


@dataclasses.dataclass(frozen=True)
class Settings:
    """How one worker runs."""

    workers: int = 1
    index: int = 0
    streams: int = DEFAULT_STREAMS
    part_size: int = DEFAULT_PART_SIZE
    queue_parts: int = DEFAULT_QUEUE_PARTS
    deep: bool = False
    """Reread objects that look complete and check their content hash before skipping them."""


def sync(repos: Sequence[Repo], store: ObjectStore, settings: Settings,
         listing: Callable[[Repo], tuple[str, list[RepoFile]]], source: Source,
         log: Callable[[str], None] = lambda s: print(s, file=sys.stderr, flush=True)) -> Report:
    """Copy this worker's share of ``repos`` into ``store``, then mark every repository found complete."""
    if not 0 <= settings.index < settings.workers:
        raise ValueError(f"worker index {settings.index} is not in 0..{settings.workers - 1}")
    started = time.monotonic()
    listed = {r: listing(r) for r in repos}
    dest = {r: split_uri(r.dest)[1] for r in repos}
    owner = {f: r for r, (_, files) in listed.items() for f in files}
    mine = assign(list(owner), settings.workers)[settings.index]
    report = Report()
    lock = threading.Lock()

    def one(f: RepoFile) -> None:
        r = owner[f]
        key = f"{dest[r]}/{f.path}"
        if is_complete(store.stat(key), f) and (not settings.deep or content_hash(store, key, f) == f.expected_hash):
            with lock:
                report.skipped.append(f"{f.repo}/{f.path}")
            return
        t0 = time.monotonic()
        n = copy_file(f, source(f, listed[r][0]), store, key, settings.part_size, settings.queue_parts)
        dt = time.monotonic() - t0
        log(f"copied {f.repo}/{f.path}: {n:,} bytes in {dt:.1f} s ({n * 8 / 1e9 / max(dt, 1e-9):.2f} Gbps)")
        with lock:
            report.copied.append(f"{f.repo}/{f.path}")
            report.bytes_copied += n

    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, settings.streams)) as pool:
        futures = {pool.submit(one, f): f for f in mine}
        for fut in concurrent.futures.as_completed(futures):
            f = futures[fut]
            if (e := fut.exception()) is not None:
                report.failed[f"{f.repo}/{f.path}"] = str(e)
                log(f"FAILED {f.repo}/{f.path}: {e}")
    report.copied.sort()
    report.skipped.sort()
    if not report.failed:
        for r in repos:
            commit, files = listed[r]
            if mark_if_complete(store, r, commit, files, dest[r]):
                report.completed.append(r.repo)
    report.seconds = time.monotonic() - started
    return report


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


def content_hash(store: ObjectStore, key: str, f: RepoFile) -> str:
    """The hash of an object's bytes, of the kind the Hub states for ``f``."""
    h = Hasher(f)
    for c in store.read(key, 8 * MiB):
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


# ---------------------------------------------------------------------------------------------------------------
# Command line


def _size(text: str) -> int:
    m = re.fullmatch(r"(\d+)\s*(MiB|GiB|KiB|B)?", text.strip())
    if not m:
        raise argparse.ArgumentTypeError(f"{text!r}: a size such as 64MiB")
    return int(m.group(1)) * {"B": 1, None: 1, "KiB": 2**10, "MiB": MiB, "GiB": 2**30}[m.group(2)]


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="copier", description=(__doc__ or "").split("\n\n")[0])
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--auth-window", type=float, default=0.0, metavar="SECONDS",
                        help="retry authorization failures at start for this long (the cloud's stated propagation "
                             "time of a new grant); default 0: fail at the first")
    sub = p.add_subparsers(dest="command", required=True)
    s = sub.add_parser("sync", parents=[common], help="copy this worker's share, then mark what is complete")
    s.add_argument("--repo", action="append", type=Repo.parse, required=True, metavar="REPO@REVISION=DEST")
    s.add_argument("--workers", type=int, default=int(os.environ.get("K3_COPY_WORKERS", "1")))
    s.add_argument("--index", type=int, default=int(os.environ.get("JOB_COMPLETION_INDEX", "0")))
    s.add_argument("--streams", type=int, default=DEFAULT_STREAMS, help="files in flight per worker")
    s.add_argument("--part-size", type=_size, default=DEFAULT_PART_SIZE)
    s.add_argument("--queue-parts", type=int, default=DEFAULT_QUEUE_PARTS)
    s.add_argument("--deep", action="store_true", help="reread objects that look complete before skipping them")
    w = sub.add_parser("wait", parents=[common], help="wait for a revision's completion marker")
    w.add_argument("--repo", action="append", type=Repo.parse, required=True, metavar="REPO@REVISION=DEST")
    w.add_argument("--timeout", type=float, required=True, help="seconds")
    w.add_argument("--interval", type=float, default=15.0)
    v = sub.add_parser("verify", parents=[common], help="check every object against the Hub's metadata")
    v.add_argument("--repo", type=Repo.parse, required=True, metavar="REPO@REVISION=DEST")
    v.add_argument("--deep", action="store_true", help="reread every object and check its content hash")
    return p


def store_for(uri: str) -> ObjectStore:
    """The store of ``uri`` with the options in ``K3_COPY_STORAGE_OPTIONS`` (JSON)."""
    return open_store(split_uri(uri)[0], json.loads(os.environ.get("K3_COPY_STORAGE_OPTIONS") or "{}"))


def _log(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def main(argv: Sequence[str] | None = None) -> int:
    """Run a command; 0 when it succeeded, 1 when files failed, the wait timed out or access was refused."""
    a = _parser().parse_args(argv)
    token = os.environ.get("HF_TOKEN") or None
    repos: list[Repo] = a.repo if isinstance(a.repo, list) else [a.repo]
    try:
        if a.command == "sync":
            schemes = {split_uri(r.dest)[0] for r in repos}
            if len(schemes) != 1:
                raise SystemExit(f"every destination must be in one store, got {sorted(schemes)}")
            settings = Settings(workers=a.workers, index=a.index, streams=a.streams, part_size=a.part_size,
                                queue_parts=a.queue_parts, deep=a.deep)
            store = store_for(repos[0].dest)
            check_access(store, [split_uri(r.dest)[1] for r in repos], True, a.auth_window, _log)
            report = sync(repos, store, settings,
                          listing=lambda r: list_repo_files(r.repo, r.revision, token),
                          source=lambda f, commit: hub_stream(f, commit, token))
            print(report.as_json(), flush=True)
            return 1 if report.failed else 0
        if a.command == "wait":
            deadline = time.monotonic() + a.timeout
            for r in repos:
                store = store_for(r.dest)
                check_access(store, [split_uri(r.dest)[1]], False, a.auth_window, _log)
                if not wait_for_marker(store, r, max(0.0, deadline - time.monotonic()), a.interval):
                    _log(f"timed out after {a.timeout:g} s waiting for {r.dest}/{marker_key(r.revision)}")
                    return 1
            return 0
        r = repos[0]
        store = store_for(r.dest)
        check_access(store, [split_uri(r.dest)[1]], False, a.auth_window, _log)
        _, files = list_repo_files(r.repo, r.revision, token)
        problems = verify(r, store, files, a.deep)
        print(json.dumps({"files": len(files), "problems": problems}, sort_keys=True), flush=True)
        return 1 if problems else 0
    except AuthorizationError as e:
        _log(f"FAILED: {e}")
        return 1


if __name__ == "__main__":
    sys.exit(main())
