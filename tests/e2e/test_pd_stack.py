"""The prefill/decode stack (``kubernetes-gb300-nvl72-pd``: a prefill LeaderWorkerSet of one 2-tray group and a decode
LeaderWorkerSet of one 4-tray group, each in a ComputeDomain) under the real CLI and provider, on the local control
plane: up, a second up with no changes, destroy.

Two cases, each one test because each step starts from the state the one before left:

- ``without-gateway`` runs everywhere the toolchain is built (CI): the stack with ``endpoint.gateway: false``. It
  proves the two roles' workloads, their ComputeDomains, awaits and the verify Job deploy, stay unchanged and go. It
  proves nothing about the endpoint picker's chart.
- ``upstream-picker-chart`` runs only where ``K3INFRA_PICKER_CHART_DIR`` names a copy of llm-d-router's
  ``config/charts`` at v0.10.0 (``llm-d-router-gateway/`` and ``routerlib/``): the stack as shipped, gateway on,
  its picker chart taken from a local directory (``k3infra:charts.llm-d-router-gateway.repository``). The test packs
  that copy the way llm-d-router's release does (``hack/push-chart.sh``: ``helm dependency update``, then ``helm
  package --version v0.10.0 --app-version v0.10.0``) into a directory of its own; the chart's templates and values
  are upstream's, unchanged. Without the variable it is skipped, saying so: CI has no copy of the chart.

What stands in (as in test_existing_cluster.py): kwok's nodes (pods go Ready running nothing), the NVIDIA DRA driver's
objects and a ComputeDomain controller, moto's S3 server; the LWS controller runs out of cluster, so the stack says
``lws: present``. For the gateway case, Gateway API's and the Inference Extension's CRDs are the vendored ones
(schemas/crds), which preview's presence check reads, with a GatewayClass ``istio`` as Istio makes it; Istio's DestinationRule, which the chart renders for the
``istio`` class, is a stand-in CRD that accepts any spec (no Istio CRD is vendored): its schema is not checked here.
No gateway controller runs, so the Gateway is never programmed (Pulumi does not await it).
"""

import contextlib
import json
import os
import re
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from k3infra import planning
from k3infra.catalog.charts import PICKER_CHART
from tests.cluster.deploy import served_crd

from . import cluster_objects, s3_server
from .pulumi_cli import ROOT, Workspace
from .stuck_pods import StuckPods
from .test_existing_cluster import LIVE, PROGRAM, STACK, _wait, nvidia_dra_driver

BASE_STACK = "kubernetes-gb300-nvl72-pd"
PICKER_CHART_ENV = "K3INFRA_PICKER_CHART_DIR"
CRDS = ROOT / "schemas" / "crds"
GATEWAY_CRDS = ("gateway-api-gatewayclasses.yaml", "gateway-api-gateways.yaml", "gateway-api-httproutes.yaml",
                "gaie-inferencepools-v1.yaml")
ISTIO_CLASS = {"apiVersion": "gateway.networking.k8s.io/v1", "kind": "GatewayClass", "metadata": {"name": "istio"},
               "spec": {"controllerName": "istio.io/gateway-controller"}}
"""The class Istio installs (istio.io docs, "Gateway API": ``controllerName: istio.io/gateway-controller``), which the
stack's ``kubernetes.gatewayClass: istio`` names and preview reads; no controller accepts it here."""
DESTINATION_RULE_STAND_IN = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "destinationrules.networking.istio.io"},
    "spec": {"group": "networking.istio.io", "scope": "Namespaced",
             "names": {"kind": "DestinationRule", "listKind": "DestinationRuleList", "plural": "destinationrules",
                       "singular": "destinationrule"},
             "versions": [{"name": v, "served": True, "storage": v == "v1",
                           "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}}
                          for v in ("v1", "v1beta1")]}}
"""A stand-in: Istio's DestinationRule (the chart's ``templates/istio.yaml`` writes networking.istio.io/v1beta1),
accepting any spec."""
FIGURES: dict[str, Any] = {}
"""Wall times and counts of the last run, printed at its end (benchmarks/, not asserted)."""


def released_picker_chart(source: Path, into: Path) -> Path:
    """llm-d-router's ``config/charts`` at v0.10.0 as its release packs ``llm-d-router-gateway``: the chart, its
    ``router`` dependency (``file://../routerlib``, alias router) in ``charts/`` as ``helm dependency update`` puts it
    (unpacked here: Helm loads an unpacked subchart alike), and Chart.yaml's version and appVersion the tag (``helm
    package --version --app-version``). Returns the directory that holds it (the mirror)."""
    chart = into / "llm-d-router-gateway"
    shutil.copytree(source / "llm-d-router-gateway", chart)
    shutil.copytree(source / "routerlib", chart / "charts" / "router")
    text = (chart / "Chart.yaml").read_text()
    version = PICKER_CHART[1]
    text = re.sub(r"(?m)^version: .*$", f"version: {version}", text, count=1)
    text = re.sub(r"(?m)^appVersion: .*$", f'appVersion: "{version}"', text, count=1)
    (chart / "Chart.yaml").write_text(text)
    return into


@contextlib.contextmanager
def gateway_crds(cluster) -> Iterator[None]:
    """Gateway API's GatewayClass, Gateway and HTTPRoute and the InferencePool (vendored), the DestinationRule
    stand-in, and Istio's GatewayClass; those this test added are deleted after it."""
    docs = [served_crd(d) for f in GATEWAY_CRDS for d in yaml.safe_load_all((CRDS / f).read_text()) if d]
    docs.append(DESTINATION_RULE_STAND_IN)
    present = {d["metadata"]["name"] for d in docs
               if cluster.kubectl("get", "crd", d["metadata"]["name"], check=False).returncode == 0}
    added = [d for d in docs if d["metadata"]["name"] not in present]
    if added:
        cluster.kubectl("apply", "--server-side", "-f", "-",
                        input=json.dumps({"apiVersion": "v1", "kind": "List", "items": added}))
        for d in added:
            cluster.kubectl("wait", "--for=condition=Established", "--timeout=60s", f"crd/{d['metadata']['name']}")
    cluster.kubectl("apply", "--server-side", "-f", "-", input=json.dumps(ISTIO_CLASS))
    try:
        yield
    finally:
        cluster.kubectl("delete", "gatewayclass", "istio", "--wait=false", check=False)
        for d in added:
            cluster.kubectl("delete", "crd", d["metadata"]["name"], "--wait=false", check=False)


def _stack_file(cluster, endpoint: str, mirror: Path | None) -> dict[str, Any]:
    doc = yaml.safe_load((ROOT / "stacks" / f"Pulumi.{BASE_STACK}.yaml").read_text())
    kube = doc["config"]["k3infra:kubernetes"]
    kube.update(lws="present", kubeconfigPath=str(cluster.kubeconfig))
    kube["storage"]["endpoint"] = endpoint
    if mirror is None:
        doc["config"]["k3infra:endpoint"]["gateway"] = False
    else:
        doc["config"]["k3infra:charts"] = {"llm-d-router-gateway": {"repository": str(mirror)}}
    return doc


def _summary(output: str) -> dict[str, int]:
    """The CLI's ``Resources:`` block: ``{"created": 61}``, ``{"unchanged": 61}``, ``{"deleted": 61}``."""
    block = output.rsplit("Resources:", 1)[-1].split("Duration:", 1)[0]
    return {what: int(n) for n, what in re.findall(r"(\d+) (created|unchanged|updated|deleted|replaced)", block)}


def _timed(name: str, call):
    start = time.monotonic()
    result = call()
    FIGURES[f"{name} seconds"] = round(time.monotonic() - start, 1)
    return result


def _kubectl_json(cluster, *args: str) -> dict[str, Any]:
    return json.loads(cluster.kubectl("get", *args, "-o", "json").stdout)


def _role_sets(cluster, namespace: str) -> dict[str, dict[str, Any]]:
    """Each LeaderWorkerSet: its replicas, ready replicas, size, Available condition, and its pods' count."""
    sets = _kubectl_json(cluster, "leaderworkersets.leaderworkerset.x-k8s.io", "-n", namespace)["items"]
    pods = _kubectl_json(cluster, "pods", "-n", namespace)["items"]
    out = {}
    for s in sets:
        name = s["metadata"]["name"]
        conditions = {c["type"]: c["status"] for c in s.get("status", {}).get("conditions") or []}
        out[name] = {"replicas": s["spec"]["replicas"], "size": s["spec"]["leaderWorkerTemplate"]["size"],
                     "readyReplicas": s.get("status", {}).get("readyReplicas"), "available": conditions.get("Available"),
                     "pods": sum(1 for p in pods if p["metadata"].get("labels", {}).get(
                         "leaderworkerset.sigs.k8s.io/name") == name),
                     "readyPods": sum(1 for p in pods if p["metadata"].get("labels", {}).get(
                         "leaderworkerset.sigs.k8s.io/name") == name and any(
                         c["type"] == "Ready" and c["status"] == "True" for c in p.get("status", {}).get("conditions")
                         or []))}
    return out


@pytest.fixture
def s3(tmp_path: Path):
    server = s3_server.S3Server.start(tmp_path / "moto.log", bucket="kimi-k3-weights")
    yield server
    server.stop()


def _lifecycle(ws: Workspace, cluster, plan: planning.Plan, namespace: str, gateway: bool) -> None:
    ws.stack_init(STACK)
    for key, value in (("s3AccessKeyId", s3_server.ACCESS_KEY_ID), ("s3SecretAccessKey", s3_server.SECRET_ACCESS_KEY)):
        ws.cli("config", "set", "--secret", f"k3infra:{key}", value, "-s", STACK)
    planned = len(plan.recording.resources)

    up = _timed("up", lambda: ws.run(PROGRAM, "up", "--yes", "-s", STACK, "--skip-preview",
                                     watch=StuckPods(cluster, namespace), timeout=1200))
    created = _summary(up.stdout)
    FIGURES["up"] = created
    # The engine's count includes the stack and the default providers, which the plan has not.
    assert created.keys() == {"created"} and created["created"] >= planned, up.stdout[-3000:]

    roles = _role_sets(cluster, namespace)
    FIGURES["leaderworkersets"] = roles
    assert roles == {
        "k3-prefill-lws": {"replicas": 1, "size": 2, "readyReplicas": 1, "available": "True", "pods": 2, "readyPods": 2},
        "k3-decode-lws": {"replicas": 1, "size": 4, "readyReplicas": 1, "available": "True", "pods": 4, "readyPods": 4},
    }
    if gateway:
        _check_picker(cluster, namespace)

    second = _timed("second up", lambda: ws.run(PROGRAM, "up", "--yes", "-s", STACK, "--expect-no-changes",
                                                watch=StuckPods(cluster, namespace), timeout=1200))
    FIGURES["second up"] = _summary(second.stdout)
    assert FIGURES["second up"] == {"unchanged": created["created"]}, second.stdout[-3000:]

    down = _timed("destroy", lambda: ws.cli("destroy", "--yes", "-s", STACK, timeout=1200))
    FIGURES["destroy"] = _summary(down.stdout)
    assert FIGURES["destroy"] == {"deleted": created["created"]}, down.stdout[-3000:]
    resources = json.loads(ws.cli("stack", "export", "-s", STACK).stdout)["deployment"].get("resources") or []
    assert resources == []
    _wait(lambda: cluster.kubectl("get", "namespace", namespace, check=False).returncode != 0,
          f"namespace {namespace} to be deleted")


def _check_picker(cluster, namespace: str) -> None:
    """The upstream chart's objects as the control plane holds them: the picker's Deployment available, the
    InferencePool over both roles' HTTP pods naming the picker's Service, and the Istio DestinationRule."""
    epp = _kubectl_json(cluster, "deployment", "k3-gateway-epp", "-n", namespace)
    conditions = {c["type"]: c["status"] for c in epp["status"].get("conditions") or []}
    container = epp["spec"]["template"]["spec"]["containers"][0]
    FIGURES["picker"] = {"available": conditions.get("Available"), "readyReplicas": epp["status"].get("readyReplicas"),
                         "image": container["image"], "requests": container["resources"].get("requests")}
    assert conditions.get("Available") == "True" and epp["status"].get("readyReplicas") == 1, epp["status"]
    assert container["resources"]["requests"] == {"cpu": "2", "memory": "4Gi"}
    assert "--pool-name" in container["args"] and container["args"][container["args"].index("--pool-name") + 1] == \
        "k3-gateway", container["args"]
    pool = _kubectl_json(cluster, "inferencepools.inference.networking.k8s.io", "k3-gateway", "-n", namespace)
    FIGURES["inferencePool"] = pool["spec"]
    assert pool["spec"]["endpointPickerRef"]["name"] == "k3-gateway-epp", pool["spec"]
    assert pool["spec"]["endpointPickerRef"].get("failureMode") == "FailOpen", pool["spec"]
    selected = pool["spec"]["selector"]["matchLabels"]
    pods = _kubectl_json(cluster, "pods", "-n", namespace, "-l", ",".join(f"{k}={v}" for k, v in selected.items()))
    roles = sorted(p["metadata"]["labels"].get("llm-d.ai/role", "") for p in pods["items"])
    FIGURES["pool pods"] = roles
    # The leaders of both roles' groups serve HTTP: one prefill, and every decode rank under hybrid LB or its leader.
    assert "prefill" in roles and "decode" in roles, roles
    rule = _kubectl_json(cluster, "destinationrules.networking.istio.io", "-n", namespace)["items"]
    assert [r["spec"]["trafficPolicy"]["tls"] for r in rule] == [{"mode": "SIMPLE", "insecureSkipVerify": True}]


def _run(workspace, cluster, s3, tmp_path: Path, mirror: Path | None) -> None:
    FIGURES.clear()
    doc = _stack_file(cluster, s3.endpoint, mirror)
    ws: Workspace = workspace((ROOT / "Pulumi.yaml").read_text(),
                              files={str(LIVE / f"Pulumi.{STACK}.yaml"): yaml.safe_dump(doc, sort_keys=False)})
    stack_file = ws.project / LIVE / f"Pulumi.{STACK}.yaml"
    plan = planning.plan(str(stack_file), [f"s3AccessKeyId={s3_server.ACCESS_KEY_ID}",
                                           f"s3SecretAccessKey={s3_server.SECRET_ACCESS_KEY}"])
    if mirror is not None:
        assert f"k3-gateway-epp: {mirror}/llm-d-router-gateway {PICKER_CHART[1]} (mirror of {PICKER_CHART[0]}: " \
               "k3infra:charts)" in plan.charts
    namespace = plan.recording.outputs["servingNamespace"]
    gpu_nodes = cluster_objects.gpu_nodes(plan)
    nodes = gpu_nodes + cluster_objects.cpu_nodes()
    FIGURES["planned resources"] = len(plan.recording.resources)
    cluster.kubectl("apply", "--server-side", "-f", "-",
                    input=json.dumps({"apiVersion": "v1", "kind": "List", "items": nodes}))
    try:
        with nvidia_dra_driver(cluster, [n["metadata"]["name"] for n in gpu_nodes]), \
                (gateway_crds(cluster) if mirror is not None else contextlib.nullcontext()):
            _lifecycle(ws, cluster, plan, namespace, gateway=mirror is not None)
    finally:
        cluster.kubectl("delete", "-f", "-", "--wait=false", input=json.dumps(
            {"apiVersion": "v1", "kind": "List", "items": nodes}), check=False)
        print(json.dumps(FIGURES, indent=1))


def test_pd_stack_lifecycle_without_gateway(workspace, local_cluster, s3, tmp_path: Path) -> None:
    _run(workspace, local_cluster, s3, tmp_path, None)


def test_pd_stack_lifecycle_with_the_upstream_picker_chart(workspace, local_cluster, s3, tmp_path: Path) -> None:
    source = os.environ.get(PICKER_CHART_ENV)
    if not source:
        pytest.skip(f"{PICKER_CHART_ENV} is not set: no copy of llm-d-router v0.10.0 config/charts (ghcr.io's chart "
                    "is not reachable here); the stack ran without its gateway above")
    mirror = released_picker_chart(Path(source), tmp_path / "charts")
    _run(workspace, local_cluster, s3, tmp_path, mirror)
