"""Copy a pinned Hugging Face revision into a bucket: streamed, sharded over workers, verified, resumable.

The commands: ``sync``, ``wait`` and ``verify`` (the package's docstring tells what each does), ``node-agent``
(``agent``: the weights and the engine's caches kept on a GPU node), and ``node-fill`` (the same node copy once, in
the server pod's init container where the platform builds the pod: HyperPod, k3infra.aws.hyperpod_weights).
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
from .agent import Agent, run
from .hub import hub_stream
from .marker import marker_key, wait_for_marker
from .node import choose, node_copy, write_choice
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
    w.add_argument("--node-dir", help="the node's directory of kept weights: once the first repository is complete, "
                   "write its node copy's path to --choice-file when it is the bucket's revision (else nothing)")
    w.add_argument("--choice-file", help="where --node-dir's choice goes (an empty file: load from the bucket)")
    n = sub.add_parser("node-agent", parents=[common], help="keep the weights and the engine's caches on this node")
    n.add_argument("--repo", type=Repo.parse, required=True, metavar="REPO@REVISION=DEST")
    n.add_argument("--node-dir", help="the node's directory on its local NVMe for the weights (none: no copy)")
    n.add_argument("--cache-dir", help="the node's engine cache root, one directory per key (none: caches not carried)")
    n.add_argument("--cache", action="append", default=[], type=json.loads, metavar="PARTS",
                   help="one key's parts as a JSON object (engine release, image, GPU model, layout; a role's name)")
    n.add_argument("--interval", type=float, default=60.0)
    f = sub.add_parser("node-fill", parents=[common], help="once the revision is complete, bring this node's copy to it "
                       "(verified against the manifest); fail when it cannot, so the pod starts only on a whole copy")
    f.add_argument("--repo", type=Repo.parse, required=True, metavar="REPO@REVISION=DEST")
    f.add_argument("--node-dir", required=True, help="the node's directory on its local NVMe for the weights")
    f.add_argument("--timeout", type=float, required=True, help="seconds to wait for the revision's marker")
    f.add_argument("--interval", type=float, default=15.0)
    v = sub.add_parser("verify", parents=[common], help="check every object against the Hub's metadata")
    v.add_argument("--repo", type=Repo.parse, required=True, metavar="REPO@REVISION=DEST")
    v.add_argument("--deep", action="store_true", help="reread every object and check its content hash")
    return p


def _log(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def _wait(a: argparse.Namespace, repos: list[Repo]) -> int:
    """Wait for every repository's marker; then, with ``--node-dir``, choose between the node copy and the bucket."""
    deadline = time.monotonic() + a.timeout
    for r in repos:
        store = store_for(r.dest)
        check_access(store, [split_uri(r.dest)[1]], False, a.auth_window, _log)
        if not wait_for_marker(store, r, max(0.0, deadline - time.monotonic()), a.interval):
            _log(f"timed out after {a.timeout:g} s waiting for {r.dest}/{marker_key(r.revision)}")
            return 1
    if a.node_dir and a.choice_file:
        write_choice(a.choice_file, choose(store_for(repos[0].dest), repos[0], a.node_dir))
    return 0


def _node_fill(a: argparse.Namespace, r: Repo) -> int:
    """Wait for the revision's marker, then the node copy (``node.node_copy``: nothing to do where the node holds the
    revision already); 1 when the wait timed out or the copy is not complete (the kubelet retries the container)."""
    store = store_for(r.dest)
    check_access(store, [split_uri(r.dest)[1]], False, a.auth_window, _log)
    if not wait_for_marker(store, r, a.timeout, a.interval):
        _log(f"timed out after {a.timeout:g} s waiting for {r.dest}/{marker_key(r.revision)}")
        return 1
    return 0 if node_copy(store, r, a.node_dir, _log) else 1


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
            return _wait(a, repos)
        if a.command == "node-fill":
            return _node_fill(a, repos[0])
        if a.command == "node-agent":
            store = store_for(repos[0].dest)
            check_access(store, [split_uri(repos[0].dest)[1]], True, a.auth_window, _log)
            caches = [{str(k): str(v) for k, v in parts.items()} for parts in a.cache]
            run(Agent(store, repos[0], a.node_dir, a.cache_dir, caches), a.interval)
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
