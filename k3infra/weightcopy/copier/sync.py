"""A worker of the sync: its share of the files copied (what is already in skipped), its progress published while it
runs, then every repository found complete marked."""

from __future__ import annotations

import concurrent.futures
import dataclasses
import json
import sys
import threading
import time
from typing import Callable, Iterable, Sequence

from .marker import mark_if_complete, retire_markers
from .plan import Repo, RepoFile, assign
from .progress import INTERVAL_SECONDS, Progress, ProgressWriter, progress_key
from .sizes import DEFAULT_PART_SIZE
from .store import ObjectStore, split_uri
from .transfer import copy_file
from .verification import content_hash, is_complete

DEFAULT_STREAMS = 4
DEFAULT_QUEUE_PARTS = 2


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
    progress_interval: float = INTERVAL_SECONDS
    """Seconds between two writes of the worker's progress object (``progress``)."""


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
    progress = Progress(settings.index, settings.workers, mine)
    retired: set[Repo] = set()

    def before_first_write(r: Repo) -> None:
        with lock:
            if r not in retired:
                retired.add(r)
                for key in retire_markers(store, dest[r]):
                    log(f"retired {key}: {r.repo} is about to change under it")

    def one(f: RepoFile) -> None:
        r = owner[f]
        key = f"{dest[r]}/{f.path}"
        if is_complete(store.stat(key), f) and (not settings.deep or content_hash(store, key, f) == f.expected_hash):
            progress.verified(f, 0)
            with lock:
                report.skipped.append(f"{f.repo}/{f.path}")
            return
        streamed = [0]

        def part(nbytes: int) -> None:
            streamed[0] += nbytes
            progress.part(nbytes)

        before_first_write(r)
        t0 = time.monotonic()
        try:
            n = copy_file(f, source(f, listed[r][0]), store, key, settings.part_size, settings.queue_parts, part)
        except BaseException:
            progress.failed(streamed[0])
            raise
        progress.verified(f, streamed[0])
        dt = time.monotonic() - t0
        log(f"copied {f.repo}/{f.path}: {n:,} bytes in {dt:.1f} s ({n * 8 / 1e9 / max(dt, 1e-9):.2f} Gbps)")
        with lock:
            report.copied.append(f"{f.repo}/{f.path}")
            report.bytes_copied += n

    # The progress object sits beside the first repository's (the model's) marker.
    progress_at = f"{dest[repos[0]]}/{progress_key(repos[0].revision, settings.index)}"
    with ProgressWriter(store, progress_at, progress, settings.progress_interval, log), \
            concurrent.futures.ThreadPoolExecutor(max_workers=max(1, settings.streams)) as pool:
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
