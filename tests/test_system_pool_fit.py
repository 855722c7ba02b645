"""Every pod a stack puts on the CPU system nodes fits them: each Helm chart's pods (from the catalog's facts at the
pinned version, with k3infra's values applied) and each rendered workload that does not run on the GPU pool
request no more than one system node's allocatable, and all of them together no more than the system pool's.

GCP review B2: the endpoint picker chart asked 8 CPU of an e2-standard-8 (7.91 allocatable) and never scheduled.
"""

import re
from dataclasses import dataclass
from typing import Any, Iterator, Mapping

import pytest

from k3infra import offline
from k3infra.aws import hyperpod_chart, nodegroup
from k3infra.catalog.charts import (ADDON_CHARTS, AGENTGATEWAY_CHART, AGENTGATEWAY_CRDS_CHART, CHARTS,
                                    CLUSTER_AUTOSCALER_CHARTS, KEDA_CHART, KUBE_STATE_METRICS_CHART, ChartFacts)
from k3infra.catalog.system_nodes import ALLOCATABLE, SYSTEM_MAX_PODS, Allocatable, node_allocatable
from k3infra.catalog.transfer import CPU_NODES, DEFAULT_CPU_NODE, SYNC_POOL_LABEL, SYNC_POOL_TAINT_KEY, SYNC_POOLS
from k3infra.offline import Recording, Registration
from k3infra.planning import Plan
from k3infra.serving import gateway, gpu_addons, lws
from tests.support import ROOT, STACKS, plan

CHART = "kubernetes:helm.sh/v4:Chart"
WORKLOADS = {
    "kubernetes:apps/v1:Deployment": "replicas",
    "kubernetes:apps/v1:StatefulSet": "replicas",
    "kubernetes:apps/v1:DaemonSet": None,
    "kubernetes:batch/v1:Job": "parallelism",
    "kubernetes:leaderworkerset.x-k8s.io/v1:LeaderWorkerSet": None,
    "kubernetes:core/v1:Pod": None,
}
GPU_ONLY_LABELS = ("cloud.google.com/gke-accelerator",)
"""Node labels only GPU nodes carry (GKE sets the accelerator label on accelerator node pools)."""
KUBERNETES_STACKS = [s for s in STACKS if s != "alicloud-pai"]
VARIANTS = [(s,) for s in KUBERNETES_STACKS] + [
    ("aws-eks", "nodes=2"), ("aws-eks", "autoscaling.enabled=true", "replicas=2"),
    ("gcp-a4-sglang", "autoscaling.enabled=true", "replicas=2", "gcp.checkReservation=false"),
    ("alicloud-ack", "autoscaling.enabled=true", "replicas=2")]
"""Every stack, aws-eks over two nodes, which installs the EFA device plugin, and with autoscaling, which installs
KEDA (and on EKS kube-state-metrics)."""


@dataclass(frozen=True)
class Load:
    """Pods of one kind that land on the system nodes."""

    what: str
    cpu_millis: int
    memory_mib: int
    pods: int
    per_node: bool = False
    """A DaemonSet: one pod on every system node."""


_UNITS = {"Ki": 1 / 1024, "Mi": 1, "Gi": 1024, "Ti": 1024 * 1024, "k": 1e3 / 2**20, "M": 1e6 / 2**20,
          "G": 1e9 / 2**20}


def cpu_millis(q: Any) -> int:
    s = str(q)
    return int(float(s[:-1])) if s.endswith("m") else int(float(s) * 1000)


def memory_mib(q: Any) -> int:
    m = re.fullmatch(r"([0-9.]+)([A-Za-z]*)", str(q))
    assert m, q
    return int(float(m.group(1)) * (_UNITS[m.group(2)] if m.group(2) else 1 / 2**20) + 0.999)


def value_at(values: Mapping[str, Any], path: str) -> Any:
    node: Any = values
    for part in path.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return None
        node = node[part]
    return node


def chart_loads(facts: ChartFacts, values: Mapping[str, Any]) -> tuple[list[Load], list[str]]:
    """The chart's pods on the system nodes with k3infra's ``values`` applied (Helm merges maps key by key), and
    every GPU-only pod whose placement k3infra's values should set but do not."""
    loads, unplaced = [], []
    for p in facts.pods:
        if p.enabled_by and not any(value_at(values, path) for path in p.enabled_by):
            continue
        if p.gpu_nodes_only:
            if p.placed_by_value and not value_at(values, p.placed_by_value):
                unplaced.append(f"{facts.chart} {p.component}: {p.placed_by_value} is not set")
            continue
        requests = (value_at(values, f"{p.resources_value}.requests") if p.resources_value else None) or {}
        cpu = cpu_millis(requests["cpu"]) if "cpu" in requests else p.cpu_millis
        mem = memory_mib(requests["memory"]) if "memory" in requests else p.memory_mib
        loads.append(Load(f"{facts.chart} {p.component}", cpu, mem, p.replicas, p.kind == "DaemonSet"))
    return loads, unplaced


def _requests(containers: list[dict[str, Any]]) -> tuple[int, int]:
    cpu = sum(cpu_millis(c.get("resources", {}).get("requests", {}).get("cpu", 0)) for c in containers)
    mem = sum(memory_mib(c.get("resources", {}).get("requests", {}).get("memory", 0)) for c in containers)
    return cpu, mem


def pod_requests(spec: dict[str, Any]) -> tuple[int, int]:
    """What the scheduler reserves for a pod: the larger of its containers' sum and any one init container."""
    cpu, mem = _requests(spec["containers"])
    for init in spec.get("initContainers") or []:
        icpu, imem = _requests([init])
        cpu, mem = max(cpu, icpu), max(mem, imem)
    return cpu, mem


def templates(reg: Registration) -> Iterator[tuple[str, dict[str, Any], int]]:
    """(name, pod spec, pods) of each pod template of a rendered workload."""
    doc = offline.plain(reg.inputs)
    spec = doc["spec"]
    if reg.type == "kubernetes:core/v1:Pod":
        yield reg.name, spec, 1
    elif "leaderWorkerTemplate" in spec:
        lwt = spec["leaderWorkerTemplate"]
        groups = int(spec.get("replicas", 1))
        yield f"{reg.name} leader", lwt["leaderTemplate"]["spec"], groups
        if "workerTemplate" in lwt:
            yield f"{reg.name} worker", lwt["workerTemplate"]["spec"], groups * (int(lwt["size"]) - 1)
    else:
        field = WORKLOADS[reg.type]
        yield reg.name, spec["template"]["spec"], int(spec.get(field, 1)) if field else 1


def _requests_gpus(spec: dict[str, Any]) -> bool:
    return any("gpu" in k for c in spec["containers"] for k in (c.get("resources", {}).get("requests") or {}))


INSTANCE_TYPE = "node.kubernetes.io/instance-type"


def _term_excludes(term: dict[str, Any], system_sku: str) -> bool:
    """A required node-affinity term no system node satisfies: it asks for other instance types or a GPU-only label."""
    for e in term.get("matchExpressions") or []:
        if e["key"] == INSTANCE_TYPE and e["operator"] == "In" and system_sku not in e["values"]:
            return True
        if e["key"] in GPU_ONLY_LABELS and e["operator"] in ("In", "Exists"):
            return True
    return False


def on_gpu_nodes(spec: dict[str, Any], gpu_selectors: list[dict[str, str]], system_sku: str) -> bool:
    """True when the pod cannot run on a system node: it asks for GPUs, selects a GPU pool's labels, a label only
    GPU nodes carry or another instance type (by node selector or by every required node-affinity term)."""
    selector = spec.get("nodeSelector") or {}
    terms = (((spec.get("affinity") or {}).get("nodeAffinity") or {})
             .get("requiredDuringSchedulingIgnoredDuringExecution") or {}).get("nodeSelectorTerms") or []
    return (_requests_gpus(spec) or any(k in selector for k in GPU_ONLY_LABELS)
            or selector.get(INSTANCE_TYPE, system_sku) != system_sku
            or any(sel and all(selector.get(k) == v for k, v in sel.items()) for sel in gpu_selectors)
            or bool(terms) and all(_term_excludes(t, system_sku) for t in terms))


def on_sync_pool(spec: dict[str, Any]) -> bool:
    """The pod selects the sync's own pool (catalog.transfer.SYNC_POOLS), not the system nodes."""
    return (spec.get("nodeSelector") or {}).get(SYNC_POOL_LABEL) == "sync"


def system_loads(rec: Recording, system_sku: str) -> tuple[list[Load], list[str]]:
    """Every pod of the recording that lands on the system nodes (of type ``system_sku``), and every misplaced
    GPU-only chart pod."""
    specs = [(reg, name, spec, pods) for reg in rec.ordered() if reg.type in WORKLOADS
             for name, spec, pods in templates(reg)]
    gpu_selectors = [dict(s.get("nodeSelector") or {}) for _, _, s, _ in specs if _requests_gpus(s)]
    loads: list[Load] = []
    problems: list[str] = []
    for reg, name, spec, pods in specs:
        if on_sync_pool(spec):
            continue
        if not on_gpu_nodes(spec, gpu_selectors, system_sku):
            cpu, mem = pod_requests(spec)
            loads.append(Load(name, cpu, mem, pods, reg.type == "kubernetes:apps/v1:DaemonSet"))
    for reg in rec.by_type(CHART):
        inputs = offline.plain(reg.inputs)
        key = (inputs["chart"], inputs.get("version") or "")
        if key not in CHARTS:
            problems.append(f"{reg.name}: chart {key} has no pods in k3infra/catalog/charts.py")
            continue
        chart, unplaced = chart_loads(CHARTS[key], inputs.get("values") or {})
        loads += chart
        problems += unplaced
    return loads, problems


def fit_problems(loads: list[Load], node: str, nodes: int) -> list[str]:
    """Pods larger than one node's allocatable, and a pool too small for all of them together."""
    a: Allocatable = ALLOCATABLE[node]
    out = [f"{x.what} requests {x.cpu_millis}m CPU / {x.memory_mib} MiB; one {node} has {a.cpu_millis}m / "
           f"{a.memory_mib} MiB allocatable"
           for x in loads if x.cpu_millis > a.cpu_millis or x.memory_mib > a.memory_mib]
    cpu = sum(x.cpu_millis * (nodes if x.per_node else x.pods) for x in loads)
    mem = sum(x.memory_mib * (nodes if x.per_node else x.pods) for x in loads)
    if cpu > nodes * a.cpu_millis or mem > nodes * a.memory_mib:
        out.append(f"together {cpu}m CPU / {mem} MiB; {nodes} x {node} have {nodes * a.cpu_millis}m / "
                   f"{nodes * a.memory_mib} MiB allocatable")
    return out


def system_pool(p: Plan) -> tuple[str, int]:
    cfg = p.config
    return cfg.cluster.system_node_type or DEFAULT_CPU_NODE[cfg.accelerator.cloud], cfg.cluster.system_nodes


@pytest.mark.parametrize("variant", VARIANTS, ids=lambda v: " ".join(v))
def test_every_chart_and_workload_on_the_system_nodes_fits_them(variant: tuple[str, ...]) -> None:
    p = plan(*variant)
    node, nodes = system_pool(p)
    loads, problems = system_loads(p.recording, node)
    assert loads, "a Kubernetes stack runs something on its system nodes (the weight sync, controllers)"
    assert problems + fit_problems(loads, node, nodes) == []


def test_the_gateway_stack_runs_the_endpoint_picker_and_the_lws_controller_on_the_system_nodes() -> None:
    loads, _ = system_loads(plan("gcp-a4xmax").recording, "e2-standard-8")
    by_name = {x.what: (x.cpu_millis, x.memory_mib, x.pods) for x in loads}
    # exactly these: the GPU nodes' NIC daemon (asapd-lite) selects their instance type, the verify Job their pool
    assert set(by_name) == {f"{gateway.EPP_CHART} epp", f"{lws.LWS_CHART} controller-manager",
                            "nvidia-dra-driver-gpu controller"}
    assert by_name[f"{gateway.EPP_CHART} epp"] == (2000, 4096, 1)
    assert by_name[f"{lws.LWS_CHART} controller-manager"] == (1000, 1024, 1)
    assert "k3-sync-job" not in by_name  # on the sync pool (test_the_sync_workers_fit_their_own_pool)


@pytest.mark.parametrize("stack", ["gcp-a4xmax", "gcp-a4-sglang", "azure-gb300"])
def test_the_sync_workers_fit_their_own_pool(stack: str) -> None:
    """One worker per sync pool node: its requests within the node's allocatable, by the cloud's rule."""
    p = plan(stack)
    pool = SYNC_POOLS[p.config.cloud]
    job = offline.unwrap(p.recording.one("kubernetes:batch/v1:Job", "k3-sync-job").inputs)
    spec = job["spec"]["template"]["spec"]
    assert on_sync_pool(spec) and spec["tolerations"] == [
        {"key": SYNC_POOL_TAINT_KEY, "operator": "Exists", "effect": "NoSchedule"}]
    cpu, mem = pod_requests(spec)
    a = node_allocatable(pool.node.cloud, pool.node.vcpus, pool.node.memory_gib,
                         SYSTEM_MAX_PODS[pool.node.cloud] if isinstance(SYSTEM_MAX_PODS[pool.node.cloud], int) else 110)
    assert cpu <= a.cpu_millis and mem <= a.memory_mib, (cpu, mem, a)
    assert job["spec"]["parallelism"] <= pool.nodes


def test_the_fit_check_catches_the_endpoint_pickers_default_requests() -> None:
    """The chart's own 8 CPU / 8 GiB: more than an e2-standard-8 leaves (the review's BLOCKER)."""
    epp = CHARTS[(gateway.EPP_CHART, gateway.EPP_CHART_VERSION)]
    loads, _ = chart_loads(epp, {"router": {"epp": {"image": {"tag": "v0.10.0"}}}})
    assert fit_problems(loads, "e2-standard-8", 2) == [
        f"{gateway.EPP_CHART} epp requests 8000m CPU / 8192 MiB; one e2-standard-8 has 7910m / 27220 MiB allocatable"]
    # a GPU-only pod whose node selector k3infra forgot would land on the system nodes
    dcgm = CHARTS[(gpu_addons.DCGM_EXPORTER_CHART.chart, gpu_addons.DCGM_EXPORTER_CHART.version)]
    assert chart_loads(dcgm, {})[1] == ["dcgm-exporter exporter: nodeSelector is not set"]


def test_every_chart_k3infra_installs_has_its_pods_in_the_catalog() -> None:
    pinned = {(gateway.EPP_CHART, gateway.EPP_CHART_VERSION), (lws.LWS_CHART, lws.LWS_CHART_VERSION),
              (hyperpod_chart.DEFAULT_DEPENDENCIES_CHART, ""), nodegroup.EFA_DEVICE_PLUGIN_CHART[1:], KEDA_CHART,
              KUBE_STATE_METRICS_CHART, AGENTGATEWAY_CHART, AGENTGATEWAY_CRDS_CHART, *CLUSTER_AUTOSCALER_CHARTS.values()}
    pinned |= {(c.chart, c.version) for c in (gpu_addons.NVIDIA_DEVICE_PLUGIN_CHART, gpu_addons.NVIDIA_DRA_DRIVER_CHART,
                                                gpu_addons.DRANET_CHART, gpu_addons.DCGM_EXPORTER_CHART)}
    by_addons = {key for keys in ADDON_CHARTS.values() for key in keys}  # installed by an EKS add-on, not a release
    assert pinned | by_addons == set(CHARTS) and not pinned & by_addons
    # one pinned chart per Helm release k3infra creates (the autoscaler's release one of its charts per Kubernetes
    # minor): a new chart must be added above and to the catalog
    sites = sum(f.read_text().count("helm.v4.Chart(") for f in (ROOT / "k3infra").rglob("*.py"))
    assert sites == len(CHARTS) - len(by_addons) - (len(CLUSTER_AUTOSCALER_CHARTS) - 1)


def test_allocatable_of_each_default_system_node_type() -> None:
    """The reservation rules of the four clouds applied to their default system node types (catalog)."""
    assert {sku: (a.cpu_millis, a.memory_mib) for sku, a in ALLOCATABLE.items()} == {
        "e2-standard-8": (7910, 27220),   # 90m CPU; 3,645 MiB + 100 MiB eviction of 30,965 MiB
        "m7i.2xlarge": (7910, 29972),     # 90m CPU; 11 x 58 pods + 255 = 893 MiB + 100 MiB
        "Standard_D8s_v5": (7820, 25815),  # 180m CPU; 20 x 250 pods + 50 = 5,050 MiB + 100 MiB
        "ecs.g7.2xlarge": (7800, 22752),  # ACK's sample node's shares, scaled
        "cluster-cpu-node": (8000, 30865),  # kubeadm: nothing reserved; 100 MiB eviction of 30,965 MiB
    }
    assert set(DEFAULT_CPU_NODE.values()) <= set(ALLOCATABLE) == set(CPU_NODES)


def test_quantities() -> None:
    assert (cpu_millis("250m"), cpu_millis("2"), cpu_millis(1)) == (250, 2000, 1000)
    assert (memory_mib("512Mi"), memory_mib("8Gi"), memory_mib("1Gi"), memory_mib(0)) == (512, 8192, 1024, 0)

