"""The weight copy's byte progress, read from the objects its workers write beside the completion marker
(k3infra/weightcopy/copier/progress.py, which says why there and not on the pods): bytes verified of the total,
files, the rate over the last minute, the time left, and a stalled worker.

Where to read comes from the plan's sync Job (its first ``--repo`` destination and revision, ``--workers``, and the
store settings in its container's environment); the objects are read with the copier's own store access
(``copier.stores``: s3fs, gcsfs, adlfs or the OSS SDK, the user's default credentials), so status needs read access to
the bucket and that scheme's SDK. Where either is missing the weights line says so and status goes on with the
Job's own state.
"""

import concurrent.futures
import contextlib
import json
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from ..clock import parse
from ..weightcopy.copier.progress import COPYING, progress_key
from ..weightcopy.copier.store import split_uri
from ..weightcopy.copier.stores import store_for

STALL_SECONDS = 10 * 60
"""An unfinished worker that has uploaded nothing for this long is stalled. A worker uploads a 64 MiB part every
second or so at the catalog's slowest stated Hub stream (catalog.transfer.HUB_STREAM, 0.8 Gbps), and a dropped Hub
connection is resumed within seconds; ten minutes of nothing is no slow copy, and leaves room for a skew of minutes
between the pod's clock (which stamps the object) and this machine's."""

READ_TIMEOUT_SECONDS = 15.0
"""How long status waits for the bucket: an SDK looking for credentials or an unreachable endpoint retries for
minutes, and the first read imports the scheme's SDK (seconds). ``--watch`` stops asking after a failure."""

COPIER_ENV = ("HOME", "HF_HUB_DISABLE_TELEMETRY", "HF_XET_HIGH_PERFORMANCE")
"""Variables of the sync container that are the copier's own, not the store's (k3infra/serving/copier_pods.py)."""


@dataclass(frozen=True)
class ProgressRef:
    """Where the sync's workers write their progress, and how the copier reaches that bucket."""

    uri: str
    """The first ``--repo`` destination (``SCHEME://BUCKET/PATH``): the model's directory."""
    revision: str
    workers: int
    store_env: dict[str, str] = field(default_factory=dict)
    """The store's settings in the container's environment (``K3_COPY_STORAGE_OPTIONS``, the SDK's variables)."""

    def key(self, index: int) -> str:
        """The full key (``BUCKET/PATH/...``) of worker ``index``'s progress object."""
        return f"{split_uri(self.uri)[1]}/{progress_key(self.revision, index)}"


def progress_ref(job: dict[str, Any]) -> ProgressRef | None:
    """The progress objects of the sync Job ``job`` (a rendered document), or None when it runs no copier sync."""
    container = job["spec"]["template"]["spec"]["containers"][0]
    args = [str(a) for a in container.get("args") or ()]
    if not args or args[0] != "sync" or "--repo" not in args:
        return None
    repo = args[args.index("--repo") + 1]
    head, _, uri = repo.partition("=")
    workers = int(args[args.index("--workers") + 1]) if "--workers" in args else 1
    env = {e["name"]: str(e["value"]) for e in container.get("env") or () if "value" in e
           and e["name"] not in COPIER_ENV}
    return ProgressRef(uri=uri, revision=head.rpartition("@")[2], workers=workers, store_env=env)


@dataclass(frozen=True)
class CopyProgress:
    """Each worker's progress object (None where it has written none yet), or why none could be read."""

    workers: tuple[dict[str, Any] | None, ...] = ()
    error: str = ""


def read(ref: ProgressRef, get: Callable[[str], bytes | None]) -> CopyProgress:
    """Every worker's object through ``get`` (an object store's ``get``: the bytes, or None when absent)."""
    docs = []
    for i in range(ref.workers):
        body = get(ref.key(i))
        docs.append(json.loads(body) if body else None)
    return CopyProgress(tuple(docs))


@contextlib.contextmanager
def _environment(values: dict[str, str]) -> Iterator[None]:
    """The store's variables set for the duration, where this machine sets none of its own."""
    added = {k: v for k, v in values.items() if k not in os.environ}
    os.environ.update(added)
    try:
        yield
    finally:
        for k in added:
            os.environ.pop(k, None)


def observe(ref: ProgressRef, timeout: float = READ_TIMEOUT_SECONDS) -> CopyProgress:
    """Read the objects from the bucket as the copier would, with this machine's credentials, within ``timeout``
    seconds; a failure (no SDK, no access, an endpoint only the cluster resolves, no answer) is reported, never
    raised."""
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="copy-progress")
    try:
        with _environment(ref.store_env):
            return pool.submit(lambda: read(ref, store_for(ref.uri).get)).result(timeout=timeout)
    except concurrent.futures.TimeoutError:
        return CopyProgress(error=f"no answer from {ref.uri} within {timeout:g} s")
    except Exception as e:  # noqa: BLE001 - any SDK's error: status reports it and goes on
        text = str(e).strip().splitlines()
        return CopyProgress(error=f"{type(e).__name__}: {text[0] if text else ''}"[:200])
    finally:
        pool.shutdown(wait=False)  # a read still waiting on the network is left to its SDK's own timeouts


@dataclass(frozen=True)
class Summary:
    """What the weights line says of the copy's progress."""

    detail: str
    extra: dict[str, Any]
    stalled: dict[int, int]
    """Workers that have uploaded nothing for ``STALL_SECONDS`` while their pod runs: index to seconds quiet."""


def _gb(n: float) -> str:
    return f"{n / 1e9:,.1f} GB"


def _left(doc: dict[str, Any]) -> int:
    return int(doc["bytesTotal"]) - int(doc["bytesVerified"]) - int(doc["bytesInFlight"])


def summarize(progress: CopyProgress, now: datetime, running_since: dict[int, datetime]) -> Summary:
    """Totals over the workers, the time left (the slowest worker's remaining bytes at its rate), and the stalled
    workers: those whose pod runs (``running_since``: worker index to its pod's start) and whose last upload, or that
    pod's start when later, is ``STALL_SECONDS`` old."""
    if progress.error:
        return Summary(f"progress not readable from here ({progress.error})", {"copyProgress": {
            "error": progress.error}}, {})
    docs = [d for d in progress.workers if d]
    if not docs:
        return Summary("no worker has written its progress yet", {"copyProgress": {"workers": []}}, {})
    verified, total = sum(int(d["bytesVerified"]) for d in docs), sum(int(d["bytesTotal"]) for d in docs)
    files, files_total = sum(int(d["filesDone"]) for d in docs), sum(int(d["filesTotal"]) for d in docs)
    rate = sum(float(d["bytesPerSecond"]) for d in docs if d["state"] == COPYING)
    copying = [d for d in docs if d["state"] == COPYING and _left(d) > 0]
    left = (max(_left(d) / float(d["bytesPerSecond"]) for d in copying)
            if copying and all(float(d["bytesPerSecond"]) > 0 for d in copying) else None)
    if len(docs) < len(progress.workers):
        left = None  # a worker's share is not known yet
    stalled: dict[int, int] = {}
    for d in copying:
        worker = int(d["worker"])
        if worker not in running_since:
            continue  # its pod is pending, restarting or done: the Job's counts tell
        quiet = int((now - max(parse(d["progressAt"]), running_since[worker])).total_seconds())
        if quiet >= STALL_SECONDS:
            stalled[worker] = quiet
    detail = (f"{_gb(verified)} of {_gb(total)} verified ({verified / total:.0%}), {files} of {files_total} files"
              if total else f"{files} of {files_total} files")
    detail += f", {rate * 8 / 1e9:.2f} Gbps over the last minute"
    if left is not None:
        detail += f", about {int(left // 60)} min left"
    if len(docs) < len(progress.workers):
        detail += f" ({len(docs)} of {len(progress.workers)} workers reporting)"
    extra = {"copyProgress": {"bytesVerified": verified, "bytesTotal": total, "filesDone": files,
                              "filesTotal": files_total, "bytesPerSecond": round(rate, 1),
                              "secondsLeft": None if left is None else int(left), "stalledWorkers": sorted(stalled),
                              "workers": list(progress.workers)}}
    return Summary(detail, extra, stalled)
