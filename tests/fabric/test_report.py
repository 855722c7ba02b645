"""The stack output ``fabricCheck`` from a check Job's annotation (k3infra.serving.fabric_report): reports the probe
makes of recorded NCCL logs (a pass over gIB, a planted socket fallback), planted malformed annotations, a Job that
ended without a report, and before the Job exists; the worst group's status is the check's."""

import json
from typing import Any

import pytest

from k3infra import fabric_probe as probe
from k3infra.serving import fabric_report as fr
from tests.fabric.test_probe import facts, path

NS, JOB = "kimi-k3", "k3-fabric-0"
PLANNED = {"tensor-parallel": {"name": "tensor-parallel", "expect": "rdma", "expectedBusbwGBs": 400.0}}


def annotation(log: str, busbw: float, **extra: Any) -> dict[str, str]:
    """The annotation the probe's leader writes after judging ``log`` at ``busbw`` (``fabric_probe.main``)."""
    r = probe.judge(path(probe.RDMA), facts(log), busbw, gpus_per_node=8, threshold=0.5)
    report = {"backend": "nccl", "worldSize": 16, "bytes": 256 << 20, "iters": 20, "threshold": 0.5, "paths": [r]}
    return {"pulumi.com/timeoutSeconds": "2000",
            probe.ANNOTATION: json.dumps(probe.report_document(r["ok"], report) | extra, sort_keys=True)}


def out(annotations: dict[str, str] | None, state: str | None = "complete") -> dict[str, Any]:
    return fr.group_output(annotations, NS, JOB, state, PLANNED, 0.5)


def test_a_passing_report_shows_the_bandwidth_against_the_expected_figure_and_floor() -> None:
    assert out(annotation("ib-a4.log", 372.4)) == {
        "job": JOB, "status": "passed", "failed": [], "backend": "nccl", "paths": [{
            "name": "tensor-parallel", "collective": "all_reduce", "ranks": 16, "busbwGBs": 372.4,
            "expectedBusbwGBs": 400.0, "floorBusbwGBs": 200.0, "fraction": 0.931,
            "transport": {"betweenNodes": ["NET/gIB/0/GDRDMA", "NET/gIB/7/GDRDMA"], "insideNodes": ["P2P/CUMEM/read"],
                          "networks": ["gIB"]},
            "expectedTransport": "rdma", "status": "passed", "problems": []}]}


def test_a_planted_socket_fallback_is_failed_with_the_transport_and_the_cause() -> None:
    g = out(annotation("socket-fallback.log", 41.0))
    assert (g["status"], g["failed"]) == ("failed", ["tensor-parallel"])
    (p,) = g["paths"]
    assert (p["busbwGBs"], p["floorBusbwGBs"], p["transport"]["networks"], p["status"]) == (
        41.0, 200.0, ["Socket"], "failed")
    assert p["problems"][0].startswith("between nodes NET/Socket/0: NCCL fell back to TCP sockets")


@pytest.mark.parametrize(("raw", "why"), [
    ("FABRIC-CHECK-REPORT {", "annotation k3infra.dev/fabric-check of Job k3-fabric-0 is not the probe's report "
                              "(Expecting value: line 1 column 1 (char 0))"),
    (json.dumps({"status": "passed", "paths": []}), "(it has no list of paths)"),
    (json.dumps(["passed"]), "(it has no list of paths)"),
    (json.dumps({"status": "passed", "paths": [{"path": "tensor-parallel", "collective": "all_reduce", "ranks": 16,
                                               "busbwGBs": "fast", "fraction": 1.0, "ok": True, "problems": [],
                                               "transport": "gloo (no NCCL log)"}]}),
     "(path 0 lacks busbwGBs of the right type)"),
    (json.dumps({"paths": [{"path": "tensor-parallel", "collective": "all_reduce", "ranks": 16, "busbwGBs": 1.0,
                            "fraction": 1.0, "ok": True, "problems": []}]}), "(path 0 names no transport)"),
])
def test_a_planted_malformed_report_is_no_report_with_a_note(raw: str, why: str) -> None:
    g = out({probe.ANNOTATION: raw})
    assert set(g) == {"job", "status", "note"} and g["status"] == "no-report"
    assert why in g["note"]
    assert g["note"].endswith("read the result with `k3infra status <stack>` (its fabric line) or "
                              "`kubectl -n kimi-k3 logs job/k3-fabric-0`")


def test_a_job_that_ended_without_a_report_says_where_to_read_the_result() -> None:
    done = out({"pulumi.com/timeoutSeconds": "2000"}, "complete")
    assert done["status"] == "no-report"
    assert done["note"].startswith("Job k3-fabric-0 completed without writing its report into annotation "
                                   "k3infra.dev/fabric-check")
    assert out(None, "failed")["status"] == "failed"
    assert out({}, None)["status"] == "pending"  # preview and offline plans: the Job has not run


def test_the_check_is_as_bad_as_its_worst_group() -> None:
    def g(status: str) -> dict[str, str]:
        return {"status": status}
    assert fr.check_status([g("passed"), g("pending"), g("no-report")]) == "no-report"
    assert fr.check_status([g("no-report"), g("failed")]) == "failed"
    assert fr.check_status([g("passed"), g("passed")]) == "passed"
    assert fr.check_status([g("passed"), g("pending")]) == "pending"


def test_the_job_state_comes_from_its_conditions() -> None:
    assert fr.job_state({"conditions": [{"type": "Complete", "status": "True"}]}) == "complete"
    assert fr.job_state({"conditions": [{"type": "Failed", "status": "True"}]}) == "failed"
    assert fr.job_state({"active": 2}) is None and fr.job_state(None) is None
