"""What a stack deploys that ``status`` looks at, taken from the plan's rendered objects (never per cloud)."""

import dataclasses
from dataclasses import dataclass
from typing import Any

from ..catalog.charts import AGENTGATEWAY_CLASS
from ..catalog.hyperpod import IEC_API_VERSION, IEC_KIND, IEC_RESOURCE
from ..catalog.topologies import ROLE_LABEL
from ..planning import Plan
from ..render import apply_order
from ..sizing import IMAGE_PULL_SECONDS
from .copy_progress import ProgressRef, progress_ref

COMPONENT = "app.kubernetes.io/component"
INSTANCE = "app.kubernetes.io/instance"
SERVER, SYNC, PLACEMENT, VERIFY = "model-server", "weight-sync", "placement-check", "verify"
FABRIC = "fabric-check"
GATEWAY = "inference-gateway"
"""The inference gateway's objects' component (serving.gateway: its Gateway, HTTPRoute, proxy parameters)."""
WEIGHTS_INIT = "wait-for-weights"
"""The server pods' init container that waits for the sync's completion marker (k3infra/serving)."""


@dataclass(frozen=True)
class JobRef:
    """A Job the stack runs: its name and the budget (seconds) it is given, when the plan states one."""

    name: str
    completions: int
    budget_seconds: int | None


@dataclass(frozen=True)
class GatewayRef:
    """The Gateway in front of the servers (``k3infra:endpoint.gateway``, serving.gateway): the address clients use."""

    api_version: str
    name: str
    gateway_class: str
    port: int
    """Its listener's port (serving.gateway ``LISTENER_PORT``)."""
    proxy_service: str | None
    """The in-cluster name of the proxy Service its controller creates, which stands for the address until the
    Gateway reports one: an installed agentgateway names it after the Gateway (its proxy chart's
    ``kgateway.gateway.fullname`` is ``agentgateway.name``, which agentgateway@44215a4
    ``controller/pkg/kgateway/deployer/agentgateway_parameters.go`` sets to the Gateway's name, ``Name: &gw.Name``).
    None for a class the cluster brings (GKE's managed gateway has no Service in the namespace: its address is the
    Gateway's only)."""


@dataclass(frozen=True)
class Expected:
    """The objects of one stack that tell its cold start, and the budgets the sizing gives each phase."""

    stack: str
    namespace: str
    gpu_node_selector: dict[str, str]
    gpu_nodes: int
    system_nodes: int
    server_api_version: str
    server_kind: str
    """``Deployment`` (one rank per group) or ``LeaderWorkerSet`` (``group_size`` ranks per group)."""
    server_name: str
    server_selector: dict[str, str]
    groups: int
    """The plan's replica count; under a scaler its minimum (status reads the live one from the workload's scale)."""
    group_size: int
    sync: JobRef | None
    placement: JobRef | None
    verify: JobRef | None
    services: tuple[tuple[str, int], ...]
    """The server's Services and their first port."""
    weights_budget_seconds: int
    image_pull_budget_seconds: int
    load_budget_seconds: int
    sync_progress: ProgressRef | None = None
    """Where the sync's workers publish their byte progress (none without a sync Job)."""
    endpoint_config: str | None = None
    """HyperPod: the InferenceEndpointConfig's URL path (the server is the inference operator's, read through it)."""
    fabric: tuple[JobRef, ...] = ()
    """The fabric check's Jobs, one per group (serving.fabric_check)."""
    role: str = ""
    """The topology role this server is (prefill, decode, wide-ep); empty when aggregated."""
    gateway: GatewayRef | None = None
    """The inference gateway's Gateway, when the stack puts one in front of the servers."""
    roles: tuple["Expected", ...] = ()
    """One per role of a disaggregated topology, prefill first (each its own server, groups, group size and load
    budget); empty otherwise, when the fields above are the one server's."""


def _component(doc: dict[str, Any]) -> str:
    return str(((doc.get("metadata") or {}).get("labels") or {}).get(COMPONENT, ""))


def _job(doc: dict[str, Any] | None, budget: int | None) -> JobRef | None:
    if doc is None:
        return None
    spec = doc["spec"]
    return JobRef(doc["metadata"]["name"], int(spec.get("completions") or 1),
                  budget if budget is not None else spec.get("activeDeadlineSeconds"))


def expected(plan: Plan) -> Expected:
    """The stack's status targets. Raises ValueError when the plan deploys no model server on Kubernetes and no
    HyperPod InferenceEndpointConfig (PAI-EAS: ``managed.eas`` reads it)."""
    docs = [r.document for r in apply_order(plan.recording) if not r.chart]
    by_component: dict[tuple[str, str], dict[str, Any]] = {}
    for d in docs:
        by_component.setdefault((str(d.get("kind")), _component(d)), d)
    servers = [d for d in docs if d.get("kind") in ("LeaderWorkerSet", "Deployment") and _component(d) == SERVER]
    server = next((d for d in servers if d["kind"] == "LeaderWorkerSet"), servers[0] if servers else None)
    iec = next((d for d in docs if d.get("kind") == IEC_KIND), None)
    if server is None and iec is not None:
        return _hyperpod(plan, iec, by_component.get(("Job", SYNC)))
    if server is None:
        raise ValueError(f"stack {plan.stack_file.stack} deploys no model server on Kubernetes "
                         f"({plan.config.platform}): k3infra status reads Kubernetes stacks only")
    template, size, labels = _server_shape(server)
    s, cfg = plan.config.sizing, plan.config
    sync_budget = s.sync.timeout_seconds if s.sync else None
    jobs = {c: by_component.get(("Job", c)) for c in (SYNC, PLACEMENT, VERIFY)}
    sync_job = jobs[SYNC]
    services = tuple(sorted((d["metadata"]["name"], int(d["spec"]["ports"][0]["port"])) for d in docs
                            if d.get("kind") == "Service" and _component(d) == SERVER))
    base = Expected(
        stack=plan.stack_file.stack, namespace=server["metadata"]["namespace"],
        gpu_node_selector=dict(template["spec"].get("nodeSelector") or {}), gpu_nodes=s.total_nodes,
        system_nodes=cfg.cluster.system_nodes, server_api_version=server["apiVersion"],
        server_kind=server["kind"], server_name=server["metadata"]["name"],
        server_selector={k: labels[k] for k in (COMPONENT, INSTANCE)}, groups=int(server["spec"].get("replicas", 1)),
        group_size=size,
        sync=_job(jobs[SYNC], sync_budget), placement=_job(jobs[PLACEMENT], None), verify=_job(jobs[VERIFY], None),
        services=services,
        weights_budget_seconds=sync_budget or 0, image_pull_budget_seconds=IMAGE_PULL_SECONDS,
        load_budget_seconds=s.probe_budget_seconds,
        sync_progress=progress_ref(sync_job) if sync_job else None,
        fabric=tuple(j for d in docs if d.get("kind") == "Job" and _component(d) == FABRIC
                     for j in [_job(d, None)] if j is not None),
        gateway=_gateway(by_component.get(("Gateway", GATEWAY))))
    return dataclasses.replace(base, roles=_roles(plan, base, servers))


def _gateway(doc: dict[str, Any] | None) -> GatewayRef | None:
    """The stack's Gateway: its name, class, first listener's port, and the in-cluster name of an installed
    gateway's proxy Service (``GatewayRef.proxy_service``)."""
    if doc is None:
        return None
    meta, spec = doc["metadata"], doc["spec"]
    cls, port = str(spec["gatewayClassName"]), int(spec["listeners"][0]["port"])
    proxy = f"{meta['name']}.{meta['namespace']}.svc" if cls == AGENTGATEWAY_CLASS else None
    return GatewayRef(doc["apiVersion"], meta["name"], cls, port, proxy)


def _server_shape(server: dict[str, Any]) -> tuple[dict[str, Any], int, dict[str, str]]:
    """A server workload's pod template (the leader's), its group size and its pods' labels."""
    if server["kind"] == "LeaderWorkerSet":
        lwt = server["spec"]["leaderWorkerTemplate"]
        template, size = lwt.get("leaderTemplate") or lwt["workerTemplate"], int(lwt["size"])
    else:
        template, size = server["spec"]["template"], 1
    return template, size, template["metadata"]["labels"]


def _roles(plan: Plan, base: Expected, servers: list[dict[str, Any]]) -> tuple[Expected, ...]:
    """Each role's server of a disaggregated topology, prefill first (none when aggregated or wide-EP)."""
    top = plan.config.sizing.topology
    if top is None or len(top.roles) < 2:
        return ()
    out = []
    for role in top.roles:
        doc = next(d for d in servers if _role_of(d) == role.name)
        _, size, labels = _server_shape(doc)
        out.append(dataclasses.replace(
            base, server_api_version=doc["apiVersion"], server_kind=doc["kind"], server_name=doc["metadata"]["name"],
            server_selector={k: labels[k] for k in (COMPONENT, INSTANCE)}, groups=int(doc["spec"].get("replicas", 1)),
            group_size=size, load_budget_seconds=role.probe_budget_seconds, role=role.name))
    return tuple(out)


def _role_of(server: dict[str, Any]) -> str:
    """The llm-d role label of a server's pods (catalog.topologies.ROLE_LABEL)."""
    return str(_server_shape(server)[2].get(ROLE_LABEL, ""))


INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"
"""The well-known node label (kubernetes.io/docs/reference/labels-annotations-taints). HyperPod's EKS nodes carry
their ``ml.*`` instance type in it (the SageMaker guide's HyperPod Karpenter NodePool requires on it,
sagemaker-hyperpod-eks-autoscaling-nodepool), and the IEC's ``spec.instanceType`` is that type. ESTIMATE: not seen
on a live HyperPod node here; the nodes line reads 0 joined if a HyperPod release labels otherwise."""


def _hyperpod(plan: Plan, iec: dict[str, Any], sync_job: dict[str, Any] | None) -> Expected:
    """HyperPod: the nodes of the IEC's instance type, the sync Job, and the IEC itself in place of a server."""
    s, cfg, spec, meta = plan.config.sizing, plan.config, iec["spec"], iec["metadata"]
    sync_budget = s.sync.timeout_seconds if s.sync else None
    return Expected(
        stack=plan.stack_file.stack, namespace=meta["namespace"],
        gpu_node_selector={INSTANCE_TYPE_LABEL: spec["instanceType"]}, gpu_nodes=s.total_nodes,
        system_nodes=cfg.cluster.system_nodes, server_api_version=iec["apiVersion"],
        server_kind=IEC_KIND, server_name=meta["name"],
        server_selector={}, groups=int(spec.get("replicas") or 1), group_size=1,
        sync=_job(sync_job, sync_budget), placement=None, verify=None, services=(),
        weights_budget_seconds=sync_budget or 0, image_pull_budget_seconds=IMAGE_PULL_SECONDS,
        load_budget_seconds=int(spec.get("maxDeployTimeInSeconds") or s.probe_budget_seconds),
        sync_progress=progress_ref(sync_job) if sync_job else None,
        endpoint_config=f"/apis/{IEC_API_VERSION}/namespaces/{meta['namespace']}/{IEC_RESOURCE}/"
                        f"{meta['name']}")
