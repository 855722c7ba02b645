"""``k3infra status`` and the weight copy's progress objects: where the plan's sync Job says they are, read from a
local S3 (moto) the way the copier writes them, summed into the weights line with the time left, and a worker that
has uploaded nothing for ten minutes flagged as stalled (no cluster needed)."""

import json
import os
import socket
import time
from datetime import datetime, timedelta, timezone
from typing import Any, Iterator

import pytest

from k3infra import planning
from k3infra.status import copy_progress
from k3infra.status.copy_progress import CopyProgress, ProgressRef
from k3infra.status.expected import expected
from k3infra.status.lines import FAILED, PROGRESS
from k3infra.status.report import Snapshot, evaluate, sync_running
from k3infra.weightcopy.copier.plan import RepoFile
from k3infra.weightcopy.copier.progress import Progress, ProgressWriter
from k3infra.weightcopy.copier.stores import open_store
from tests.weightcopy.servers import s3_server

GB = 10**9
NOW = datetime(2026, 12, 1, 1, 0, tzinfo=timezone.utc)


@pytest.fixture(scope="module")
def s3() -> Iterator[Any]:
    with s3_server() as s:
        yield s


@pytest.fixture(scope="module")
def gcp():
    return expected(planning.plan("gcp-a4xmax"))


def _at(t: datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def _doc(worker: int, verified: int, total: int, rate: float, quiet: timedelta, state: str = "copying",
         files: tuple[int, int] = (1, 4), in_flight: int = 0, now: datetime = NOW) -> dict[str, Any]:
    return {"worker": worker, "workers": 2, "state": state, "bytesVerified": verified, "bytesInFlight": in_flight,
            "bytesTotal": total, "filesDone": files[0], "filesFailed": 0, "filesTotal": files[1],
            "bytesPerSecond": rate, "rateWindowSeconds": 60, "startedAt": _at(now - timedelta(hours=1)),
            "progressAt": _at(now - quiet), "updatedAt": _at(now - timedelta(seconds=3))}


def _job(running: dict[int, datetime], now: datetime = NOW) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    job = {"metadata": {"name": "k3-sync"},
           "status": {"active": len(running), "startTime": _at(min(running.values(), default=now))}}
    pods = [{"metadata": {"name": f"k3-sync-{i}-x", "labels": {"batch.kubernetes.io/job-completion-index": str(i)}},
             "status": {"phase": "Running", "startTime": _at(t)}} for i, t in running.items()]
    return job, pods


def _within_budget(gcp, now: datetime) -> datetime:
    """A start a minute short of the sync's budget: a pod running since then is neither new nor over budget."""
    assert gcp.sync.budget_seconds > 12 * 60  # room for an 11-minute quiet worker
    return now - timedelta(seconds=gcp.sync.budget_seconds - 60)


def _weights(gcp, progress: CopyProgress, running: dict[int, datetime]):
    job, pods = _job(running)
    snap = Snapshot(nodes=[], gpu_nodes=[], server_pods=[], job_pods={"k3-sync": pods}, jobs={"k3-sync": job},
                    services={}, copy_progress=progress)
    return next(line for line in evaluate(gcp, snap, NOW).lines if line.section == "weights")


def test_the_sync_jobs_progress_objects_are_found_from_the_plan(gcp) -> None:
    assert gcp.sync_progress == ProgressRef(uri="gs://my-project-kimi-k3-weights/models/moonshotai/Kimi-K3",
                                            revision="main", workers=2, store_env={})
    assert gcp.sync_progress.key(1) == "my-project-kimi-k3-weights/models/moonshotai/Kimi-K3/.k3infra/" \
                                       "progress-main-worker-1.json"
    # The store's settings travel with it: an S3-compatible store's endpoint, Azure's account.
    assert json.loads(expected(planning.plan("kubernetes-b300")).sync_progress.store_env["K3_COPY_STORAGE_OPTIONS"]
                      )["endpoint_url"] == "http://minio.minio.svc.cluster.local:9000"
    assert expected(planning.plan("azure-gb300")).sync_progress.store_env == {
        "AZURE_STORAGE_ACCOUNT_NAME": "myorgk3weights"}


def test_status_reads_what_the_copier_wrote_from_the_bucket(s3: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    bucket = s3.bucket()
    ref = ProgressRef(uri=f"s3://{bucket}/models/org/m", revision="refs/pr/1", workers=2,
                      store_env={"K3_COPY_STORAGE_OPTIONS": json.dumps(s3.options())})
    monkeypatch.delenv("K3_COPY_STORAGE_OPTIONS", raising=False)
    # A generous timeout: the first read imports s3fs, on a loaded machine.
    assert copy_progress.observe(ref, timeout=120) == CopyProgress((None, None))
    files = [RepoFile("org/m", f"w{i}.safetensors", 3 * GB, "0" * 64, "0" * 40) for i in range(3)]
    progress = Progress(0, 2, files)
    store = open_store("s3", s3.options())
    with ProgressWriter(store, ref.key(0), progress, 3600, log=lambda _: None):
        progress.verified(files[0], 0)
        progress.part(GB)
    got = copy_progress.observe(ref, timeout=120)
    assert got.workers[1] is None and got.workers[0] is not None
    assert {k: got.workers[0][k] for k in ("worker", "workers", "state", "bytesVerified", "bytesInFlight",
                                           "bytesTotal", "filesDone", "filesTotal")} == {
        "worker": 0, "workers": 2, "state": "done", "bytesVerified": 3 * GB, "bytesInFlight": GB,
        "bytesTotal": 9 * GB, "filesDone": 1, "filesTotal": 3}
    # The store's settings were lent for the read only.
    assert "K3_COPY_STORAGE_OPTIONS" not in os.environ


def test_a_bucket_status_cannot_read_is_said_and_the_jobs_line_stands(gcp) -> None:
    unreadable = copy_progress.observe(ProgressRef(uri="nope://b/m", revision="main", workers=2))
    assert unreadable.error.startswith("ValueError: no object store for scheme 'nope'")
    line = _weights(gcp, unreadable, {0: _within_budget(gcp, NOW)})
    assert line.state == PROGRESS and "progress not readable from here (ValueError" in line.detail


def test_a_bucket_that_does_not_answer_is_given_up_on_within_the_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.create_server(("127.0.0.1", 0)) as silent:  # accepts, never answers
        options = {"endpoint_url": f"http://127.0.0.1:{silent.getsockname()[1]}", "key": "k", "secret": "s"}
        ref = ProgressRef(uri="s3://b/m", revision="main", workers=1,
                          store_env={"K3_COPY_STORAGE_OPTIONS": json.dumps(options)})
        monkeypatch.delenv("K3_COPY_STORAGE_OPTIONS", raising=False)
        started = time.monotonic()
        got = copy_progress.observe(ref, timeout=1.0)
        assert time.monotonic() - started < 3
    assert got == CopyProgress(error="no answer from s3://b/m within 1 s")


def test_status_reads_progress_only_while_the_sync_runs(gcp) -> None:
    job, _ = _job({0: NOW})
    snap = Snapshot(nodes=[], gpu_nodes=[], server_pods=[], job_pods={}, jobs={"k3-sync": job}, services={})
    assert sync_running(gcp, snap)
    job["status"]["conditions"] = [{"type": "Complete", "status": "True"}]
    assert not sync_running(gcp, snap)
    assert not sync_running(gcp, Snapshot(nodes=[], gpu_nodes=[], server_pods=[], job_pods={}, jobs={}, services={}))


def test_the_weights_line_sums_the_workers_and_gives_the_slowest_ones_time_left(gcp) -> None:
    docs = (_doc(0, 600 * GB, 800 * GB, 0.5 * GB, timedelta(seconds=2), files=(30, 40)),
            _doc(1, 500 * GB, 760 * GB, 0.25 * GB, timedelta(seconds=4), files=(25, 38), in_flight=10 * GB))
    line = _weights(gcp, CopyProgress(docs), {0: _within_budget(gcp, NOW), 1: _within_budget(gcp, NOW)})
    assert line.state == PROGRESS and line.phase == "running"
    # Worker 1 has 250 GB left at 0.25 GB/s: 1000 s, the copy's time left.
    assert line.detail.endswith("; 1,100.0 GB of 1,560.0 GB verified (71%), 55 of 78 files, 6.00 Gbps over the last "
                                "minute, about 16 min left")
    assert {k: v for k, v in line.extra["copyProgress"].items() if k != "workers"} == {
        "bytesVerified": 1100 * GB, "bytesTotal": 1560 * GB, "filesDone": 55, "filesTotal": 78,
        "bytesPerSecond": 0.75 * GB, "secondsLeft": 1000, "stalledWorkers": []}


def test_a_worker_quiet_for_ten_minutes_is_flagged_as_stalled(gcp) -> None:
    started = _within_budget(gcp, NOW)  # long enough for a stall, short of the sync's budget (not "over budget")
    quiet = (_doc(0, 600 * GB, 800 * GB, 0.0, timedelta(minutes=11)),
             _doc(1, 500 * GB, 760 * GB, 0.3 * GB, timedelta(seconds=4)))
    line = _weights(gcp, CopyProgress(quiet), {0: started, 1: started})
    assert (line.state, line.phase) == (FAILED, "stalled")
    assert line.detail.startswith("nothing uploaded (worker 0 for 11 min; stalled after 10 min); ")
    assert line.look == "kubectl logs -n kimi-k3 job/k3-sync"
    assert line.extra["copyProgress"]["stalledWorkers"] == [0]
    # Nine minutes is no stall; a pod that restarted five minutes ago is timed from its start, not from the
    # object its predecessor left; a worker whose pod is not running is the Job's counts' to tell.
    nine = CopyProgress((_doc(0, 1, 2, 0.0, timedelta(minutes=9)), None))
    assert _weights(gcp, nine, {0: started}).state == PROGRESS
    assert _weights(gcp, CopyProgress(quiet), {0: NOW - timedelta(minutes=5), 1: started}).state == PROGRESS
    assert _weights(gcp, CopyProgress(quiet), {1: started}).state == PROGRESS
    # A finished worker is never stalled.
    done = (_doc(0, 800 * GB, 800 * GB, 0.0, timedelta(hours=1), state="done"), quiet[1])
    assert _weights(gcp, CopyProgress(done), {0: started, 1: started}).state == PROGRESS


def test_the_status_command_flags_the_stall_it_reads(gcp, monkeypatch: pytest.MonkeyPatch) -> None:
    from typer.testing import CliRunner

    from k3infra import cli
    from k3infra.status import report
    from k3infra.status.kube import Kube

    now = datetime.now(timezone.utc)
    job, pods = _job({0: _within_budget(gcp, now), 1: _within_budget(gcp, now)}, now)
    snap = Snapshot(nodes=[], gpu_nodes=[], server_pods=[], job_pods={"k3-sync": pods}, jobs={"k3-sync": job},
                    services={})
    reads: list[ProgressRef] = []
    monkeypatch.setattr(Kube, "from_kubeconfig", classmethod(lambda cls, path, context=None: None))
    monkeypatch.setattr(report, "observe", lambda kube, exp: snap)
    monkeypatch.setattr(copy_progress, "observe", lambda ref: reads.append(ref) or CopyProgress(
        (_doc(0, GB, 2 * GB, 0.0, timedelta(minutes=10), now=now), _doc(1, GB, 2 * GB, GB, timedelta(0), now=now))))
    result = CliRunner().invoke(cli.app, ["status", "gcp-a4xmax", "--kubeconfig", "/dev/null", "--format", "json"])
    assert result.exit_code == 1, result.output
    weights = next(ln for ln in json.loads(result.output)["lines"] if ln["section"] == "weights")
    assert (weights["state"], weights["phase"]) == ("failed", "stalled")
    assert weights["copyProgress"]["stalledWorkers"] == [0]
    assert reads == [gcp.sync_progress]
