"""``k3infra status`` on the local control plane: the aws-eks stack's rendered objects applied for real, its pods
driven through each cold-start phase by patching their status as a kubelet would, and status run with a token
bound to nothing but the read-only role it declares.

The nodes are not kwok's: kwok's stages answer every pod change at once (Pending becomes Ready, a Job's running pod
Succeeded), so a phase could not be held. The test plays the kubelet for its nodes instead (heartbeats and pod
status through the status subresource); the scheduler, the Job controller and the node lifecycle controller are
the real ones.
"""

import io
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from typer.testing import CliRunner

from k3infra import cli, planning
from k3infra.catalog.transfer import SYNC_POOL_LABEL, SYNC_POOL_TAINT_KEY
from k3infra.render import apply_order
from k3infra.status import access, display
from k3infra.status.expected import Expected, expected
from k3infra.status.kube import Forbidden, Kube
from k3infra.status.lines import FAILED, OK, PROGRESS, Report
from k3infra.status.report import evaluate, observe

from .deploy import install_crds
from .local import BIN, LocalCluster

STACK = "aws-eks"
NS = "kimi-k3"
NOW = "2026-12-01T00:00:00Z"
GPU_NODE, SYSTEM_NODES = "gpu-0", ("system-0", "system-1")
SYNC_NODES = ("status-sync-0", "status-sync-1")
"""The sync pool's nodes (aws-eks syncs on a pool of its own, one worker a node): what its autoscaler would add.
Named apart from the GKE and AKS profiles' sync-N, which test_stacks creates in the same cluster."""
CPU_NODES = (*SYSTEM_NODES, *SYNC_NODES)


def _now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def apply(cluster: LocalCluster, objects: list[dict[str, Any]], check: bool = True):
    return cluster.kubectl("apply", "--server-side", "--force-conflicts", "-f", "-", check=check,
                           input=json.dumps({"apiVersion": "v1", "kind": "List", "items": objects}))


def get(cluster: LocalCluster, *args: str) -> dict[str, Any]:
    return json.loads(cluster.kubectl("get", *args, "-o", "json").stdout)


def patch_status(cluster: LocalCluster, what: str, status: dict[str, Any], ns: str | None = NS) -> None:
    cluster.kubectl("patch", what, *(["-n", ns] if ns else []), "--subresource=status", "--type=merge",
                    "-p", json.dumps({"status": status}))


def until(what: str, check, timeout: float = 60.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        got = check()
        if got:
            return got
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.3)


def node(name: str, labels: dict[str, str], taints: list[dict[str, str]], capacity: dict[str, str]) -> dict:
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
                                                  "kubernetes.io/arch": "amd64", **labels}},
            "spec": {"taints": taints}, "status": {"capacity": capacity, "allocatable": capacity}}


class Kubelet:
    """Heartbeats for the test's nodes (the node lifecycle controller marks a silent node NotReady after 50 s)."""

    def __init__(self, cluster: LocalCluster, names: list[str]) -> None:
        self.cluster, self.names = cluster, names

    def beat(self) -> None:
        for name in self.names:
            patch_status(self.cluster, f"node/{name}", {"conditions": [
                {"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "test kubelet",
                 "lastHeartbeatTime": _now(), "lastTransitionTime": NOW}]}, ns=None)


@pytest.fixture(scope="module")
def plan() -> planning.Plan:
    return planning.plan(STACK)


@pytest.fixture(scope="module")
def exp(plan: planning.Plan) -> Expected:
    return expected(plan)


@pytest.fixture(scope="module")
def cluster(local_cluster: LocalCluster, plan: planning.Plan) -> Iterator[LocalCluster]:
    """The stack's rendered objects (charts aside: their controllers do not run here) applied server-side, over the
    vendored CRDs (the Gateway API's among them: aws-eks puts an inference gateway in front); afterwards
    everything the module created is deleted, the nodes and cluster-scoped objects (a PersistentVolume) included:
    the session's cluster is shared with tests/cluster/test_stacks.py, whose profiles create nodes of the same names
    and apply the same PersistentVolume with a field manager of their own."""
    objects = [r.document for r in apply_order(plan.recording) if not r.chart]
    namespaces = [o for o in objects if o["kind"] == "Namespace"]
    # The walk starts from a cluster with no node: an earlier module on this worker deletes its nodes without
    # waiting, and one still there made the scheduler's first verdict "0/1 nodes are available: ..." (seen in CI).
    local_cluster.kubectl("delete", "nodes", "--all", "--wait=false", check=False)
    deadline = time.monotonic() + 120
    while (left := local_cluster.kubectl("get", "nodes", "-o", "name", check=False).stdout.split()):
        assert time.monotonic() < deadline, f"nodes still there after 120 s: {left}"
        time.sleep(1)
    install_crds(local_cluster)
    apply(local_cluster, namespaces)
    apply(local_cluster, [o for o in objects if o["kind"] != "Namespace"])
    try:
        yield local_cluster
    finally:
        # The module's nodes have no kubelet (no kwok annotation): a deleted pod stays Terminating until it is
        # force-deleted, and the Job controller makes new ones until the namespace is terminating. So: delete the
        # cluster-scoped objects and the namespace without waiting, then force the pods away until it is gone.
        scoped = [o for o in objects if "namespace" not in o.get("metadata", {})]
        local_cluster.kubectl("delete", "-f", "-", "--ignore-not-found", "--wait=false", check=False,
                              input=json.dumps({"apiVersion": "v1", "kind": "List", "items": scoped}))
        deadline = time.monotonic() + 180
        while local_cluster.kubectl("get", "namespace", NS, check=False).returncode == 0:
            assert time.monotonic() < deadline, f"namespace {NS} still there after 180 s"
            for name in local_cluster.kubectl("get", "pods", "-n", NS, "-o", "name", check=False).stdout.split():
                # a Job's pods keep the job-tracking finalizer until the Job controller sees them end
                local_cluster.kubectl("patch", name, "-n", NS, "--type=merge", "-p", '{"metadata":{"finalizers":null}}',
                                      check=False)
            local_cluster.kubectl("delete", "pods", "--all", "-n", NS, "--grace-period=0", "--force", "--wait=false",
                                  check=False, timeout=60)
            time.sleep(1)
        local_cluster.kubectl("delete", "node", GPU_NODE, *CPU_NODES, "--ignore-not-found", check=False)


SAMPLES_ENV = "K3INFRA_STATUS_SAMPLES"
"""A directory: each report the phase test takes is also written there as the table prints it (docs/deploying.md
shows them)."""


def report(cluster: LocalCluster, exp: Expected, kubeconfig: Path | None = None) -> Report:
    rep = evaluate(exp, observe(Kube.from_kubeconfig(kubeconfig or cluster.kubeconfig), exp),
                   datetime.now(timezone.utc))
    if os.environ.get(SAMPLES_ENV):
        console = Console(record=True, width=150, file=io.StringIO())
        console.print(display.table(rep))
        out = Path(os.environ[SAMPLES_ENV])
        out.mkdir(parents=True, exist_ok=True)
        (out / f"{len(list(out.glob('*.txt'))):02d}.txt").write_text(console.export_text())
    return rep


def line(rep: Report, section: str, name: str | None = None):
    found = [ln for ln in rep.lines if ln.section == section and (name is None or ln.name == name)]
    assert found, (section, name, rep.lines)
    return found[0]


def pods(cluster: LocalCluster, selector: str) -> list[dict[str, Any]]:
    return sorted(get(cluster, "pods", "-n", NS, "-l", selector)["items"], key=lambda p: p["metadata"]["name"])


def container(name: str, image: str, state: dict[str, Any], *, ready: bool = False, restarts: int = 0,
              last: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"name": name, "image": image, "imageID": "", "ready": ready, "restartCount": restarts,
            "started": "running" in state, "state": state, "lastState": last or {}}


def server_status(init: dict[str, Any], engine: dict[str, Any] | None, ready: bool = False) -> dict[str, Any]:
    init_done = "terminated" in init["state"]
    conditions = [{"type": "PodScheduled", "status": "True", "lastTransitionTime": NOW},
                  {"type": "Initialized", "status": str(init_done), "lastTransitionTime": _now()},
                  {"type": "ContainersReady", "status": str(ready), "lastTransitionTime": _now()},
                  {"type": "Ready", "status": str(ready), "lastTransitionTime": _now()}]
    return {"phase": "Running" if init_done else "Pending", "conditions": conditions, "hostIP": "10.0.0.1",
            "podIP": "10.244.0.10", "startTime": NOW, "initContainerStatuses": [init],
            "containerStatuses": [engine] if engine else []}


def test_status_through_a_cold_start(cluster: LocalCluster, exp: Expected, plan: planning.Plan, tmp_path: Path,
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """One test walks the phases in order, each step starting from the cluster the previous one left (pytest-xdist
    would otherwise spread steps over workers, each with a cluster of its own): every phase reported, then the same
    report through the read-only role, then the live display in a terminal."""
    each_phase_of_the_cold_start(cluster, exp, plan)
    the_read_only_role_reads_the_same(cluster, exp, plan, tmp_path, monkeypatch)
    if shutil.which("tmux") is None:
        pytest.skip("tmux is not installed: the live display is not checked (every other step passed)")
    watch_draws_live_frames_in_a_terminal(cluster, exp, tmp_path)


def each_phase_of_the_cold_start(cluster: LocalCluster, exp: Expected, plan: planning.Plan) -> None:
    # Nothing has joined: the GPU pool waits for capacity, the server's pod for a node (the scheduler says why).
    server = f"app.kubernetes.io/instance={exp.server_name}"
    until("the server pod", lambda: pods(cluster, server))
    until("the scheduler's verdict", lambda: any(
        c.get("reason") == "Unschedulable" for c in pods(cluster, server)[0]["status"].get("conditions", [])))
    rep = report(cluster, exp)
    assert rep.state == PROGRESS and rep.exit_code == 3
    assert (line(rep, "nodes", "gpu").phase, line(rep, "nodes", "gpu").detail) == (
        "waiting for capacity", "1 wanted, 0 joined, 0 ready")
    srv = line(rep, "server", "group 0 rank 0")
    assert srv.phase == "waiting for a node" and srv.detail == "no nodes available to schedule pods"

    # The nodes join (an 8-GPU node in the k3-gpu pool, two system nodes, the sync pool's two); the scheduler places
    # every pod.
    gpu_capacity = {"cpu": "192", "memory": "4000Gi", "pods": "110", "nvidia.com/gpu": "8"}
    system_capacity = {"cpu": "16", "memory": "64Gi", "pods": "110"}
    apply(cluster, [node(GPU_NODE, {"k3infra.io/pool": "k3-gpu"},
                         [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}], gpu_capacity),
                    *(node(n, {}, [], system_capacity) for n in SYSTEM_NODES),
                    *(node(n, {SYNC_POOL_LABEL: "sync"}, [{"key": SYNC_POOL_TAINT_KEY, "effect": "NoSchedule"}],
                           system_capacity) for n in SYNC_NODES)])
    kubelet = Kubelet(cluster, [GPU_NODE, *CPU_NODES])
    kubelet.beat()
    sync = "batch.kubernetes.io/job-name=k3-sync"
    until("every pod placed", lambda: (ps := pods(cluster, server) + pods(cluster, sync)) and len(ps) == 1 + 2
          and all(p["spec"].get("nodeName") for p in ps), timeout=90)
    (srv_pod,) = pods(cluster, server)
    assert srv_pod["spec"]["nodeName"] == GPU_NODE
    engine_image = srv_pod["spec"]["containers"][0]["image"]
    name = srv_pod["metadata"]["name"]

    # The copy runs on the system nodes; the server's init container waits for its completion marker.
    for p in pods(cluster, sync):
        patch_status(cluster, f"pod/{p['metadata']['name']}", {
            "phase": "Running", "startTime": NOW, "conditions": [{"type": "Ready", "status": "True"}],
            "containerStatuses": [container("copy", "python", {"running": {"startedAt": _now()}}, ready=True)]})
    waiting = container("wait-for-weights", engine_image, {"running": {"startedAt": _now()}})
    patch_status(cluster, f"pod/{name}", server_status(waiting, container(
        "engine", engine_image, {"waiting": {"reason": "PodInitializing"}})))
    until("the Job's active count", lambda: get(cluster, "job", "k3-sync", "-n", NS)["status"].get("active") == 2)
    rep = report(cluster, exp)
    assert [(ln.section, ln.name, ln.state, ln.phase) for ln in rep.lines] == [
        ("nodes", "gpu", OK, "ready"), ("nodes", "system", OK, "ready"),
        ("weights", "k3-sync", PROGRESS, "running"),
        ("server", "group 0 rank 0", PROGRESS, "waiting for weights"),
        ("verify", "k3-verify", PROGRESS, "starting"),
        ("endpoint", "k3-server", PROGRESS, "not ready"), ("endpoint", "k3-gateway", PROGRESS, "not programmed")]
    assert line(rep, "weights").detail == "0 of 2 succeeded, 2 running, 0 failed"
    assert line(rep, "weights").budget_seconds == exp.sync.budget_seconds == 1140  # the sync pool: 19 min
    assert line(rep, "server").extra["markerGate"] == "waiting"
    assert line(rep, "server").budget_seconds == exp.weights_budget_seconds

    # The copy finishes (the real Job controller marks the Job Complete); the marker gate opens; the image pulls.
    for p in pods(cluster, sync):
        patch_status(cluster, f"pod/{p['metadata']['name']}", {
            "phase": "Succeeded", "conditions": [{"type": "Ready", "status": "False"}],
            "containerStatuses": [container("copy", "python", {"terminated": {
                "exitCode": 0, "reason": "Completed", "startedAt": NOW, "finishedAt": _now()}})]})
    done = container("wait-for-weights", engine_image, {"terminated": {
        "exitCode": 0, "reason": "Completed", "startedAt": NOW, "finishedAt": _now()}})
    patch_status(cluster, f"pod/{name}", server_status(done, container(
        "engine", engine_image, {"waiting": {"reason": "ContainerCreating"}})))
    until("the sync Job complete", lambda: any(c["type"] == "Complete" for c in get(
        cluster, "job", "k3-sync", "-n", NS)["status"].get("conditions", [])), timeout=60)
    kubelet.beat()
    rep = report(cluster, exp)
    assert (line(rep, "weights").state, line(rep, "weights").detail) == (OK, "2 of 2 succeeded, 0 running, 0 failed")
    srv = line(rep, "server")
    assert (srv.phase, srv.extra["markerGate"], srv.budget_seconds) == ("pulling the image", "passed", 300)

    # Loading: started, not ready, against the start-up probe's budget from the sizing.
    patch_status(cluster, f"pod/{name}", server_status(done, container(
        "engine", engine_image, {"running": {"startedAt": _now()}})))
    srv = line(report(cluster, exp), "server")
    assert (srv.phase, srv.state, srv.budget_seconds) == ("loading", PROGRESS, exp.load_budget_seconds)

    # A crash loop: the rank is named with its restart count and last termination reason; exit 1.
    patch_status(cluster, f"pod/{name}", server_status(done, container(
        "engine", engine_image, {"waiting": {"reason": "CrashLoopBackOff", "message": "back-off 40s"}}, restarts=3,
        last={"terminated": {"exitCode": 137, "reason": "OOMKilled", "startedAt": NOW, "finishedAt": _now()}})))
    rep = report(cluster, exp)
    srv = line(rep, "server")
    assert (rep.exit_code, srv.state, srv.phase) == (1, FAILED, "restarting")
    assert srv.extra["restartCount"] == 3 and srv.extra["lastTerminationReason"] == "OOMKilled"
    assert f"kubectl logs -n {NS} pod/{name} -c engine --previous" in rep.summary
    assert rep.summary.startswith("server group 0 rank 0: restarting (3 restart(s), last terminated OOMKilled")
    # The planted mistake: the same restarts with the engine running again is loading, not a failure.
    patch_status(cluster, f"pod/{name}", server_status(done, container(
        "engine", engine_image, {"running": {"startedAt": _now()}}, restarts=3,
        last={"terminated": {"exitCode": 137, "reason": "OOMKilled", "startedAt": NOW, "finishedAt": _now()}})))
    assert line(report(cluster, exp), "server").phase == "loading"

    # Ready; the verify Job fails twice (backoffLimit 1): the real Job controller fails it, status says where.
    patch_status(cluster, f"pod/{name}", server_status(done, container(
        "engine", engine_image, {"running": {"startedAt": NOW}}, ready=True), ready=True))
    verify = "batch.kubernetes.io/job-name=k3-verify"
    for attempt in (1, 2):
        p = until(f"verify pod {attempt}", lambda: [p for p in pods(cluster, verify) if p["spec"].get("nodeName")
                                                    and p["status"].get("phase") == "Pending"], timeout=60)[0]
        if attempt == 1:  # the planted mistake: one failure of two allowed is not yet a failed Job
            assert report(cluster, exp).state == PROGRESS
        patch_status(cluster, f"pod/{p['metadata']['name']}", {"phase": "Failed", "containerStatuses": [
            container("checklist", engine_image, {"terminated": {"exitCode": 1, "reason": "Error",
                                                                 "startedAt": NOW, "finishedAt": _now()}})]})
    until("the verify Job failed", lambda: any(c["type"] == "Failed" for c in get(
        cluster, "job", "k3-verify", "-n", NS)["status"].get("conditions", [])), timeout=60)
    kubelet.beat()
    rep = report(cluster, exp)
    ver = line(rep, "verify")
    assert (rep.exit_code, ver.state, ver.extra["failed"]) == (1, FAILED, 2)
    assert ver.detail.startswith("BackoffLimitExceeded: Job has reached the specified backoff limit")
    assert ver.look.startswith(f"kubectl logs -n {NS} pod/k3-verify-")
    assert line(rep, "server").state == OK

    # The verify Job run again passes: serving, exit 0, the endpoint's in-cluster address.
    cluster.kubectl("delete", "job", "k3-verify", "-n", NS, "--cascade=foreground", "--wait=true")
    apply(cluster, [next(r.document for r in apply_order(plan.recording)
                         if r.document.get("kind") == "Job" and r.name == "k3-verify")])
    p = until("verify pod", lambda: [p for p in pods(cluster, verify) if p["spec"].get("nodeName")])[0]
    patch_status(cluster, f"pod/{p['metadata']['name']}", {"phase": "Succeeded", "containerStatuses": [
        container("checklist", engine_image, {"terminated": {"exitCode": 0, "reason": "Completed",
                                                             "startedAt": NOW, "finishedAt": _now()}})]})
    until("the verify Job complete", lambda: any(c["type"] == "Complete" for c in get(
        cluster, "job", "k3-verify", "-n", NS)["status"].get("conditions", [])), timeout=60)
    kubelet.beat()
    rep = report(cluster, exp)
    # The server serves, but no gateway controller runs here: the Gateway is not Programmed, so the address clients
    # use does not serve yet.
    assert (rep.state, rep.exit_code, rep.summary) == (PROGRESS, 3, "in progress: endpoint k3-gateway not programmed")
    assert line(rep, "endpoint", "k3-server").state == OK
    gw = line(rep, "endpoint", "k3-gateway")
    # The condition is the CRD's default (schemas/crds/gateway-api-gateways.yaml), which the apiserver fills in.
    assert gw.detail == (f"http://k3-gateway.{NS}.svc/v1 (Gateway, class agentgateway, its address not assigned "
                         "yet: in-cluster name; Programmed Unknown: Pending: Waiting for controller)")
    assert gw.look == f"kubectl describe gateway -n {NS} k3-gateway"

    # The controller programs the Gateway and reports its address (as agentgateway does from its proxy Service).
    programmed = [gateway_condition(t) for t in ("Accepted", "Programmed")]
    patch_status(cluster, "gateway/k3-gateway", {"addresses": [{"type": "IPAddress", "value": "10.0.0.50"}],
                                                 "conditions": programmed})
    kubelet.beat()
    rep = report(cluster, exp)
    assert (rep.state, rep.exit_code, rep.summary) == (OK, 0, "serving"), rep.to_json()
    assert line(rep, "endpoint", "k3-server").extra["url"] == f"http://k3-server.{NS}.svc:8000"
    gw = line(rep, "endpoint", "k3-gateway")
    assert (gw.state, gw.phase, gw.detail, gw.look) == (OK, "serving", "http://10.0.0.50/v1 (Gateway, class "
                                                        "agentgateway)", "")


def gateway_condition(kind: str) -> dict[str, Any]:
    """A Gateway condition as a controller sets it (metav1.Condition: every field the CRD requires)."""
    return {"type": kind, "status": "True", "reason": kind, "message": "test controller", "observedGeneration": 1,
            "lastTransitionTime": _now()}


def token_kubeconfig(cluster: LocalCluster, path: Path, sa: str, ns: str = "default") -> Path:
    """A kubeconfig whose only credential is a service account token (``kubectl create token``)."""
    admin = json.loads(cluster.kubectl("config", "view", "--raw", "-o", "json").stdout)
    token = cluster.kubectl("create", "token", sa, "-n", ns, "--duration=1h").stdout.strip()
    path.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "reader",
        "clusters": [{"name": "local", "cluster": admin["clusters"][0]["cluster"]}],
        "users": [{"name": sa, "user": {"token": token}}],
        "contexts": [{"name": "reader", "context": {"cluster": "local", "user": sa}}]}))
    return path


def bind(cluster: LocalCluster, roles: list[dict[str, Any]], sa: str) -> None:
    """The roles and bindings of ``sa`` (in default) to them: the ClusterRole cluster-wide, the Role in its
    namespace."""
    subject = [{"kind": "ServiceAccount", "name": sa, "namespace": "default"}]
    bindings = []
    for r in roles:
        kind = "ClusterRoleBinding" if r["kind"] == "ClusterRole" else "RoleBinding"
        meta = {"name": f"{sa}-{r['metadata']['name']}",
                **({"namespace": r["metadata"]["namespace"]} if kind == "RoleBinding" else {})}
        bindings.append({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": kind, "metadata": meta,
                         "subjects": subject, "roleRef": {"apiGroup": "rbac.authorization.k8s.io",
                                                          "kind": r["kind"], "name": r["metadata"]["name"]}})
    apply(cluster, [{"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": sa, "namespace": "default"}},
                    *roles, *bindings])


def without_times(doc: dict[str, Any]) -> dict[str, Any]:
    return doc | {"lines": [{k: v for k, v in ln.items() if k != "phaseSeconds"} for ln in doc["lines"]]}


def the_read_only_role_reads_the_same(cluster: LocalCluster, exp: Expected, plan: planning.Plan, tmp_path: Path,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cli.planning, "plan", lambda *a, **k: plan)  # one plan for every run (20 s each)
    runner = CliRunner()
    roles = access.roles(exp)
    bind(cluster, roles, "status-reader")
    reader = token_kubeconfig(cluster, tmp_path / "reader.kubeconfig", "status-reader")
    # The token alone can read nothing else: not a Secret, not a Deployment, not pods elsewhere.
    for verb in (["get", "secrets", "-n", NS], ["get", "deployments", "-n", NS], ["get", "pods", "-n", "default"]):
        denied = subprocess.run([str(BIN / "kubectl"), "--kubeconfig", str(reader), *verb], capture_output=True,
                                text=True, timeout=30)
        assert denied.returncode == 1 and "Forbidden" in denied.stderr, denied

    runs = {}
    for who, kubeconfig in (("admin", cluster.kubeconfig), ("reader", reader)):
        result = runner.invoke(cli.app, ["status", STACK, "--kubeconfig", str(kubeconfig), "--format", "json"])
        runs[who] = result
        assert result.exit_code == json.loads(result.stdout)["exitCode"], result.stdout
    admin, bound = (json.loads(runs[w].stdout) for w in ("admin", "reader"))
    # Stable JSON: sorted keys, and the same report with the role as with admin (only phaseSeconds moves).
    assert runs["reader"].stdout == json.dumps(bound, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    assert without_times(admin) == without_times(bound)
    assert (bound["state"], bound["exitCode"], bound["summary"]) == ("ok", 0, "serving")
    # The command's first line is the capacity's (the Capacity Block, not readable without AWS credentials).
    assert [ln["section"] for ln in bound["lines"]] == ["capacity", "nodes", "nodes", "weights", "server", "verify",
                                                        "endpoint", "endpoint"]
    # The planted mistakes: the Role without its Services rule, or its Gateway rule; status fails, naming the read
    # it was refused.
    for resource, refused in (("services", 'services "k3-server" is forbidden'),
                              ("gateways", 'gateways.gateway.networking.k8s.io "k3-gateway" is forbidden')):
        sa = f"status-lacking-{resource}"
        lacking = [roles[0], {**roles[1], "metadata": {**roles[1]["metadata"], "name": f"k3-status-lacking-{resource}"},
                              "rules": [r for r in roles[1]["rules"] if r["resources"] != [resource]]}]
        bind(cluster, lacking, sa)
        result = runner.invoke(cli.app, ["status", STACK, "--kubeconfig",
                                         str(token_kubeconfig(cluster, tmp_path / sa, sa))])
        assert result.exit_code == 1
        assert refused in result.stderr, result.stderr
        with pytest.raises(Forbidden):
            observe(Kube.from_kubeconfig(tmp_path / sa), exp)


def watch_draws_live_frames_in_a_terminal(cluster: LocalCluster, exp: Expected, tmp_path: Path) -> None:
    (srv_pod,) = pods(cluster, f"app.kubernetes.io/instance={exp.server_name}")
    name, image = srv_pod["metadata"]["name"], srv_pod["spec"]["containers"][0]["image"]
    done = container("wait-for-weights", image, {"terminated": {
        "exitCode": 0, "reason": "Completed", "startedAt": NOW, "finishedAt": NOW}})
    patch_status(cluster, f"pod/{name}", server_status(done, container(
        "engine", image, {"running": {"startedAt": _now()}})))
    kubelet = Kubelet(cluster, [GPU_NODE, *CPU_NODES])
    k3infra = Path(sys.executable).parent / "k3infra"  # the environment's console script
    socket, session = str(tmp_path / "tmux.sock"), "status"
    command = (f"env -u COLUMNS -u LINES {k3infra} status {STACK} --kubeconfig {cluster.kubeconfig} --watch --timeout 240; "
               f"echo EXIT=$?; sleep 600")

    def tmux(*args: str) -> str:
        return subprocess.run(["tmux", "-S", socket, *args], capture_output=True, text=True, check=True,
                              timeout=30).stdout

    tmux("new-session", "-d", "-s", session, "-x", "200", "-y", "40", command)
    try:
        screens = [""]

        def frame(text: str) -> str:
            kubelet.beat()  # the nodes stay Ready while the command plans and draws
            screens[0] = tmux("capture-pane", "-p", "-t", session)
            return screens[0] if text in screens[0] else ""

        try:
            loading = until("a live frame with the rank loading",
                            lambda: frame("in progress: server group 0 rank 0 loading"), timeout=180)
        except AssertionError as e:
            raise AssertionError(f"{e}; the screen:\n{screens[0]}") from None
        assert "k3infra status aws-eks (namespace kimi-k3)" in loading
        assert "started, not ready (start-up probe)" in loading and f"/ {display.duration(exp.load_budget_seconds)}" \
            in loading
        # The rank becomes ready: the same display refreshes to serving and the command exits 0.
        patch_status(cluster, f"pod/{name}", server_status(done, container(
            "engine", image, {"running": {"startedAt": NOW}}, ready=True), ready=True))
        final = until("the serving frame and the exit code", lambda: frame("EXIT=0"), timeout=60)
        assert "ok: serving" in final and "loading" not in final
        # The planted mistake: a frame for a phase that never happened is not on the screen.
        assert not frame("waiting for weights")
    finally:
        subprocess.run(["tmux", "-S", socket, "kill-server"], capture_output=True, timeout=30)
