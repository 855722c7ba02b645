"""The local cluster is what the stacks' tests need it to be: a real 1.35 control plane on loopback only, with a
managed cluster's admission (Pod Security, GKE's critical-pod quota), the LeaderWorkerSet webhooks called by the
apiserver and its controller reconciling, and kwok nodes on which pods run and Jobs complete. Every check is shown
to fail, in the same test, on the mistake it exists to catch."""

import json
import os
import re
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support import ROOT

from .local import KWOK_NODE_ANNOTATION, LocalCluster

NODE = "kwok-node-0"
NODE_TAINT = {"key": KWOK_NODE_ANNOTATION, "value": "fake", "effect": "NoSchedule"}
TOLERATION = {"key": KWOK_NODE_ANNOTATION, "operator": "Exists", "effect": "NoSchedule"}
IMAGE = "registry.k8s.io/pause:3.10"
"""Never pulled: kwok runs no containers."""


def apply(cluster: LocalCluster, *objects: dict, check: bool = True):
    """kubectl apply --server-side of the objects; the CompletedProcess (stderr says why the server refused)."""
    return cluster.kubectl("apply", "--server-side", "-f", "-", check=check,
                           input=json.dumps({"apiVersion": "v1", "kind": "List", "items": list(objects)}))


def get(cluster: LocalCluster, *args: str) -> dict:
    return json.loads(cluster.kubectl("get", *args, "-o", "json").stdout)


def wait_for(cluster: LocalCluster, what: str, *args: str, timeout: int = 60) -> None:
    cluster.kubectl("wait", what, *args, f"--timeout={timeout}s", timeout=timeout + 10)


def namespace(name: str, **labels: str) -> dict:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}}


def pod(name: str, ns: str, *, privileged: bool = False, restricted: bool = False, priority_class: str = "",
        node_selector: dict[str, str] | None = None) -> dict:
    container: dict = {"name": "main", "image": IMAGE}
    if privileged:
        container["securityContext"] = {"privileged": True}
    if restricted:
        container["securityContext"] = {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]},
                                        "runAsNonRoot": True, "runAsUser": 65532,
                                        "seccompProfile": {"type": "RuntimeDefault"}}
    spec: dict = {"containers": [container], "tolerations": [TOLERATION],
                  "nodeSelector": node_selector or {"kubernetes.io/hostname": NODE}}
    if priority_class:
        spec["priorityClassName"] = priority_class
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": ns}, "spec": spec}


@pytest.fixture(scope="module")
def cluster(local_cluster: LocalCluster) -> Iterator[LocalCluster]:
    """The session's cluster with one kwok node (32 CPUs, 256 GiB, tainted like a dedicated pool)."""
    node = {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": NODE, "annotations": {KWOK_NODE_ANNOTATION: "fake", "node.alpha.kubernetes.io/ttl": "0"},
                     "labels": {"kubernetes.io/hostname": NODE, "kubernetes.io/os": "linux",
                                "kubernetes.io/arch": "amd64", "type": "kwok"}},
        "spec": {"taints": [NODE_TAINT]},
        "status": {"capacity": {"cpu": "32", "memory": "256Gi", "pods": "110"},
                   "allocatable": {"cpu": "32", "memory": "256Gi", "pods": "110"}},
    }
    apply(local_cluster, node)
    wait_for(local_cluster, f"node/{NODE}", "--for=condition=Ready")
    yield local_cluster


def test_control_plane_is_the_pinned_release_with_dra(cluster: LocalCluster) -> None:
    version = json.loads(cluster.kubectl("version", "-o", "json").stdout)
    pinned = re.search(r"^require k8s\.io/kubernetes (v\S+)$",
                       (ROOT / "toolchain" / "kubernetes" / "go.mod").read_text(), re.M)
    assert pinned
    assert version["serverVersion"]["gitVersion"] == version["clientVersion"]["gitVersion"] == pinned.group(1)
    assert cluster.kubectl("get", "--raw", "/readyz").stdout == "ok"
    assert all(cluster.status().values()), cluster.status()
    # Dynamic Resource Allocation at its GA version (resource.k8s.io/v1, on by default from 1.34).
    resources = cluster.kubectl("api-resources", "--api-group=resource.k8s.io", "-o", "name").stdout.split()
    assert {"deviceclasses.resource.k8s.io", "resourceclaims.resource.k8s.io",
            "resourceslices.resource.k8s.io"} <= set(resources)
    assert "resource.k8s.io/v1" in cluster.kubectl("api-versions").stdout.split()
    # The admission chain a managed cluster runs, read back from the running apiserver's command line.
    (args,) = [Path(f"/proc/{cluster.status()['kube-apiserver']}/cmdline").read_bytes().split(b"\0")]
    plugins = next(a for a in args if a.startswith(b"--enable-admission-plugins=")).split(b"=", 1)[1].split(b",")
    assert {b"NodeRestriction", b"PodSecurity", b"ResourceQuota", b"Priority", b"DefaultTolerationSeconds",
            b"MutatingAdmissionWebhook", b"ValidatingAdmissionWebhook", b"ValidatingAdmissionPolicy"} <= set(plugins)


def test_pod_security_rejects_a_privileged_pod_in_a_restricted_namespace(cluster: LocalCluster) -> None:
    apply(cluster, namespace("psa-restricted", **{"pod-security.kubernetes.io/enforce": "restricted"}),
          namespace("psa-unlabelled"))
    refused = apply(cluster, pod("privileged", "psa-restricted", privileged=True), check=False)
    assert refused.returncode != 0
    assert 'violates PodSecurity "restricted:latest": privileged' in refused.stderr
    apply(cluster, pod("restricted", "psa-restricted", restricted=True))
    # The planted mistake: without the namespace's label, the same pod is admitted (the label is what refuses it).
    apply(cluster, pod("privileged", "psa-unlabelled", privileged=True))


def test_critical_pods_need_a_quota_outside_kube_system(cluster: LocalCluster) -> None:
    apply(cluster, namespace("critical"))
    refused = apply(cluster, pod("agent", "critical", priority_class="system-node-critical"), check=False)
    assert refused.returncode != 0
    assert "insufficient quota to match these scopes" in refused.stderr, refused.stderr
    # kube-system has GKE's gcp-critical-pods quota; the same pod is admitted there.
    apply(cluster, pod("agent", "kube-system", priority_class="system-node-critical"))
    quota = {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "critical-pods", "namespace": "critical"},
             "spec": {"hard": {"pods": "10"}, "scopeSelector": {"matchExpressions": [
                 {"scopeName": "PriorityClass", "operator": "In", "values": ["system-node-critical"]}]}}}
    apply(cluster, quota)
    deadline = time.monotonic() + 30  # the quota's status is filled by the controller-manager's quota controller
    while apply(cluster, pod("agent", "critical", priority_class="system-node-critical"), check=False).returncode:
        assert time.monotonic() < deadline, "the critical pod was still refused with a covering quota"
        time.sleep(0.5)


def lws(name: str, ns: str, **spec: object) -> dict:
    template = {"spec": {"containers": [{"name": "main", "image": IMAGE}], "tolerations": [TOLERATION],
                         "nodeSelector": {"kubernetes.io/hostname": NODE}}}
    return {"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet",
            "metadata": {"name": name, "namespace": ns},
            "spec": {"replicas": 1, "leaderWorkerTemplate": {"size": 2, "workerTemplate": template}, **spec}}


def test_lws_webhooks_are_called_and_the_controller_reconciles(cluster: LocalCluster) -> None:
    apply(cluster, namespace("lws"))
    apply(cluster, lws("serve", "lws"))
    spec = get(cluster, "leaderworkerset", "serve", "-n", "lws")["spec"]
    # Defaults only the mutating webhook sets (pkg/webhooks/leaderworkerset_webhook.go Default; the CRD has none).
    assert spec["networkConfig"] == {"subdomainPolicy": "Shared"}
    assert spec["rolloutStrategy"]["rollingUpdateConfiguration"] == {"maxSurge": 0, "maxUnavailable": 1,
                                                                     "partition": 0}
    # The validating webhook's own message (the CRD sets no minimum on size).
    refused = apply(cluster, lws("empty", "lws", leaderWorkerTemplate={"size": 0, "workerTemplate": {
        "spec": {"containers": [{"name": "main", "image": IMAGE}]}}}), check=False)
    assert "size must be equal or greater than 1" in refused.stderr, refused.stderr
    # The controller: the leader pod, the headless Service named after the set, then the workers' StatefulSet.
    wait_for(cluster, "pod/serve-0", "-n", "lws", "--for=condition=Ready", timeout=90)
    service = get(cluster, "service", "serve", "-n", "lws")
    assert service["spec"]["clusterIP"] == "None"
    assert service["spec"]["selector"] == {"leaderworkerset.sigs.k8s.io/name": "serve"}
    wait_for(cluster, "pod/serve-0-1", "-n", "lws", "--for=condition=Ready", timeout=90)
    leader = get(cluster, "pod", "serve-0", "-n", "lws")
    # The pod webhook labels the group (leaderworkerset.sigs.k8s.io/worker-index 0 on the leader).
    assert leader["metadata"]["labels"]["leaderworkerset.sigs.k8s.io/worker-index"] == "0"
    assert leader["spec"]["subdomain"] == "serve"

    # The planted mistake: without the mutating webhook registered, the same object is not defaulted, and the
    # validating webhook (which reads the defaults) refuses it.
    cluster.kubectl("delete", "mutatingwebhookconfiguration", "lws-mutating-webhook-configuration")
    try:
        bare = cluster.kubectl("create", "--dry-run=server", "-o", "json", "-f", "-",
                               input=json.dumps(lws("bare", "lws")), check=False)
        assert bare.returncode != 0
        assert 'admission webhook "vleaderworkerset.kb.io" denied the request' in bare.stderr, bare.stderr
    finally:
        cluster.install_webhooks()


def test_a_kwok_node_runs_pods_and_jobs_complete(cluster: LocalCluster) -> None:
    apply(cluster, namespace("work"))
    apply(cluster, pod("runs", "work"))
    wait_for(cluster, "pod/runs", "-n", "work", "--for=condition=Ready")
    assert get(cluster, "pod", "runs", "-n", "work")["spec"]["nodeName"] == NODE
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "once", "namespace": "work"},
           "spec": {"backoffLimit": 0, "template": {"spec": {**pod("x", "work")["spec"], "restartPolicy": "Never"}}}}
    apply(cluster, job)
    wait_for(cluster, "job/once", "-n", "work", "--for=condition=Complete", timeout=90)
    # The planted mistake: a selector no node has leaves the pod unscheduled, and the scheduler says why.
    apply(cluster, pod("nowhere", "work", node_selector={"cloud.google.com/gke-accelerator": "nvidia-gb300"}))
    deadline = time.monotonic() + 30
    while True:
        conditions = get(cluster, "pod", "nowhere", "-n", "work")["status"].get("conditions", [])
        scheduled = [c for c in conditions if c["type"] == "PodScheduled"]
        if scheduled and scheduled[0]["status"] == "False":
            break
        assert time.monotonic() < deadline, conditions
        time.sleep(0.5)
    assert scheduled[0]["reason"] == "Unschedulable"
    assert "didn't match Pod's node affinity/selector" in scheduled[0]["message"]


def listening(pids: list[int]) -> set[tuple[str, int]]:
    """(address, port) of every TCP socket in LISTEN state that one of the processes holds (/proc/PID/fd socket
    inodes matched against /proc/PID/net/tcp and tcp6)."""
    found: set[tuple[str, int]] = set()
    for pid in pids:
        inodes = set()
        for fd in Path(f"/proc/{pid}/fd").iterdir():
            try:
                target = fd.readlink().as_posix()
            except OSError:
                continue
            if target.startswith("socket:["):
                inodes.add(target[8:-1])
        for table, width in (("tcp", 8), ("tcp6", 32)):
            for line in Path(f"/proc/{pid}/net/{table}").read_text().splitlines()[1:]:
                fields = line.split()
                if fields[3] != "0A" or fields[9] not in inodes:
                    continue
                hex_addr, hex_port = fields[1].split(":")
                found.add((_address(hex_addr, width), int(hex_port, 16)))
    return found


def _address(hex_addr: str, width: int) -> str:
    raw = bytes.fromhex(hex_addr)
    if width == 8:
        return socket.inet_ntop(socket.AF_INET, raw[::-1])
    words = b"".join(raw[i:i + 4][::-1] for i in range(0, 16, 4))
    return socket.inet_ntop(socket.AF_INET6, words)


LOOPBACK = {"127.0.0.1", "::1", "::ffff:127.0.0.1"}


def test_nothing_listens_beyond_loopback(cluster: LocalCluster) -> None:
    pids = [p for p in cluster.status().values() if p]
    assert len(pids) == 6
    sockets = listening(pids)
    assert {port for _, port in sockets} >= set(cluster.ports.values())
    assert {addr for addr, _ in sockets} <= LOOPBACK, sorted(sockets)
    # The planted mistake: a socket on every interface, held by this process, is seen as such.
    with socket.socket() as s:
        s.bind(("0.0.0.0", 0))
        s.listen()
        assert ("0.0.0.0", s.getsockname()[1]) in listening([os.getpid()])


def test_the_vendored_lws_crd_is_the_built_release_with_only_the_replicas_bounds_added() -> None:
    """The CRD installed (schemas/crds, the chart's v0.10.0) against the built controller's own (v0.9.0, from the
    module): the one difference is v0.10.0's `replicas` minimum 0 and maximum 1000000."""
    import difflib

    from .local import LWS_CRD, SHARE

    built = (SHARE / "lws" / "crd-leaderworkersets.yaml").read_text().splitlines()
    vendored = LWS_CRD.read_text().splitlines()
    changed = [line for line in difflib.unified_diff(built, vendored, lineterm="", n=0)
               if line[:1] in "+-" and not line.startswith(("+++", "---"))]
    assert changed == ["+                maximum: 1000000", "+                minimum: 0"]


def test_start_is_idempotent_and_stop_leaves_nothing(tmp_path: Path) -> None:
    """A second start leaves the running processes alone; stop ends every one (no process names the directory
    afterwards) and a start after it works from an empty store."""
    from .conftest import require_toolchain

    require_toolchain()
    cluster = LocalCluster(tmp_path / "c")
    try:
        first = cluster.start().status()
        assert cluster.start().status() == first
        cluster.kubectl("create", "namespace", "left-over")
        cluster.stop()
        assert cluster.status() == {}
        assert not _processes_naming(cluster.dir)
        cluster.start()
        assert cluster.kubectl("get", "namespace", "left-over", check=False).returncode != 0
    finally:
        cluster.stop()
    assert not _processes_naming(cluster.dir)


def _processes_naming(path: Path) -> list[int]:
    found = []
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and str(path).encode() in (proc / "cmdline").read_bytes():
                found.append(int(proc.name))
        except OSError:
            continue
    return found
