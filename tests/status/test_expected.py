"""What ``k3infra status`` looks at, from the stacks' own plans: the LeaderWorkerSet stack's groups and ranks, its
placement Job, the exact read-only role, and PAI-EAS, which has no Kubernetes role (no cluster needed)."""

import json
from datetime import datetime, timezone

import pytest
from typer.testing import CliRunner

from k3infra import cli
from k3infra.status import access
from k3infra.status.expected import expected
from k3infra.status.lines import FAILED, OK, Line
from k3infra.status.report import Snapshot, evaluate
from tests.support import plan


@pytest.fixture(scope="module")
def gcp():
    return expected(plan("gcp-a4xmax"))


def test_a_leaderworkerset_stack_has_groups_ranks_and_a_placement_check(gcp) -> None:
    assert (gcp.server_kind, gcp.server_name, gcp.groups, gcp.group_size) == ("LeaderWorkerSet", "k3-server-lws", 1, 2)
    assert gcp.gpu_node_selector["cloud.google.com/gke-accelerator"] == "nvidia-gb300"
    assert [j.name for j in (gcp.placement, gcp.sync, gcp.verify) if j] == ["k3-placement", "k3-sync", "k3-verify"]
    assert [(j.name, j.completions) for j in gcp.fabric] == [("k3-fabric-0", 2)]
    assert gcp.services == (("k3-server", 8000),)


def test_the_role_lists_exactly_what_status_reads(gcp) -> None:
    cluster_role, role = access.roles(gcp)
    assert cluster_role["rules"] == [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["list"]}]
    assert role["metadata"]["namespace"] == "kimi-k3"
    assert role["rules"] == [
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]},
        {"apiGroups": ["leaderworkerset.x-k8s.io"], "resources": ["leaderworkersets/scale"], "verbs": ["get"],
         "resourceNames": ["k3-server-lws"]},
        {"apiGroups": ["batch"], "resources": ["jobs"], "verbs": ["get"],
         "resourceNames": ["k3-fabric-0", "k3-placement", "k3-sync", "k3-verify"]},
        {"apiGroups": [""], "resources": ["services"], "verbs": ["get"], "resourceNames": ["k3-server"]},
        {"apiGroups": ["gateway.networking.k8s.io"], "resources": ["gateways"], "verbs": ["get"],
         "resourceNames": ["k3-gateway"]}]


def _rank(worker: str, engine_state: dict, restarts: int = 0, last: dict | None = None) -> dict:
    return {"metadata": {"name": f"k3-server-lws-0{'-' + worker if worker != '0' else ''}",
                         "labels": {"app.kubernetes.io/component": "model-server",
                                    "app.kubernetes.io/instance": "k3-server",
                                    "leaderworkerset.sigs.k8s.io/group-index": "0",
                                    "leaderworkerset.sigs.k8s.io/worker-index": worker}},
            "spec": {"nodeName": f"gpu-{worker}"},
            "status": {"phase": "Running", "conditions": [],
                       "initContainerStatuses": [{"name": "wait-for-weights", "restartCount": 0, "state": {
                           "terminated": {"exitCode": 0, "reason": "Completed"}}}],
                       "containerStatuses": [{"name": "engine", "ready": False, "restartCount": restarts,
                                              "state": engine_state, "lastState": last or {}}]}}


def test_a_crash_looping_worker_rank_is_named(gcp) -> None:
    started = {"running": {"startedAt": "2026-12-01T00:00:00Z"}}
    crash = {"waiting": {"reason": "CrashLoopBackOff"}}
    pods = [_rank("0", started), _rank("1", crash, 5, {"terminated": {"reason": "Error", "exitCode": 1}})]
    snap = Snapshot(nodes=[], gpu_nodes=[], server_pods=pods, job_pods={}, jobs={}, services={})
    rep = evaluate(gcp, snap, datetime(2026, 12, 1, 0, 10, tzinfo=timezone.utc))
    server = [ln for ln in rep.lines if ln.section == "server"]
    assert [(ln.name, ln.phase) for ln in server] == [("group 0 rank 0", "loading"), ("group 0 rank 1", "restarting")]
    assert server[0].phase_seconds == 600
    assert server[1].state == FAILED and server[1].extra["restartCount"] == 5
    assert "server group 0 rank 1: restarting (5 restart(s), last terminated Error (exit code 1), now " \
           "CrashLoopBackOff); look: kubectl logs -n kimi-k3 pod/k3-server-lws-0-1 -c engine --previous" in rep.summary
    # The planted mistake: the leader over its start-up budget fails too, with where to look.
    late = evaluate(gcp, snap, datetime(2026, 12, 2, tzinfo=timezone.utc))
    assert [ln.phase for ln in late.lines if ln.section == "server" and ln.state == FAILED] == ["loading", "restarting"]


def test_the_ranks_follow_the_live_replica_count(gcp) -> None:
    """A scaler moves the LeaderWorkerSet's replicas past the plan's minimum: status counts the live groups' ranks
    (read from its /scale), and falls back to the plan's when the scale was not read."""
    started = {"running": {"startedAt": "2026-12-01T00:00:00Z"}}
    pods = [_rank("0", started), _rank("1", started)]
    now = datetime(2026, 12, 1, 0, 10, tzinfo=timezone.utc)
    creating = [(ln.phase, ln.detail) for ln in evaluate(gcp, Snapshot(
        nodes=[], gpu_nodes=[], server_pods=pods, server_replicas=3, job_pods={}, jobs={}, services={}), now).lines
        if ln.section == "server" and ln.phase == "creating"]
    assert creating == [("creating", "2 of 6 rank pods exist")]
    unread = evaluate(gcp, Snapshot(nodes=[], gpu_nodes=[], server_pods=pods, job_pods={}, jobs={}, services={}), now)
    assert [ln.phase for ln in unread.lines if ln.section == "server"] == ["loading", "loading"]


def test_status_reads_the_scale_of_every_kind_a_scaler_scales() -> None:
    from k3infra.serving.autoscaling import TARGETS
    from k3infra.serving.status_role import SCALE_RESOURCES

    assert set(SCALE_RESOURCES) == {kind for _, kind in TARGETS.values()}


def test_pai_has_no_kubernetes_role_to_print() -> None:
    result = CliRunner().invoke(cli.app, ["status", "alicloud-pai", "--print-role"])
    assert result.exit_code == 2
    assert result.stderr.strip() == ("error: stack alicloud-pai runs on PAI-EAS: no Kubernetes role to print; status "
                                     "reads EAS with a RAM identity allowed eas:DescribeService on the service")


def _check_pod(index: str, message: str | None) -> dict:
    terminated = {"exitCode": 0 if message and message.startswith("ok") else 1, "message": message} if message else None
    return {"metadata": {"name": f"k3-fabric-0-{index}-abcde", "labels": {
                "batch.kubernetes.io/job-name": "k3-fabric-0", "batch.kubernetes.io/job-completion-index": index}},
            "spec": {"nodeName": f"gpu-{index}"},
            "status": {"phase": "Failed" if terminated and terminated["exitCode"] else "Succeeded",
                       "containerStatuses": [{"name": "check", "state": {"terminated": terminated} if terminated
                                              else {"running": {}}}]}}


def test_the_fabric_check_line_shows_what_nccl_chose_and_the_bandwidth(gcp) -> None:
    """The leader's termination message (k3infra.fabric_probe.summary) becomes the line's detail."""
    report = ("FAILED tensor-parallel (all_reduce, 8 ranks): 21.3 GB/s of 900.0 expected (2%); via NET/Socket/0\n"
              "  - between nodes NET/Socket/0: NCCL used TCP sockets between nodes where the plan expects multi-node "
              "NVLink")
    job = {"status": {"startTime": "2026-12-01T00:00:00Z", "failed": 1, "conditions": [
        {"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded", "message": "Job has reached the "
         "specified backoff limit"}]}}
    snap = Snapshot(nodes=[], gpu_nodes=[], server_pods=[], jobs={"k3-fabric-0": job},
                    job_pods={"k3-fabric-0": [_check_pod("0", report), _check_pod("1", None)]}, services={})
    (line,) = [ln for ln in evaluate(gcp, snap, datetime(2026, 12, 1, 0, 5, tzinfo=timezone.utc)).lines
               if ln.section == "fabric"]
    assert (line.name, line.state, line.phase) == ("k3-fabric-0", FAILED, "failed")
    assert line.detail.endswith("; FAILED tensor-parallel (all_reduce, 8 ranks): 21.3 GB/s of 900.0 expected (2%); "
                                "via NET/Socket/0")
    assert line.extra["report"] == report


def test_once_the_check_pods_are_gone_the_line_reads_the_report_on_the_job(gcp) -> None:
    """The report the probe's leader patched into its Job (the stack output's source) stands in for the leader's
    termination message when the pods are gone; a malformed one is ignored."""
    path = {"path": "tensor-parallel", "collective": "all_reduce", "ranks": 8, "busbwGBs": 812.5, "fraction": 0.903,
            "expectedBusbwGBs": 900.0, "ok": True, "problems": [], "transport": {
                "betweenNodes": ["P2P/MNNVL/read"], "insideNodes": ["P2P/CUMEM/read"], "networks": []}}
    done = {"startTime": "2026-12-01T00:00:00Z", "completionTime": "2026-12-01T00:03:00Z", "succeeded": 2,
            "conditions": [{"type": "Complete", "status": "True"}]}

    def line_of(annotation: str) -> Line:
        job = {"metadata": {"annotations": {"k3infra.dev/fabric-check": annotation}}, "status": done}
        snap = Snapshot(nodes=[], gpu_nodes=[], server_pods=[], jobs={"k3-fabric-0": job},
                        job_pods={"k3-fabric-0": []}, services={})
        (line,) = [ln for ln in evaluate(gcp, snap, datetime(2026, 12, 1, 0, 5, tzinfo=timezone.utc)).lines
                   if ln.section == "fabric"]
        return line
    line = line_of(json.dumps({"status": "passed", "backend": "nccl", "paths": [path]}))
    assert (line.state, line.extra["report"]) == (OK, "ok tensor-parallel (all_reduce, 8 ranks): 812.5 GB/s of "
                                                      "900.0 expected (90%); via P2P/MNNVL/read")
    assert "report" not in line_of("{not json").extra
