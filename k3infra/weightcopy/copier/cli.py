"""Copy a pinned Hugging Face revision into a bucket: streamed, sharded over workers, verified, resumable.

The commands: ``sync``, ``wait`` and ``verify`` (the package's docstring tells what each does).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from typing import Sequence

from .access import AuthorizationError, check_access
from .hub import hub_stream
from .marker import marker_key, wait_for_marker
from .plan import Repo, list_repo_files
from .sizes import DEFAULT_PART_SIZE, MiB
from .store import split_uri
from .stores import store_for
from .sync import DEFAULT_QUEUE_PARTS, DEFAULT_STREAMS, Settings, sync
from .verification import verify


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
