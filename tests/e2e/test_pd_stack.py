"""The prefill/decode stack (``kubernetes-gb300-nvl72-pd``: a prefill LeaderWorkerSet of one 2-tray group and a decode
LeaderWorkerSet of one 4-tray group, each in a ComputeDomain) under the real CLI and provider, on the local control
plane: up, a second up with no changes, destroy.

Two cases, each one test because each step starts from the state the one before left; in both the picker's chart
comes from a local directory (``k3infra:charts.llm-d-router-gateway.repository``), the stack's own mirror feature:

- ``upstream-picker-chart`` runs only where ``K3INFRA_PICKER_CHART_DIR`` names a copy of llm-d-router's
  ``config/charts`` at v0.10.0 (``llm-d-router-gateway/`` and ``routerlib/``). The test packs that copy the way
  llm-d-router's release does (``hack/push-chart.sh``: ``helm dependency update``, then ``helm package --version
  v0.10.0 --app-version v0.10.0``) into a directory of its own; the chart's templates and values are upstream's,
  unchanged. This is the run that says what the upstream chart does with k3infra's values. Without the variable it
  is skipped, saying so: CI has no copy of the chart (ghcr.io is out of reach).
- ``stand-in-picker-chart`` runs everywhere the toolchain is built (CI): the same stack with a chart of the test's
  own under the pinned name and version (``STAND_IN_TEMPLATES``: an InferencePool, the picker's Service and a
  Deployment that runs nothing, from k3infra's values). It proves the rest: the two roles' LeaderWorkerSets and
  ComputeDomains, every await, the route and policies naming the chart's pool, a local chart directory through the
  real provider, an unchanged second up and a clean destroy. It proves nothing about llm-d-router's chart: not its
  templates, not that it accepts k3infra's values, not its picker's arguments.

A disaggregated stack cannot run without its gateway (config refuses ``endpoint.gateway: false``: the picker routes
each request to a prefill and a decode endpoint), so there is no gateway-less case.

What stands in (as in test_existing_cluster.py): kwok's nodes (pods go Ready running nothing), the NVIDIA DRA driver's
objects and a ComputeDomain controller, moto's S3 server; the LWS controller runs out of cluster, so the stack says
``lws: present``. Gateway API's and the Inference Extension's CRDs are the vendored ones (schemas/crds: GatewayClass,
Gateway and HTTPRoute of v1.6.1, InferencePool of v1.6.0), which the run's presence check reads, with a GatewayClass
``istio`` as Istio makes it; Istio's DestinationRule, which the upstream chart renders for the ``istio`` class, is a
stand-in CRD that accepts any spec (no Istio CRD is vendored): its schema is not checked here. No gateway controller
runs, so the Gateway is never programmed (Pulumi does not await it). The release's rewrite of the picker's image in
``values.yaml`` is not repeated: k3infra's values set its tag and pull policy, and routerlib's registry and repository
are the release's defaults (``ghcr.io/llm-d``, ``llm-d-router-endpoint-picker``).
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
                           "schema": {"openAPIV3Schema": {"type": "object",
                                                          "x-kubernetes-preserve-unknown-fields": True}}}
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


STAND_IN_TEMPLATES = """\
# k3infra's test stand-in, NOT llm-d-router's chart: the objects the stack's route and policies name, from its values.
apiVersion: inference.networking.k8s.io/v1
kind: InferencePool
metadata:
  name: {{ .Release.Name }}
spec:
  selector:
    matchLabels: {{- toYaml .Values.router.modelServers.matchLabels | nindent 6 }}
  targetPorts: {{- toYaml .Values.router.modelServers.targetPorts | nindent 4 }}
  endpointPickerRef:
    name: {{ .Release.Name }}-epp
    port: {number: 9002}
    failureMode: {{ .Values.router.inferencePool.failureMode }}
---
apiVersion: v1
kind: Service
metadata:
  name: {{ .Release.Name }}-epp
spec:
  selector: {llm-d-router-gateway: {{ .Release.Name }}-epp}
  ports: [{name: grpc, port: 9002, targetPort: 9002}]
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}-epp
spec:
  replicas: 1
  selector:
    matchLabels: {llm-d-router-gateway: {{ .Release.Name }}-epp}
  template:
    metadata:
      labels: {llm-d-router-gateway: {{ .Release.Name }}-epp}
    spec:
      securityContext: {runAsNonRoot: true, runAsUser: 65532, seccompProfile: {type: RuntimeDefault}}
      containers:
      - name: stand-in
        image: registry.k8s.io/pause:3.10
        securityContext: {allowPrivilegeEscalation: false, capabilities: {drop: [ALL]}}
        resources:
          requests: {{- toYaml .Values.router.epp.resources.requests | nindent 12 }}
"""
"""The stand-in chart's one template (case ``stand-in-picker-chart``)."""


def stand_in_picker_chart(into: Path) -> Path:
    """A chart named and versioned as the pin, holding ``STAND_IN_TEMPLATES``; returns the directory that holds it."""
    chart = into / "llm-d-router-gateway"
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text(yaml.safe_dump({
        "apiVersion": "v2", "name": "llm-d-router-gateway", "version": PICKER_CHART[1],
        "description": "k3infra's test stand-in for llm-d-router-gateway: not llm-d-router's chart"}))
    (chart / "templates" / "stand-in.yaml").write_text(STAND_IN_TEMPLATES)
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


def _stack_file(cluster, endpoint: str, mirror: Path) -> dict[str, Any]:
    doc = yaml.safe_load((ROOT / "stacks" / f"Pulumi.{BASE_STACK}.yaml").read_text())
    kube = doc["config"]["k3infra:kubernetes"]
    kube.update(lws="present", kubeconfigPath=str(cluster.kubeconfig))
    kube["storage"]["endpoint"] = endpoint
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
                     "readyReplicas": s.get("status", {}).get("readyReplicas"),
                     "available": conditions.get("Available"),
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


def _lifecycle(ws: Workspace, cluster, plan: planning.Plan, namespace: str, upstream: bool) -> None:
    ws.stack_init(STACK)
    for key, value in (("s3AccessKeyId", s3_server.ACCESS_KEY_ID), ("s3SecretAccessKey", s3_server.SECRET_ACCESS_KEY)):
        ws.cli("config", "set", "--secret", f"k3infra:{key}", value, "-s", STACK)
    planned = len(plan.recording.resources)

    up = _timed("up", lambda: ws.run(PROGRAM, "up", "--yes", "-s", STACK, "--skip-preview",
                                     watch=StuckPods(cluster, namespace), timeout=1200))
    created = _summary(up.stdout)
    FIGURES["up"] = created
    # Diagnostics come from the stack itself only (its plan warnings), none from the chart or a resource.
    diagnostics = up.stdout.split("Diagnostics:", 1)[-1].split("Resources:", 1)[0]
    FIGURES["diagnostics from"] = re.findall(r"(?m)^  (\S.*\)):$", diagnostics)
    assert FIGURES["diagnostics from"] == ["pulumi:pulumi:Stack (k3infra-e2e)"], diagnostics[-3000:]
    # The engine's count includes the stack and the default providers, which the plan has not.
    assert created.keys() == {"created"} and created["created"] >= planned, up.stdout[-3000:]

    state = json.loads(ws.cli("stack", "export", "-s", STACK).stdout)["deployment"]["resources"]
    chart_urn = next(r["urn"] for r in state if r["urn"].endswith("::k3-gateway-epp"))
    FIGURES["chart objects"] = sorted(f"{r['type'].split(':', 1)[1]} {r['urn'].rsplit('::', 1)[1]}"
                                      for r in state if r.get("parent") == chart_urn)
    if not upstream:
        assert FIGURES["chart objects"] == [
            f"apps/v1:Deployment k3-gateway-epp:{namespace}/k3-gateway-epp",
            f"core/v1:Service k3-gateway-epp:{namespace}/k3-gateway-epp",
            f"inference.networking.k8s.io/v1:InferencePool k3-gateway-epp:{namespace}/k3-gateway"]
    roles = _role_sets(cluster, namespace)
    FIGURES["leaderworkersets"] = roles
    assert roles == {
        "k3-prefill-lws": {"replicas": 1, "size": 2, "readyReplicas": 1, "available": "True", "pods": 2,
                           "readyPods": 2},
        "k3-decode-lws": {"replicas": 1, "size": 4, "readyReplicas": 1, "available": "True", "pods": 4, "readyPods": 4},
    }
    _check_picker(cluster, namespace, upstream)

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


def _check_picker(cluster, namespace: str, upstream: bool) -> None:
    """The chart's objects as the control plane holds them: the picker's Deployment available at k3infra's requests,
    the InferencePool over both roles' HTTP pods naming the picker's Service; and, from the upstream chart, the
    picker reading that pool (``--pool-name``) and the Istio DestinationRule."""
    epp = _kubectl_json(cluster, "deployment", "k3-gateway-epp", "-n", namespace)
    conditions = {c["type"]: c["status"] for c in epp["status"].get("conditions") or []}
    container = epp["spec"]["template"]["spec"]["containers"][0]
    FIGURES["picker"] = {"available": conditions.get("Available"), "readyReplicas": epp["status"].get("readyReplicas"),
                         "image": container["image"], "requests": container["resources"].get("requests")}
    assert conditions.get("Available") == "True" and epp["status"].get("readyReplicas") == 1, epp["status"]
    # k3infra's NetworkPolicy and scrape objects select the picker's pods by the label routerlib gives them.
    policy = _kubectl_json(cluster, "networkpolicy", "k3-gateway-picker", "-n", namespace)
    wanted = policy["spec"]["podSelector"]["matchLabels"]
    labels = epp["spec"]["template"]["metadata"]["labels"]
    FIGURES["picker"].update(labels=labels, args=container.get("args"))
    assert {k: labels.get(k) for k in wanted} == wanted, (wanted, labels)
    if upstream:
        # The picker reads k3infra's configuration: the file it is started with is the chart's ConfigMap key.
        config = _kubectl_json(cluster, "configmap", "k3-gateway-epp", "-n", namespace)["data"]
        path = container["args"][container["args"].index("--config-file") + 1]
        mounts = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}
        volumes = {v["name"]: v.get("configMap", {}).get("name") for v in epp["spec"]["template"]["spec"]["volumes"]}
        FIGURES["picker"].update(config_keys=sorted(config), mounts=mounts)
        mounted = [f"{mounts[n]}/{key}" for n, cm in volumes.items() if cm == "k3-gateway-epp" and n in mounts
                   for key in config]
        assert path in mounted and json.loads(config[path.rsplit("/", 1)[1]])["kind"] == "EndpointPickerConfig", \
            (path, mounted)
    assert container["resources"]["requests"] == {"cpu": "2", "memory": "4Gi"}
    args = container.get("args") or []
    # routerlib _deployment.yaml: with the chart's pool the picker reads it by name (module doc of serving.gateway)
    assert not upstream or "k3-gateway" == args[args.index("--pool-name") + 1], args
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
    assert [r["spec"]["trafficPolicy"]["tls"] for r in rule] == ([{"mode": "SIMPLE", "insecureSkipVerify": True}]
                                                                 if upstream else [])


def _run(workspace, cluster, s3, mirror: Path, upstream: bool) -> None:
    FIGURES.clear()
    doc = _stack_file(cluster, s3.endpoint, mirror)
    ws: Workspace = workspace((ROOT / "Pulumi.yaml").read_text(),
                              files={str(LIVE / f"Pulumi.{STACK}.yaml"): yaml.safe_dump(doc, sort_keys=False)})
    stack_file = ws.project / LIVE / f"Pulumi.{STACK}.yaml"
    plan = planning.plan(str(stack_file), [f"s3AccessKeyId={s3_server.ACCESS_KEY_ID}",
                                           f"s3SecretAccessKey={s3_server.SECRET_ACCESS_KEY}"])
    assert f"k3-gateway-epp: {mirror}/llm-d-router-gateway {PICKER_CHART[1]} (mirror of {PICKER_CHART[0]}: " \
           "k3infra:charts)" in plan.charts
    namespace = plan.recording.outputs["servingNamespace"]
    gpu_nodes = cluster_objects.gpu_nodes(plan)
    nodes = gpu_nodes + cluster_objects.cpu_nodes()
    FIGURES["planned resources"] = len(plan.recording.resources)
    cluster.kubectl("apply", "--server-side", "-f", "-",
                    input=json.dumps({"apiVersion": "v1", "kind": "List", "items": nodes}))
    try:
        with nvidia_dra_driver(cluster, [n["metadata"]["name"] for n in gpu_nodes]), gateway_crds(cluster):
            try:
                _lifecycle(ws, cluster, plan, namespace, upstream)
            except BaseException:
                # The next case deploys the same objects under another provider: leave nothing behind.
                ws.cli("destroy", "--yes", "-s", STACK, check=False, timeout=1200)
                raise
    finally:
        cluster.kubectl("delete", "-f", "-", "--wait=false", input=json.dumps(
            {"apiVersion": "v1", "kind": "List", "items": nodes}), check=False)
        print(json.dumps(FIGURES, indent=1))


def test_pd_stack_lifecycle_with_a_stand_in_picker_chart(workspace, local_cluster, s3, tmp_path: Path) -> None:
    _run(workspace, local_cluster, s3, stand_in_picker_chart(tmp_path / "charts"), upstream=False)


def test_pd_stack_lifecycle_with_the_upstream_picker_chart(workspace, local_cluster, s3, tmp_path: Path) -> None:
    source = os.environ.get(PICKER_CHART_ENV)
    if not source:
        pytest.skip(f"{PICKER_CHART_ENV} is not set: no copy of llm-d-router v0.10.0 config/charts (ghcr.io's chart "
                    "is out of reach); the stand-in case runs the rest of the stack")
    _run(workspace, local_cluster, s3, released_picker_chart(Path(source), tmp_path / "charts"), upstream=True)
