"""The existing-cluster stacks (cloud kubernetes) under the real CLI and provider, on the local control plane:
preview, up, a second up with no changes, one engine flag changed, destroy; the offline plan checked against the
engine's own preview, secrets checked in the state file. Two stacks: one B300 node serving from a Deployment, and two
GB300 trays serving one LeaderWorkerSet group in a ComputeDomain, whose awaits (``pulumi.com/waitFor:
condition=Available``) the real LWS controller meets.

One test walks the whole life of one stack, in order, because each step starts from the state the previous one
left (pytest-xdist would otherwise spread the steps over workers, each with a stack of its own).
"""

import contextlib
import json
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from k3infra import offline, planning
from k3infra.kubernetes import presence
from tests.cluster import dra
from tests.cluster.compute_domain import ComputeDomainController
from tests.cluster.deploy import served_crd

from . import cluster_objects, processes, s3_server
from .pulumi_cli import ROOT, Workspace
from .stuck_pods import StuckPods

STACK = "e2e"
PROGRAM = str(ROOT / "__main__.py")
HF_TOKEN = "hf_e2eTokenThatMustNeverReachTheState"
MEMORY_FRACTION = 0.91
"""An engine flag (--gpu-memory-utilization) the second update changes: only the server may change."""
COMPUTE_DOMAIN_CRD = ROOT / "schemas" / "crds" / "nvidia-dra-computedomains.yaml"
LIVE = planning.live_dir(ROOT).relative_to(ROOT)
"""Where the project keeps its live stacks' configuration (Pulumi.yaml's stackConfigDir): the stack file goes there."""


@contextlib.contextmanager
def nothing_to_add(cluster, gpu_nodes: list[str]) -> Iterator[None]:
    yield


@contextlib.contextmanager
def nvidia_dra_driver(cluster, gpu_nodes: list[str]) -> Iterator[None]:
    """What the NVIDIA DRA driver the stack says is present brings: its ComputeDomain CRD, its DeviceClasses, its
    kubelet plugin's slices on the GPU nodes and (the stand-in of) its controller (tests/cluster/compute_domain.py)."""
    objects = [*dra.compute_domain_classes(), *(dra.compute_domain_slice(n) for n in gpu_nodes)]
    crd = served_crd(yaml.safe_load(COMPUTE_DOMAIN_CRD.read_text()))
    cluster.kubectl("apply", "--server-side", "-f", "-", input=json.dumps(
        {"apiVersion": "v1", "kind": "List", "items": [crd, *objects]}))
    cluster.kubectl("wait", "--for=condition=Established", "--timeout=60s", f"crd/{crd['metadata']['name']}")
    with ComputeDomainController(cluster) as controller:
        yield
    assert controller.errors == []
    cluster.kubectl("delete", "-f", "-", "--wait=false", input=json.dumps(
        {"apiVersion": "v1", "kind": "List", "items": objects}))


@dataclass(frozen=True)
class Case:
    """One existing-cluster stack and what the local cluster needs to stand in for the user's."""

    base_stack: str
    server_type: str
    kubernetes: dict[str, Any]
    """Changes to the stack's ``k3infra:kubernetes`` section (beside the kubeconfig and the store's endpoint)."""
    cluster_adds: Callable[..., contextlib.AbstractContextManager[None]]
    presence: dict[str, Any]
    """What preview reads of the cluster (the ``clusterComponents.presence`` output)."""


CASES = {
    "b300-deployment": Case("kubernetes-b300", "kubernetes:apps/v1:Deployment", {}, nothing_to_add,
                            {"apis": [], "checked": True, "gpuNodesAdvertising": 1}),
    # The local control plane runs the LWS controller out of cluster (tests/cluster/local.py): present, as on a
    # cluster that runs it already; installing its chart would put its webhooks behind a Service no pod serves.
    "gb300-leaderworkerset": Case(
        "kubernetes-gb300-nvl72", "kubernetes:leaderworkerset.x-k8s.io/v1:LeaderWorkerSet", {"lws": "present"},
        nvidia_dra_driver,
        {"apis": ["computedomains.resource.nvidia.com resource.nvidia.com/v1beta1: present",
                  "leaderworkersets.leaderworkerset.x-k8s.io leaderworkerset.x-k8s.io/v1: present"],
         "checked": True, "gpuNodesAdvertising": 2}),
}


def _stack_file(case: Case, cluster, endpoint: str) -> dict[str, Any]:
    doc = yaml.safe_load((ROOT / "stacks" / f"Pulumi.{case.base_stack}.yaml").read_text())
    kube = doc["config"]["k3infra:kubernetes"]
    kube.update(case.kubernetes)
    kube["kubeconfigPath"] = str(cluster.kubeconfig)
    kube["storage"]["endpoint"] = endpoint
    # The gateway's charts and CRDs come from ghcr.io, cr.agentgateway.dev and github.com, which this machine cannot
    # reach (preview fails fetching them): the engine runs the stack with the server's own Service as the endpoint.
    # The gateway's objects go through the local apiserver in tests/cluster/test_installed_gateway.py.
    doc["config"]["k3infra:endpoint"] = {**doc["config"].get("k3infra:endpoint", {}), "gateway": False}
    return doc


def _project_files(doc: dict[str, Any]) -> dict[str, str]:
    return {str(LIVE / f"Pulumi.{STACK}.yaml"): yaml.safe_dump(doc, sort_keys=False)}


def _steps(preview: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The engine's steps by URN (a replacement's last), without the stack itself and the default providers (the
    plan has neither)."""
    return {urn: steps[-1] for urn, steps in _steps_by_urn(preview).items()}


def _steps_by_urn(preview: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for step in preview["steps"]:
        urn = step["urn"]
        qualified_type, name = urn.split("::")[2:4]
        if qualified_type == offline.STACK_TYPE or (qualified_type.startswith("pulumi:providers:")
                                                    and name.startswith("default")):
            continue
        out.setdefault(urn, []).append(step)
    return out


def _plan_inventory(plan: planning.Plan) -> set[tuple[str, str, str, str | None]]:
    return {(r.urn, r.type, r.name, r.parent) for r in plan.recording.resources}


def _engine_inventory(preview: dict[str, Any]) -> set[tuple[str, str, str, str | None]]:
    out = set()
    for urn, step in _steps(preview).items():
        state = step.get("newState") or step.get("oldState") or {}
        parent = state.get("parent") or None
        if parent is not None and parent.split("::")[2] == offline.STACK_TYPE:
            parent = None
        out.add((urn, state.get("type", urn.split("::")[2].split("$")[-1]), urn.split("::")[-1], parent))
    return out


def _objects(cluster, namespace: str) -> dict[str, str]:
    """kind/name -> uid of what the stack's namespace holds (pods included)."""
    kinds = ("deployments,services,jobs,configmaps,serviceaccounts,roles,rolebindings,networkpolicies,secrets,pods,"
             "leaderworkersets.leaderworkerset.x-k8s.io")
    if cluster.kubectl("get", "crd", "computedomains.resource.nvidia.com", check=False).returncode == 0:
        kinds += ",computedomains.resource.nvidia.com"
    items = json.loads(cluster.kubectl("get", kinds, "-n", namespace, "-o", "json").stdout)["items"]
    return {f"{o['kind']}/{o['metadata']['name']}": o["metadata"]["uid"] for o in items}


def _wait(predicate, what: str, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(1)


@pytest.fixture
def s3(tmp_path: Path):
    server = s3_server.S3Server.start(tmp_path / "moto.log", bucket="kimi-k3-weights")
    yield server
    server.stop()


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_existing_cluster_stack_lifecycle(case: Case, workspace, local_cluster, s3, tmp_path: Path) -> None:
    cluster = local_cluster
    doc = _stack_file(case, cluster, s3.endpoint)
    ws: Workspace = workspace((ROOT / "Pulumi.yaml").read_text(), files=_project_files(doc))
    stack_file = ws.project / LIVE / f"Pulumi.{STACK}.yaml"

    # The offline plan of the very stack file the engine runs, with the secrets the engine's run is given (they add
    # the Secrets that carry them).
    secrets = (("s3AccessKeyId", s3_server.ACCESS_KEY_ID), ("s3SecretAccessKey", s3_server.SECRET_ACCESS_KEY),
               ("hfToken", HF_TOKEN))
    plan = planning.plan(str(stack_file), [f"{key}={value}" for key, value in secrets])
    namespace = plan.recording.outputs["servingNamespace"]
    gpu_nodes = cluster_objects.gpu_nodes(plan)
    nodes = gpu_nodes + cluster_objects.cpu_nodes()
    cluster.kubectl("apply", "--server-side", "-f", "-",
                    input=json.dumps({"apiVersion": "v1", "kind": "List", "items": nodes}))
    try:
        with case.cluster_adds(cluster, [n["metadata"]["name"] for n in gpu_nodes]):
            _lifecycle(case, ws, cluster, s3, plan, stack_file, namespace, secrets)
    finally:
        cluster.kubectl("delete", "-f", "-", "--wait=false", input=json.dumps(
            {"apiVersion": "v1", "kind": "List", "items": nodes}), check=False)


def _lifecycle(case: Case, ws: Workspace, cluster, s3, plan: planning.Plan, stack_file: Path, namespace: str,
               secrets: tuple[tuple[str, str], ...]) -> None:
    ws.stack_init(STACK)
    for key, value in secrets:
        ws.cli("config", "set", "--secret", f"k3infra:{key}", value, "-s", STACK)

    # preview: the engine's resources are the plan's, URNs, types, names and parents included.
    preview = ws.preview_json(PROGRAM, STACK)
    # Every Kubernetes object goes through the stack's own provider: a default provider would read the ambient
    # kubeconfig of whoever runs `pulumi up`, another cluster.
    defaults = [s["urn"] for s in preview["steps"] if "::pulumi:providers:" in s["urn"]
                and s["urn"].split("::")[-1].startswith("default")]
    assert defaults == []
    assert _engine_inventory(preview) == _plan_inventory(plan)
    assert {s["op"] for s in _steps(preview).values()} == {"create"}

    # up: every await the program relies on is met by the real provider (the command fails otherwise).
    up = ws.run(PROGRAM, "up", "--yes", "-s", STACK, "--skip-preview", watch=StuckPods(cluster, namespace))
    # no warning a user would have to ignore: the provider reports the release it is installed as (issue 41)
    assert "is expected to have version" not in up.stdout + up.stderr, up.stdout[-2000:]
    outputs = ws.outputs(STACK, show_secrets=True)
    expected = offline.unwrap(plan.recording.outputs)
    # What only a real run has: preview read the cluster (the plan skips that read and says so).
    online = ("verification", "warnings", "clusterComponents", "fabricCheck")
    assert {k: v for k, v in outputs.items() if k not in online} == \
        {k: v for k, v in expected.items() if k not in online}
    assert outputs["clusterComponents"]["presence"] == case.presence
    # kwok's pods run nothing: the verify Job completes without the checklist's report, and the output says so and
    # where to read the result (issue 41: it used to stay `pending`)
    assert outputs["verification"]["status"] == "no-report", outputs["verification"]
    assert "`k3infra status <stack>`" in outputs["verification"]["note"]
    # likewise the fabric check's Jobs (issue 39): the plan's paths and floors as planned, each group `no-report`
    if "fabricCheck" in expected:
        fabric = outputs["fabricCheck"]
        assert fabric["status"] == "no-report", fabric
        assert {k: v for k, v in fabric.items() if k not in ("status", "groups")} == \
            {k: v for k, v in expected["fabricCheck"].items() if k not in ("status", "groups")}
        assert all(g["status"] == "no-report" and "`k3infra status <stack>`" in g["note"] for g in fabric["groups"])
    assert {k: v for k, v in outputs["clusterComponents"].items() if k != "presence"} == \
        {k: v for k, v in expected["clusterComponents"].items() if k != "presence"}
    assert outputs["warnings"] == [w for w in expected["warnings"] if w != presence.skipped(plan.config)]

    # k3infra status finds the cluster through this up's outputs, read by the real CLI from the file backend (no
    # --kubeconfig: the kubeconfigPath output), and reads it: the nodes and every server rank as they are now.
    assert (outputs["kubeconfigPath"], outputs.get("kubeContext")) == (str(cluster.kubeconfig), None)
    status = subprocess.run([sys.executable, "-m", "k3infra", "status", str(stack_file), "--pulumi-stack", STACK,
                             "--format", "json"], cwd=ws.project, env=ws.env, capture_output=True, text=True,
                            timeout=300)
    assert status.stdout, status.stderr
    report = json.loads(status.stdout)
    assert status.returncode == report["exitCode"], status.stderr
    lines = {(ln["section"], ln["name"]): ln for ln in report["lines"]}
    assert (lines[("capacity", "existing nodes")]["state"], lines[("nodes", "gpu")]["state"]) == ("ok", "ok"), report
    assert {ln["state"] for ln in report["lines"] if ln["section"] == "server"} == {"ok"}, report

    # secrets stay secret in the state: none of them, nor the kubeconfig's credentials, in plain text.
    state = ws.state_file("k3infra", STACK).read_text()
    kubeconfig = yaml.safe_load(cluster.kubeconfig.read_text())
    credentials = [u["user"][k] for u in kubeconfig["users"] for k in ("client-key-data", "token") if k in u["user"]]
    for secret in (s3_server.SECRET_ACCESS_KEY, s3_server.ACCESS_KEY_ID, HF_TOKEN, *credentials):
        assert secret not in state, f"a secret is in the state in plain text: {secret[:12]}..."
    secret_sig = '"4dabf18193072939515e22adb298388d":"1b47061264138c4ac30d75fd1eb44270"'  # Pulumi's secret marker
    assert secret_sig in state.replace(" ", "") and '"ciphertext"' in state.replace(" ", "")

    # a second up changes nothing.
    before = _objects(cluster, namespace)
    ws.run(PROGRAM, "up", "--yes", "-s", STACK, "--expect-no-changes", watch=StuckPods(cluster, namespace))
    assert _objects(cluster, namespace) == before

    # one engine flag: the engine changes exactly what the offline plans' difference says: the server (Deployment or
    # LeaderWorkerSet) in place (a rollout: new pods) and the verify Job, whose checklist reads the server's
    # arguments, replaced (a Job's pod template is immutable); nothing else.
    changed = planning.plan(str(stack_file), sets=[*(f"{key}={value}" for key, value in secrets),
                                                   f"memoryFraction={MEMORY_FRACTION}"])
    planned = {r.urn for r in changed.recording.resources if r.inputs != plan.recording.get(r.urn).inputs}
    server = changed.recording.one(case.server_type)
    assert server.urn in planned
    ws.cli("config", "set", "k3infra:memoryFraction", str(MEMORY_FRACTION), "-s", STACK)
    preview = ws.preview_json(PROGRAM, STACK)
    ops = {urn: {s["op"] for s in steps} for urn, steps in _steps_by_urn(preview).items()}
    assert {urn for urn, o in ops.items() if o != {"same"}} == planned
    assert ops[server.urn] == {"update"}
    assert all("replace" in o or "create-replacement" in o for urn, o in ops.items() if urn in planned - {server.urn})
    # By uid: a LeaderWorkerSet's pods come back under the same names (its StatefulSets'), a Deployment's under new.
    server_pods = {uid for k, uid in before.items() if k.startswith("Pod/") and server.inputs["metadata"]["name"] in k}
    assert server_pods
    ws.run(PROGRAM, "up", "--yes", "-s", STACK, "--skip-preview", watch=StuckPods(cluster, namespace))
    _wait(lambda: not server_pods & set(_objects(cluster, namespace).values()), "the server's old pods to be replaced",
          timeout=60)
    after = _objects(cluster, namespace)
    assert any(k.startswith("Pod/") and server.inputs["metadata"]["name"] in k for k in after)
    changed_names = {offline.unwrap(changed.recording.get(u).inputs).get("metadata", {}).get("name") for u in planned}
    untouched = {k: v for k, v in before.items()
                 if not k.startswith("Pod/") and k.split("/", 1)[1] not in changed_names}
    assert {k: after.get(k) for k in untouched} == untouched

    # destroy: the stack is empty, the namespace and everything in it gone, the weights kept.
    ws.cli("destroy", "--yes", "-s", STACK)
    resources = json.loads(ws.cli("stack", "export", "-s", STACK).stdout)["deployment"].get("resources") or []
    assert resources == []
    retained = [r for r in plan.recording.resources if r.retain_on_delete]
    assert retained == []  # nothing in this stack is retained: all it adds is in its namespace
    _wait(lambda: cluster.kubectl("get", "namespace", namespace, check=False).returncode != 0,
          f"namespace {namespace} to be deleted")
    assert s3.keys("kimi-k3-weights") == sorted(s3_server.FIXTURE)


def test_a_real_preview_stops_before_any_resource_without_the_values_the_stack_file_leaves_to_the_deployer(
        workspace, local_cluster, s3) -> None:
    """Without the S3 keys (never in a stack file) the offline plan warns; the engine's own preview stops with the
    configuration problem naming both keys, no traceback, and nothing registered (Problems.before_up)."""
    case = CASES["b300-deployment"]
    ws: Workspace = workspace((ROOT / "Pulumi.yaml").read_text(),
                              files=_project_files(_stack_file(case, local_cluster, s3.endpoint)))
    ws.stack_init(STACK)
    proc = ws.run(PROGRAM, "preview", "-s", STACK, check=False)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    for key in ("k3infra:s3AccessKeyId", "k3infra:s3SecretAccessKey"):
        assert f"{key}: is not set: the copier and the server read the store with it" in out, out
    assert "Traceback" not in out
    resources = json.loads(ws.cli("stack", "export", "-s", STACK).stdout)["deployment"].get("resources") or []
    assert resources == []


PLANTED_TAINT = {"key": "k3infra.dev/planted", "value": "nothing-tolerates-this", "effect": "NoSchedule"}


def test_an_up_whose_server_cannot_schedule_fails_within_a_minute_naming_the_pod(
        workspace, local_cluster, s3) -> None:
    """The B300 stack on a GPU node with a taint the server does not tolerate: ``pulumi up`` is stopped by the watch
    (``StuckPods``, 30 s after the server pod is reported unschedulable), not by the provider's await timeout; the
    failure names the pod and the scheduler's reason, and no process the CLI started is left running."""
    case, cluster = CASES["b300-deployment"], local_cluster
    ws: Workspace = workspace((ROOT / "Pulumi.yaml").read_text(),
                              files=_project_files(_stack_file(case, cluster, s3.endpoint)))
    stack_file = ws.project / LIVE / f"Pulumi.{STACK}.yaml"
    secrets = (("s3AccessKeyId", s3_server.ACCESS_KEY_ID), ("s3SecretAccessKey", s3_server.SECRET_ACCESS_KEY))
    plan = planning.plan(str(stack_file), [f"{key}={value}" for key, value in secrets])
    namespace = plan.recording.outputs["servingNamespace"]
    gpu_nodes = cluster_objects.gpu_nodes(plan)
    for node in gpu_nodes:
        node["spec"]["taints"].append(PLANTED_TAINT)
    nodes = gpu_nodes + cluster_objects.cpu_nodes()
    cluster.kubectl("apply", "--server-side", "-f", "-",
                    input=json.dumps({"apiVersion": "v1", "kind": "List", "items": nodes}))
    try:
        ws.stack_init(STACK)
        for key, value in secrets:
            ws.cli("config", "set", "--secret", f"k3infra:{key}", value, "-s", STACK)
        with pytest.raises(AssertionError) as failed:
            ws.run(PROGRAM, "up", "--yes", "-s", STACK, "--skip-preview", timeout=600,
                   watch=StuckPods(cluster, namespace))
        message = str(failed.value)
        first = message.splitlines()[0]
        assert first.startswith(f"pulumi up --yes -s {STACK} --skip-preview --client=127.0.0.1:"), first
        assert f": pod {namespace}/k3-server-" in first and " cannot schedule: " in first, first
        # kubernetes v1.35.4 taint_toleration.go: the reason names no taint (it is logged at V(4) only).
        assert "1 node(s) had untolerated taint(s)" in first, first
        assert "processes left running" not in message
        assert processes.with_env("PULUMI_HOME", ws.env["PULUMI_HOME"]) == []
    finally:
        cluster.kubectl("delete", "namespace", namespace, "--ignore-not-found", "--wait=false", check=False)
        cluster.kubectl("delete", "-f", "-", "--wait=false", input=json.dumps(
            {"apiVersion": "v1", "kind": "List", "items": nodes}), check=False)
        _wait(lambda: cluster.kubectl("get", "namespace", namespace, check=False).returncode != 0,
              f"namespace {namespace} to be deleted")
