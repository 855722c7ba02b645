"""Each worker's progress, published as a small object beside the completion marker, for ``k3infra status``.

Why an object in the bucket, and not an annotation on the worker's pod: the worker already holds one permission,
writing under the model directory, and needs no other. Argo Workflows carries a step's self-reported progress
(``ARGO_PROGRESS_FILE``, docs/progress.md) to the cluster through its executor writing to the pod, for which the
workflow role it documents holds ``patch`` on ``pods`` ("pod patch is used to annotate the step's outputs back to
controller"). Kubernetes RBAC cannot narrow ``patch`` to an Indexed Job's generated pod names, so that grant would
let the copier relabel the server's pods (and take over their Services), and it would need a service account token
mounted in a pod that holds a Hugging Face token. Without either, a copy Job's only report is its log (``kubectl
logs``: log access, and a human to read it). The object is read through the same store access the copier uses
(k3infra/status/copy_progress.py), by whoever may read the bucket.

One object per worker (``.k3infra/progress-REVISION-worker-INDEX.json`` under the first repository's directory,
overwritten in place: workers never write the same key), written every ``interval`` seconds while the worker runs
and once more at its end, so the writes are bounded by the run's duration over the interval plus two. A failed write
is logged and skipped: progress never fails a copy.
"""

from __future__ import annotations

import collections
import json
import threading
import time
from datetime import datetime, timezone
from typing import Callable

from .marker import MARKER_DIR, safe_revision
from .plan import RepoFile
from .store import ObjectStore

INTERVAL_SECONDS = 5.0
"""Seconds between two writes of a worker's progress object."""
RATE_WINDOW_SECONDS = 60.0
"""The rate is measured over this much of the recent past."""
COPYING, DONE, FAILED = "copying", "done", "failed"
"""A worker's ``state``: still copying; its share verified; some file of its share failed."""


def progress_key(revision: str, index: int) -> str:
    """Key of worker ``index``'s progress object, relative to the (first) model directory."""
    return f"{MARKER_DIR}/progress-{safe_revision(revision)}-worker-{index}.json"


def _utc(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


class Progress:
    """One worker's counters, updated by its copy threads; ``document`` is what the progress object holds."""

    def __init__(self, index: int, workers: int, files: list[RepoFile], clock: Callable[[], float] = time.time,
                 monotonic: Callable[[], float] = time.monotonic) -> None:
        self.index, self.workers = index, workers
        self.files_total, self.bytes_total = len(files), sum(f.size for f in files)
        self.files_done = self.files_failed = self.bytes_verified = self.bytes_in_flight = self.bytes_streamed = 0
        self.clock, self.monotonic = clock, monotonic
        self.started = self.progress_at = clock()
        self.lock = threading.Lock()
        self.samples: collections.deque[tuple[float, int]] = collections.deque()
        """(monotonic time, bytes streamed), one per document: the rate window's worth of them (``_rate``)."""

    def _moved(self) -> None:
        self.progress_at = self.clock()

    def part(self, nbytes: int) -> None:
        """A part of a file in flight was uploaded."""
        with self.lock:
            self.bytes_in_flight += nbytes
            self.bytes_streamed += nbytes
            self._moved()

    def verified(self, f: RepoFile, streamed: int) -> None:
        """``f`` is in the bucket, verified (``streamed``: the bytes this run uploaded for it, 0 when skipped)."""
        with self.lock:
            self.bytes_in_flight -= streamed
            self.bytes_verified += f.size
            self.files_done += 1
            self._moved()

    def failed(self, streamed: int) -> None:
        """A file failed after ``streamed`` bytes of it were uploaded (they count for nothing)."""
        with self.lock:
            self.bytes_in_flight -= streamed
            self.files_failed += 1

    def _rate(self) -> float:
        """Bytes per second over the last ``RATE_WINDOW_SECONDS``: from the newest sample at least that old (or the
        oldest there is) to now. Older samples are dropped, so there are at most window / interval + 2."""
        now = self.monotonic()
        self.samples.append((now, self.bytes_streamed))
        while len(self.samples) > 2 and now - self.samples[1][0] >= RATE_WINDOW_SECONDS:
            self.samples.popleft()
        t0, b0 = self.samples[0]
        return (self.bytes_streamed - b0) / (now - t0) if now > t0 else 0.0

    def document(self, finished: bool = False, aborted: bool = False) -> dict[str, object]:
        """The progress object: sizes in bytes, times in UTC (RFC 3339), the rate in bytes per second. ``aborted``:
        the worker ended on an error of its own, whatever its files."""
        with self.lock:
            state = (FAILED if self.files_failed or aborted else DONE) if finished else COPYING
            return {"worker": self.index, "workers": self.workers, "state": state,
                    "bytesVerified": self.bytes_verified, "bytesInFlight": self.bytes_in_flight,
                    "bytesTotal": self.bytes_total, "filesDone": self.files_done, "filesFailed": self.files_failed,
                    "filesTotal": self.files_total, "bytesPerSecond": round(self._rate(), 1),
                    "rateWindowSeconds": int(RATE_WINDOW_SECONDS), "startedAt": _utc(self.started),
                    "progressAt": _utc(self.progress_at), "updatedAt": _utc(self.clock())}


class ProgressWriter:
    """Writes a worker's progress object every ``interval`` seconds from a thread of its own, and at the end."""

    def __init__(self, store: ObjectStore, key: str, progress: Progress, interval: float,
                 log: Callable[[str], None]) -> None:
        self.store, self.key, self.progress, self.interval, self.log = store, key, progress, interval, log
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, name="progress", daemon=True)
        self.warned = False

    def _write(self, finished: bool, aborted: bool = False) -> None:
        try:
            self.store.put(self.key, json.dumps(self.progress.document(finished, aborted), sort_keys=True).encode())
        except Exception as e:  # noqa: BLE001 - progress is advisory: the copy goes on
            if not self.warned:
                self.log(f"could not write the progress object {self.key} (the copy goes on): {e}")
                self.warned = True

    def _run(self) -> None:
        while not self.stop.wait(self.interval):  # ends when the worker's copy does
            self._write(False)

    def __enter__(self) -> "ProgressWriter":
        self._write(False)
        self.thread.start()
        return self

    def __exit__(self, exc_type: object, *exc: object) -> None:
        self.stop.set()
        self.thread.join()
        self._write(True, aborted=exc_type is not None)
