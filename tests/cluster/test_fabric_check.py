"""The fabric check on the real control plane, for the multi-node stack with every kind of claim (gcp-a4xmax: the RDMA
NICs from DRANET, a ComputeDomain's IMEX channel, the sub-block affinity): admitted, its pods scheduled one per GPU
node of one NVLink domain with their claims allocated there, its Job complete; then the server, applied after it
(deploy.py: as Pulumi orders them), on the same nodes. And the report's way out: the check's service account may patch
its own Job and nothing else, and the probe's ``publish`` with that account's token puts a report on the Job that the
stack output reads back as ``passed``."""

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from k3infra import fabric_probe as probe
from k3infra.serving import fabric_report

from . import checks
from .deploy import Deployment
from .fixtures import cluster  # noqa: F401 (the fixture)
from .local import LocalCluster

STACK = "gcp-a4xmax"
SUBBLOCK = "cloud.google.com/gce-topology-subblock"


@pytest.fixture(scope="module")
def deployed(cluster: LocalCluster) -> Iterator[Deployment]:
    dep = Deployment(cluster, STACK)
    try:
        yield dep.deploy()
    finally:
        dep.clean()


def _pods(dep: Deployment, component: str) -> list[dict[str, Any]]:
    return sorted((p for p in dep.pods() if (p["metadata"].get("labels") or {}).get(
        "app.kubernetes.io/component") == component), key=lambda p: p["metadata"]["name"])


def test_the_check_is_gated_before_the_server(deployed: Deployment) -> None:
    gates, held = deployed.gated()
    assert [g["metadata"]["name"] for g in gates] == ["k3-fabric-0"]
    assert [h["metadata"]["name"] for h in held] == ["k3-server-lws"]


def test_everything_admitted_and_every_job_complete(deployed: Deployment) -> None:
    assert checks.admitted(deployed) == []
    assert checks.jobs_complete(deployed) == []


def test_the_check_pods_ran_one_per_gpu_node_of_one_domain_with_the_servers_claims(deployed: Deployment) -> None:
    pods = _pods(deployed, "fabric-check")
    assert [p["metadata"]["labels"]["batch.kubernetes.io/job-completion-index"] for p in pods] == ["0", "1"]
    assert all(p["status"]["phase"] == "Succeeded" for p in pods)
    nodes = [p["spec"]["nodeName"] for p in pods]
    # One rank per node: each takes every GPU of its node, so two running ranks never share one. kwok ends a pod at
    # once, so a rank scheduled after the other ended may land on the node it freed (seen in CI: gpu-0 twice); on GPUs
    # a rank cannot end before its peer joins the collective (the Job fails, backoffLimit 0).
    gpus = deployed.plan.config.accelerator.gpus_per_node
    assert all(c["resources"]["limits"]["nvidia.com/gpu"] == str(gpus) for p in pods for c in p["spec"]["containers"])
    assert set(nodes) <= set(deployed.profile.gpu_nodes) and len(nodes) == 2
    live = deployed.nodes()
    assert len({live[n]["metadata"]["labels"][SUBBLOCK] for n in nodes}) == 1
    server = _pods(deployed, "model-server")
    assert len(server) == 2
    # The check's pods claim what the server's do; they were bound to their nodes, which the scheduler does only
    # once every claim of the pod is allocated there (its DRA plugin's PreBind). Their generated claims are gone by
    # now: the claim controller releases and deletes a finished pod's (kubernetes v1.35.4
    # pkg/controller/resourceclaim/controller.go, "deleting unused generated claim"). The server's stay.
    for pod in pods:
        assert {c["name"] for c in pod["spec"]["resourceClaims"]} == {"rdma", "nvlink-channel"}, pod["metadata"]["name"]
    for pod in server:
        got = {s["name"] for s in pod["status"].get("resourceClaimStatuses") or [] if s.get("resourceClaimName")}
        assert got == {"rdma", "nvlink-channel"}, pod["metadata"]["name"]
    # The server came after the check, on the nodes the check proved.
    assert sorted(p["spec"]["nodeName"] for p in server) == sorted(deployed.profile.gpu_nodes)
    assert set(nodes) <= {p["spec"]["nodeName"] for p in server}


def test_the_generic_checks_hold_with_the_check_in_place(deployed: Deployment) -> None:
    assert checks.placement(deployed) == []
    assert checks.claims(deployed) == []
    assert checks.topology(deployed) == []


def test_the_check_may_patch_its_report_into_its_own_job_and_nothing_else(deployed: Deployment,
                                                                          cluster: LocalCluster,
                                                                          tmp_path: Path) -> None:
    ns, job = "kimi-k3", "k3-fabric-0"
    account = f"system:serviceaccount:{ns}:k3-fabric"

    def can(verb: str, what: str) -> str:
        return cluster.kubectl("auth", "can-i", verb, what, "-n", ns, "--as", account, check=False).stdout.strip()
    assert can("patch", f"jobs/{job}") == "yes"
    assert {(v, w): can(v, w) for v, w in [("get", f"jobs/{job}"), ("list", "jobs"), ("patch", "jobs/k3-sync"),
                                           ("patch", "pods"), ("create", "jobs")]} == {
        ("get", f"jobs/{job}"): "no", ("list", "jobs"): "no", ("patch", "jobs/k3-sync"): "no",
        ("patch", "pods"): "no", ("create", "jobs"): "no"}
    # The probe's own request, with a token of that account, through the real apiserver and its RBAC.
    sa = tmp_path / "serviceaccount"
    sa.mkdir()
    (sa / "token").write_text(cluster.kubectl("create", "token", "k3-fabric", "-n", ns).stdout.strip())
    shutil.copy(cluster.pki / "ca.crt", sa / "ca.crt")
    server = yaml.safe_load(cluster.kubeconfig.read_text())["clusters"][0]["cluster"]["server"]
    env = {"K3_NAMESPACE": ns, "K3_JOB_NAME": job, "K3_KUBE_API": server, "K3_SERVICE_ACCOUNT_DIR": str(sa)}
    path = {"path": "tensor-parallel", "collective": "all_reduce", "ranks": 8, "busbwGBs": 801.3, "fraction": 0.89,
            "expectedBusbwGBs": 900.0, "expectedTransport": "nvlink", "ok": True, "problems": [],
            "transport": {"betweenNodes": ["P2P/MNNVL/read"], "insideNodes": [], "networks": []}}
    assert probe.publish(probe.report_document(True, {"backend": "nccl", "paths": [path]}), env) is None
    assert probe.publish({"status": "passed"}, env | {"K3_JOB_NAME": "k3-sync"}).startswith(  # type: ignore[union-attr]
        "cannot publish the report on Job kimi-k3/k3-sync (annotation k3infra.dev/fabric-check): HTTP Error 403")
    live = json.loads(cluster.kubectl("get", "job", job, "-n", ns, "-o", "json").stdout)
    out = fabric_report.group_output(live["metadata"]["annotations"], ns, job,
                                     fabric_report.job_state(live["status"]), {}, 0.5)
    assert (out["status"], [(p["name"], p["busbwGBs"], p["floorBusbwGBs"]) for p in out["paths"]]) == (
        "passed", [("tensor-parallel", 801.3, 450.0)])
