"""What a platform engineer must be able to trust, proven on every stack at once (issue 9): secrets never in
plain text, nothing exposed by default, weights retained and nothing bought unless asked, every rendered
object valid and scanned, and start-up budgets that outlast the load."""

import functools
import ipaddress
import json
import subprocess
from pathlib import Path
from typing import Any, Iterator

import pytest

from k3infra import offline, render
from k3infra.config import ConfigError
from k3infra.offline import Recording, Registration
from tests.validation import (
    crd_errors,
    embedded_pod_templates,
    has_kubernetes_schema,
    load,
    validate_kubernetes,
    write_template_pods,
)
from tests.support import STACKS, checkov_binary, plan

HF_TOKEN = "hf_SENTINEL0token0for0the0scan0k3"
API_KEY = "sk-SENTINEL0api0key0for0the0scan0k3"
PUBLIC = ("endpoint={exposure: public, allowedCidrs: [203.0.113.0/24]}",)
GATEWAY_REQUIRED = tuple(s for s in STACKS if s.endswith("-pd"))
"""Disaggregated stacks: their topology requires the gateway, which every platform has (config/topology.py)."""


def public_sets(stack: str) -> tuple[str, ...]:
    """The --set that makes a stack's endpoint public (keeping the gateway a disaggregated topology requires)."""
    if stack in GATEWAY_REQUIRED:
        return ("endpoint={exposure: public, allowedCidrs: [203.0.113.0/24], gateway: true}",)
    return PUBLIC
S3_KEY = "SENTINEL0s3secret0key0for0the0scan0k3"
SECRETS = (f"hfToken={HF_TOKEN}", f"apiKey={API_KEY}")
EXISTING_CLUSTER_SECRETS = ("s3AccessKeyId=SENTINEL0s3key0id", f"s3SecretAccessKey={S3_KEY}")
"""An existing cluster's S3-compatible store is read with access keys, which stack files never carry."""
KUBERNETES_STACKS = [s for s in STACKS if s not in ("alicloud-pai", "aws-hyperpod")]
EXISTING_CLUSTER_STACKS = [s for s in STACKS if s.startswith("kubernetes-")]
"""cloud kubernetes: k3infra creates no cluster and no bucket there."""
PUBLIC_STACKS = [s for s in STACKS if s != "aws-hyperpod"]  # HyperPod endpoints stay private (AWS rule)

WORKLOAD_TYPES = {
    "kubernetes:apps/v1:Deployment",
    "kubernetes:apps/v1:StatefulSet",
    "kubernetes:leaderworkerset.x-k8s.io/v1:LeaderWorkerSet",
}
BUCKET_TYPES = {
    "gcp:storage/bucket:Bucket",
    "aws:s3/bucket:Bucket",
    "azure-native:storage:StorageAccount",
    "azure-native:storage:BlobContainer",
    "alicloud:oss/bucket:Bucket",
}
PURCHASE_TYPES = {
    "aws:ec2/capacityBlockReservation:CapacityBlockReservation",
    "azure-native:compute:CapacityReservationGroup",
    "azure-native:compute:CapacityReservation",
    "alicloud:ecs/capacityReservation:CapacityReservation",
    "alicloud:ecs/elasticityAssurance:ElasticityAssurance",
    "gcp:compute/reservation:Reservation",
    "gcp:compute/futureReservation:FutureReservation",
}
INTERNAL_LB_ANNOTATIONS = {
    "networking.gke.io/load-balancer-type": "Internal",
    "service.beta.kubernetes.io/aws-load-balancer-internal": "true",
    "service.beta.kubernetes.io/azure-load-balancer-internal": "true",
    "service.beta.kubernetes.io/alibaba-cloud-loadbalancer-address-type": "intranet",
}


def bucket_of(rec: Recording) -> list[Registration]:
    """The weight bucket's registrations (the HyperPod operator's TLS bucket is not one)."""
    return [r for r in rec.ordered() if r.type in BUCKET_TYPES and "tls" not in r.name]


def walk(value: Any, path: str = "") -> Iterator[tuple[str, Any]]:
    if isinstance(value, dict):
        for k, v in value.items():
            yield from walk(v, f"{path}.{k}")
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            yield from walk(v, f"{path}[{i}]")
    else:
        yield path, value


# ------------------------------------------------------------------------------------------------- secrets


@functools.lru_cache(maxsize=None)
def rendered_text(stack: str, *sets: str) -> str:
    """Every rendered Kubernetes object of a plan, as one string."""
    return "\n".join(render.to_yaml(item) for item in render.apply_order(plan(stack, *sets).recording))


@pytest.mark.parametrize("variant", ["internal", "public"])
@pytest.mark.parametrize("stack", STACKS)
def test_secrets_never_appear_in_plain_text(stack: str, variant: str) -> None:
    if variant == "public" and stack not in PUBLIC_STACKS:
        pytest.skip("HyperPod endpoints cannot be public (config rule)")
    sets = SECRETS + (public_sets(stack) if variant == "public" else ()) + (
        EXISTING_CLUSTER_SECRETS if stack in EXISTING_CLUSTER_STACKS else ())
    p = plan(stack, *sets)
    text = json.dumps(p.to_json()) + rendered_text(stack, *sets) + "\n".join(p.recording.log_warnings)
    assert HF_TOKEN not in text and API_KEY not in text and S3_KEY not in text
    # The secrets were used (so the test can fail), and only ever inside a secret.
    raw = json.dumps([offline.unwrap(r.inputs) for r in p.recording.resources])
    masked = json.dumps([offline.plain(r.inputs) for r in p.recording.resources])
    if p.config.weights.sync:
        assert HF_TOKEN in raw
    if variant == "public":
        assert API_KEY in raw
    assert HF_TOKEN not in masked and API_KEY not in masked and S3_KEY not in masked
    if stack in EXISTING_CLUSTER_STACKS:
        assert S3_KEY in raw
        # The user's own kubeconfig is never handed back as an output.
        assert "kubeconfig" not in p.recording.outputs
        return
    kubeconfig = p.recording.outputs.get("kubeconfig")
    if stack in KUBERNETES_STACKS or stack == "aws-hyperpod":
        assert isinstance(kubeconfig, offline.Secret), f"{stack}: the kubeconfig output must be a secret"


# ------------------------------------------------------------------------------------------------ exposure


def _private(cidr: str) -> bool:
    return ipaddress.ip_network(cidr).is_private


def _internal_gateway(rec: Any, spec: dict) -> bool:
    """GKE's internal class, or the installed agentgateway (serving.gateway_install) whose Service is a ClusterIP by
    its parameters, or carries the cloud's internal annotation and admits private ranges only."""
    if spec["gatewayClassName"] == "gke-l7-rilb":
        return True
    infra = spec.get("infrastructure") or {}
    if spec["gatewayClassName"] != "agentgateway":
        return False
    ref = infra.get("parametersRef")
    if not ref:
        return False
    service = rec.one("kubernetes:agentgateway.dev/v1alpha1:AgentgatewayParameters", ref["name"]).inputs["spec"][
        "service"]["spec"]
    if service["type"] == "ClusterIP":
        return True
    ranges = service.get("loadBalancerSourceRanges") or []
    return any(infra.get("annotations", {}).get(k) == v for k, v in INTERNAL_LB_ANNOTATIONS.items()) \
        and bool(ranges) and all(_private(c) for c in ranges)


@pytest.mark.parametrize("stack", STACKS)
def test_nothing_is_public_by_default(stack: str) -> None:
    p = plan(stack)
    assert p.config.endpoint.exposure == "internal"
    for r in p.recording.ordered():
        if r.type == "kubernetes:core/v1:Service" and r.inputs.get("spec", {}).get("type") == "LoadBalancer":
            annotations = r.inputs["metadata"].get("annotations", {})
            assert any(annotations.get(k) == v for k, v in INTERNAL_LB_ANNOTATIONS.items()), \
                f"{stack}: {r.name} is a load balancer without its cloud's internal annotation"
            ranges = r.inputs["spec"].get("loadBalancerSourceRanges") or []
            assert ranges and all(_private(c) for c in ranges), f"{stack}: {r.name} admits {ranges}"
        if r.type == "kubernetes:core/v1:Service":
            assert r.inputs.get("spec", {}).get("type") != "NodePort", f"{stack}: {r.name} is a NodePort"
        if r.type == "kubernetes:gateway.networking.k8s.io/v1:Gateway":
            # an existing cluster's declared class (kubernetes.gatewayClass) is internal or not as that class makes it
            declared = p.config.kubernetes.gateway_class if p.config.kubernetes else None
            assert r.inputs["spec"]["gatewayClassName"] == declared or _internal_gateway(p.recording, r.inputs["spec"]), (
                f"{stack}: {r.name} is not internal")
        for path, value in walk(r.inputs):
            if value == "0.0.0.0/0":
                # Only egress routes to a NAT or internet gateway may name the whole internet.
                assert r.type == "aws:ec2/routeTable:RouteTable" and ".routes[" in path, \
                    f"{stack}: {r.type} {r.name}{path}"
            if path.endswith(("associatePublicIpAddress", "enableNodePublicIp", "mapPublicIpOnLaunch")) and value is True:
                assert r.type == "aws:ec2/subnet:Subnet" and "public" in r.name, f"{stack}: {r.type} {r.name}{path}"


def test_the_one_exception_is_pai_eas_shared_gateway_and_the_plan_says_so() -> None:
    """EAS's shared gateway always serves a service on the internet too (token-guarded); pulumi-alicloud has no
    dedicated-gateway resource that could turn it off, so the stack says so instead of hiding it."""
    p = plan("alicloud-pai")
    assert any("shared gateway also serves the service on the internet" in w for w in p.warnings)
    assert p.recording.outputs["endpoint"] != p.recording.outputs["publicEndpoint"]
    assert ".vpc." in p.recording.outputs["endpoint"]


@pytest.mark.parametrize("stack", KUBERNETES_STACKS)
def test_gpu_nodes_have_no_public_addresses(stack: str) -> None:
    rec = plan(stack).recording
    if stack.startswith("gcp"):
        cluster = rec.one("gcp:container/cluster:Cluster").inputs
        assert cluster["privateClusterConfig"]["enablePrivateNodes"] is True
    elif stack.startswith("aws"):
        subnets = {r.outputs.get("id", r.name): r for r in rec.by_type("aws:ec2/subnet:Subnet")}
        group = rec.one("aws:eks/nodeGroup:NodeGroup", next(r.name for r in rec.by_type("aws:eks/nodeGroup:NodeGroup")
                                                             if "gpu" in r.name))
        assert all("public" not in (subnets[s].name if s in subnets else s) for s in group.inputs["subnetIds"])
    elif stack.startswith("azure"):
        for pool in rec.by_type("azure-native:containerservice:AgentPool"):
            assert not pool.inputs.get("enableNodePublicIP")
    else:
        for pool in rec.by_type("alicloud:cs/nodePool:NodePool"):
            assert not pool.inputs.get("internetMaxBandwidthOut"), f"{pool.name} has a public IP"


@pytest.mark.parametrize("stack", PUBLIC_STACKS)
def test_public_exposure_is_restricted_to_the_allowed_cidrs(stack: str) -> None:
    rec = plan(stack, *SECRETS, *public_sets(stack)).recording
    if stack == "alicloud-pai":
        return  # EAS: the token guards it (see the exception above)
    services = [r for r in rec.by_type("kubernetes:core/v1:Service") if r.inputs["spec"].get("type") == "LoadBalancer"]
    gateways = rec.by_type("kubernetes:gateway.networking.k8s.io/v1:Gateway")
    assert services or gateways, f"{stack}: a public endpoint needs a load balancer or gateway"
    for s in services:
        assert s.inputs["spec"]["loadBalancerSourceRanges"] == ["203.0.113.0/24"]
    for params in rec.by_type("kubernetes:agentgateway.dev/v1alpha1:AgentgatewayParameters"):
        # the installed gateway's Service (serving.gateway_install): the allowed CIDRs, enforced
        assert params.inputs["spec"]["service"]["spec"]["loadBalancerSourceRanges"] == ["203.0.113.0/24"], stack


# ----------------------------------------------------------------------------------------------- retention


@pytest.mark.parametrize("stack", STACKS)
def test_weights_are_retained_by_default_and_the_plan_says_so(stack: str) -> None:
    p = plan(stack)
    buckets = bucket_of(p.recording)
    if stack in EXISTING_CLUSTER_STACKS:
        # No bucket is created, so none can be deleted; the plan says where the weights stay.
        assert not buckets and "stay in s3://" in " ".join(p.recording.outputs["billingAfterDestroy"])
    else:
        assert buckets, f"{stack}: no weight bucket found"
    for b in buckets:
        assert b.retain_on_delete, f"{stack}: {b.type} {b.name} is deleted by `pulumi destroy`"
        assert not b.inputs.get("forceDestroy")
    notes = " ".join(p.recording.outputs["billingAfterDestroy"])
    assert "1.56 TB" in notes or "1,560 GB" in notes, f"{stack}: the plan does not say the weights stay"
    assert not any(r.type in PURCHASE_TYPES for r in p.recording.resources), f"{stack}: buys capacity by default"


@pytest.mark.parametrize("stack", STACKS)
def test_opting_out_makes_the_bucket_deletable(stack: str) -> None:
    if stack in EXISTING_CLUSTER_STACKS:
        with pytest.raises(ConfigError, match="k3infra:weights.retainOnDestroy"):
            plan(stack, "weights.retainOnDestroy=false")
        return
    p = plan(stack, "weights.retainOnDestroy=false")
    for b in bucket_of(p.recording):
        assert not b.retain_on_delete, f"{stack}: {b.name} still retained after opting out"
    assert any("deletes the bucket" in w for w in p.warnings)


@pytest.mark.parametrize(
    "stack, sets, bought",
    [
        ("aws-eks", ("capacity={type: capacity-block, purchase: true, durationHours: 168, startAfter: 2026-12-01, "
                     "endBefore: 2026-12-15}",), {"aws:ec2/capacityBlockReservation:CapacityBlockReservation"}),
        ("azure-gb300", ("capacity={type: capacity-reservation-group, create: true}",),
         {"azure-native:compute:CapacityReservationGroup", "azure-native:compute:CapacityReservation"}),
    ],
)
def test_purchases_only_when_asked_and_listed_in_the_plan(stack: str, sets: tuple[str, ...], bought: set[str]) -> None:
    p = plan(stack, *sets)
    assert {r.type for r in p.recording.resources} & PURCHASE_TYPES == bought
    assert any("non-refundable" in w or "bill from creation" in w for w in p.warnings)
    assert p.recording.outputs["billingAfterDestroy"]


# --------------------------------------------------------------------------------------------- long loads


def _probe_budget(container: dict[str, Any]) -> int:
    probe = container["startupProbe"]
    return probe.get("initialDelaySeconds", 0) + probe["failureThreshold"] * probe["periodSeconds"]


def _engine_containers(r: Registration) -> list[dict[str, Any]]:
    spec = r.inputs["spec"]
    if r.type.endswith("LeaderWorkerSet"):
        lwt = spec["leaderWorkerTemplate"]
        templates = [t for t in (lwt.get("leaderTemplate"), lwt.get("workerTemplate")) if t]
    else:
        templates = [spec["template"]]
    return [c for t in templates for c in t["spec"]["containers"] if "startupProbe" in c]


@pytest.mark.parametrize("stack", STACKS)
def test_start_up_budgets_outlast_the_load(stack: str) -> None:
    p = plan(stack)
    s = p.config.sizing
    load = s.load.seconds
    rec = p.recording
    if stack == "aws-hyperpod":
        iec = rec.one("kubernetes:inference.sagemaker.aws.amazon.com/v1:InferenceEndpointConfig").inputs["spec"]
        assert iec["maxDeployTimeInSeconds"] >= s.await_timeout_seconds > load
        startup = iec["worker"]["probes"]["startupProbe"]
        assert startup["failureThreshold"] * startup["periodSeconds"] >= s.probe_budget_seconds > load
        return
    if stack == "alicloud-pai":
        service = rec.one("alicloud:pai/service:Service")
        config = json.loads(offline.unwrap(service.inputs["serviceConfig"]))
        probe = config["containers"][0]["startup_check"]
        assert int(service.custom_timeouts["create"].rstrip("s")) >= s.await_timeout_seconds > load
        assert probe["failure_threshold"] * probe["period_seconds"] >= s.probe_budget_seconds > load
        return
    workloads = [r for r in rec.ordered() if r.type in WORKLOAD_TYPES]
    # A topology's roles: one workload each, with the role's own budget (issue 37); else the one workload.
    roles = {f"k3-{r.name}-workload": r for r in (s.topology.roles if s.topology else ())}
    assert len(workloads) == (len(roles) or 1), f"{stack}: {[w.name for w in workloads]}"
    for w in workloads:
        role = roles.get(w.name)
        budget = role.probe_budget_seconds if role else s.probe_budget_seconds
        role_load = role.load_seconds if role else load
        containers = _engine_containers(w)
        assert containers
        for c in containers:
            assert _probe_budget(c) >= budget > role_load, f"{stack}: start-up probe budget below the sizing"
        annotations = w.inputs["metadata"]["annotations"]
        assert int(annotations["pulumi.com/timeoutSeconds"]) >= (budget if role else s.await_timeout_seconds)
        if w.custom and not role:
            assert int(w.custom_timeouts["create"].rstrip("s")) >= s.await_timeout_seconds


# ------------------------------------------------------------------------------ schemas and the scanner


@pytest.fixture(scope="module")
def rendered_stacks(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[Path]]:
    root = tmp_path_factory.mktemp("stacks")
    return {stack: render.write(plan(stack).recording, root / stack) for stack in KUBERNETES_STACKS + ["aws-hyperpod"]}


UNPUBLISHED_CRDS = {
    ("networking.gke.io/v1", "Network"): "GKE multi-networking, installed and managed by GKE",
    ("networking.gke.io/v1", "GKENetworkParamSet"): "GKE multi-networking, installed and managed by GKE",
}
"""Kinds whose CRD has no public YAML (see schemas/crds/SOURCES.md); tests/gcp asserts their fields."""


@pytest.mark.parametrize("stack", KUBERNETES_STACKS + ["aws-hyperpod"])
def test_every_rendered_object_validates(rendered_stacks: dict[str, list[Path]], stack: str) -> None:
    files = rendered_stacks[stack]
    assert files
    for f in files:
        if f.name.endswith(".chart.yaml"):
            continue
        doc = load(f)
        if has_kubernetes_schema(doc):
            validate_kubernetes(doc)
        elif (doc["apiVersion"], doc["kind"]) not in UNPUBLISHED_CRDS:
            assert crd_errors(doc) == [], f"{stack}: {f.name}"
        for role, template in embedded_pod_templates(doc):
            validate_kubernetes(template)


# ------------------------------------------------------------------------------------------ DRA claim wiring

MANAGED_DEVICE_CLASSES = {
    "mrdma.google.com": "GKE managed DRANET (node label cloud.google.com/gke-networking-dra-driver=true)",
}
"""DeviceClasses the platform installs, so no stack renders them."""

MNNVL_STACKS = ("gcp-a4xmax", "azure-gb300")
"""The stacks whose default layout runs tensor parallelism over multi-node NVLink."""


def _pod_templates(doc: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    spec = doc.get("spec") or {}
    if doc.get("kind") == "LeaderWorkerSet":
        lwt = spec["leaderWorkerTemplate"]
        yield from ((role, lwt[role]) for role in ("leaderTemplate", "workerTemplate") if role in lwt)
    elif doc.get("kind") == "CronJob":
        yield "template", spec["jobTemplate"]["spec"]["template"]
    elif isinstance(spec.get("template"), dict) and "spec" in spec["template"]:
        yield "template", spec["template"]


def claim_wiring(docs: list[dict[str, Any]]) -> list[str]:
    """What does not resolve: a container claim the pod does not declare, a pod claim no container uses, a claim
    template the stack neither renders nor has a ComputeDomain generate, a DeviceClass nobody provides."""
    templates = {(d["metadata"].get("namespace"), d["metadata"]["name"]) for d in docs
                 if d["kind"] == "ResourceClaimTemplate"}
    generated = {(d["metadata"].get("namespace"), d["spec"]["channel"]["resourceClaimTemplate"]["name"]) for d in docs
                 if d["kind"] == "ComputeDomain"}
    classes = {d["metadata"]["name"] for d in docs if d["kind"] == "DeviceClass"} | set(MANAGED_DEVICE_CLASSES)
    problems = []
    for d in docs:
        ns = d["metadata"].get("namespace")
        for role, tmpl in _pod_templates(d):
            where = f"{d['kind']} {d['metadata']['name']} {role}"
            declared = {c["name"]: c.get("resourceClaimTemplateName") for c in tmpl["spec"].get("resourceClaims", [])}
            used = {c["name"] for ctr in tmpl["spec"]["containers"] for c in (ctr.get("resources") or {}).get("claims", [])}
            problems += [f"{where}: container claim {n} is not in resourceClaims" for n in sorted(used - declared.keys())]
            problems += [f"{where}: resourceClaims {n} is claimed by no container" for n in sorted(declared.keys() - used)]
            problems += [f"{where}: {n} names template {t}, which no object in {ns} is or generates"
                         for n, t in sorted(declared.items()) if (ns, t) not in templates | generated]
        if d["kind"] == "ResourceClaimTemplate":
            for r in d["spec"]["spec"]["devices"]["requests"]:
                if r["exactly"]["deviceClassName"] not in classes:
                    problems.append(f"ResourceClaimTemplate {d['metadata']['name']}: DeviceClass "
                                    f"{r['exactly']['deviceClassName']} is neither rendered nor managed")
    return problems


@pytest.mark.parametrize("stack", KUBERNETES_STACKS)
def test_every_claim_resolves_to_what_the_stack_renders(rendered_stacks: dict[str, list[Path]], stack: str) -> None:
    docs = [load(f) for f in rendered_stacks[stack] if not f.name.endswith(".chart.yaml")]
    assert claim_wiring(docs) == []


def test_claim_wiring_check_can_fail() -> None:
    pod = {"containers": [{"name": "engine", "resources": {"claims": [{"name": "rdma"}, {"name": "ghost"}]}}],
           "resourceClaims": [{"name": "rdma", "resourceClaimTemplateName": "k3-server-rdma"},
                              {"name": "unused", "resourceClaimTemplateName": "k3-server-rdma"}]}
    docs = [{"kind": "Deployment", "metadata": {"name": "d", "namespace": "n"}, "spec": {"template": {"spec": pod}}},
            {"kind": "ResourceClaimTemplate", "metadata": {"name": "k3-server-rdma", "namespace": "other"},
             "spec": {"spec": {"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": "nope"}}]}}}}]
    assert claim_wiring(docs) == [
        "Deployment d template: container claim ghost is not in resourceClaims",
        "Deployment d template: resourceClaims unused is claimed by no container",
        "Deployment d template: rdma names template k3-server-rdma, which no object in n is or generates",
        "Deployment d template: unused names template k3-server-rdma, which no object in n is or generates",
        "ResourceClaimTemplate k3-server-rdma: DeviceClass nope is neither rendered nor managed",
    ]


def controller_collisions(docs: list[dict[str, Any]]) -> list[str]:
    """Objects a controller will create under a name the stack already renders.

    The LWS controller (v0.10.0) makes, per LeaderWorkerSet N of R groups, a headless Service N
    (``reconcileHeadlessServices``; an existing Service N is adopted as it is, so the leader's DNS name
    ``<leader>.N.<ns>`` never exists) and StatefulSets N and N-0..N-(R-1).
    """
    rendered = {(d["kind"], d["metadata"].get("namespace"), d["metadata"]["name"]) for d in docs}
    problems = []
    for d in docs:
        if d["kind"] != "LeaderWorkerSet":
            continue
        ns, n = d["metadata"].get("namespace"), d["metadata"]["name"]
        made = [("Service", ns, n), ("StatefulSet", ns, n)]
        made += [("StatefulSet", ns, f"{n}-{i}") for i in range(d["spec"].get("replicas", 1))]
        problems += [f"LeaderWorkerSet {n}: its controller's {k} {m} is already a rendered object"
                     for k, _, m in made if (k, ns, m) in rendered]
    return problems


@pytest.mark.parametrize("stack", KUBERNETES_STACKS)
def test_no_rendered_object_takes_a_name_a_controller_will_create(rendered_stacks: dict[str, list[Path]],
                                                                   stack: str) -> None:
    docs = [load(f) for f in rendered_stacks[stack] if not f.name.endswith(".chart.yaml")]
    assert controller_collisions(docs) == []


def test_the_controller_name_check_can_fail() -> None:
    docs = [{"kind": "Service", "metadata": {"name": "k3-server", "namespace": "n"}},
            {"kind": "LeaderWorkerSet", "metadata": {"name": "k3-server", "namespace": "n"}, "spec": {"replicas": 1}}]
    assert controller_collisions(docs) == [
        "LeaderWorkerSet k3-server: its controller's Service k3-server is already a rendered object"]


@pytest.mark.parametrize("stack", MNNVL_STACKS)
def test_mnnvl_stacks_render_the_dra_driver_a_compute_domain_per_group_and_both_claims(
        rendered_stacks: dict[str, list[Path]], stack: str) -> None:
    files = rendered_stacks[stack]
    charts = [load(f) for f in files if f.name.endswith(".chart.yaml")]
    docs = [load(f) for f in files if not f.name.endswith(".chart.yaml")]
    assert [(c["chart"], c["repository"], c["version"]) for c in charts if c["chart"].startswith("nvidia-dra")] == [
        ("nvidia-dra-driver-gpu", "https://helm.ngc.nvidia.com/nvidia", "25.12.0")]
    def of(instance: str) -> list[dict]:
        return [d for d in docs if d["kind"] == "ComputeDomain" and d["metadata"]["labels"][
            "app.kubernetes.io/instance"] == instance]
    domains = of("k3-server")
    groups = [d for d in docs if d["kind"] == "LeaderWorkerSet"]
    p = plan(stack)
    assert len(domains) == p.config.replicas == sum(g["spec"]["replicas"] for g in groups)
    assert len(of("k3-fabric")) == p.config.replicas  # the fabric check's own, one per group it checks
    assert [d["spec"]["numNodes"] for d in domains] == [0] * p.config.replicas  # deprecated in v25.12.0: 0
    for g in groups:
        for role, tmpl in _pod_templates(g):
            names = [c["name"] for c in tmpl["spec"]["resourceClaims"]]
            assert names == ["rdma", "nvlink-channel"], f"{stack} {role}"
            engine = tmpl["spec"]["containers"][0]
            assert "IPC_LOCK" in engine["securityContext"]["capabilities"]["add"]
    # the namespace admits what the engine container adds
    ns = next(d for d in docs if d["kind"] == "Namespace" and d["metadata"]["name"] == p.config.namespace)
    assert ns["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "privileged"
    assert not [w for w in p.warnings if "MNNVL" in w or "must be exposed" in w]


@pytest.mark.parametrize("stack", MNNVL_STACKS)
def test_the_pipeline_fallback_renders_no_compute_domain_and_states_its_mode(stack: str) -> None:
    p = plan(stack, "tensorParallel=4", "pipelineParallel=2")
    kinds = {r.type.rsplit(":", 1)[-1] for r in p.recording.resources}
    assert "ComputeDomain" not in kinds
    assert not [r for r in p.recording.by_type("kubernetes:helm.sh/v4:Chart") if r.inputs["chart"] == "nvidia-dra-driver-gpu"]
    assert p.config.sizing.as_dict()["layout"]["mode"] == "pipeline-across-nodes"
    assert [w for w in p.warnings if w.startswith("parallel layout: TP=4 x PP=2") and "ESTIMATE" in w]
    docs = [r.document for r in render.apply_order(p.recording) if not r.chart]
    assert claim_wiring(docs) == []
    for d in docs:
        if has_kubernetes_schema(d):
            validate_kubernetes(d)
        else:
            assert crd_errors(d) == [], d["metadata"]["name"]
        for _, template in embedded_pod_templates(d):
            validate_kubernetes(template)


@pytest.mark.parametrize("stack", KUBERNETES_STACKS)
def test_a_stack_that_renders_dra_objects_requires_a_kubernetes_that_serves_them(stack: str) -> None:
    """resource.k8s.io/v1 is served from 1.34: a stack rendering it refuses an older cluster version."""
    p = plan(stack)
    if not any(r.type.startswith("kubernetes:resource.k8s.io/v1:") for r in p.recording.resources):
        return
    with pytest.raises(ConfigError) as e:
        plan(stack, 'cluster.kubernetesVersion="1.33"')
    assert "k3infra:cluster.kubernetesVersion" in {problem.key for problem in e.value.problems}


def test_checkov_passes_every_stack_or_skips_with_a_written_reason(rendered_stacks: dict[str, list[Path]]) -> None:
    """checkov over every rendered object and, as Pods, the pod templates inside every LeaderWorkerSet
    (HyperPod's InferenceEndpointConfig has no pod template: its worker is a container spec the operator
    expands)."""
    root = next(iter(rendered_stacks.values()))[0].parent.parent
    templates = {s: write_template_pods(files, root / f"{s}-templates") for s, files in rendered_stacks.items()}
    assert templates["gcp-a4xmax"] and templates["azure-gb300"] and templates["alicloud-ack"]
    proc = subprocess.run([checkov_binary(), "-d", str(root), "--framework", "kubernetes", "-o", "json", "--compact",
                           "--skip-download"], capture_output=True, text=True, timeout=600)
    assert proc.stdout.strip(), proc.stderr[-2000:]
    reports = json.loads(proc.stdout)
    report = reports if isinstance(reports, dict) else next(r for r in reports if r["check_type"] == "kubernetes")
    failed = report["results"].get("failed_checks", [])
    assert not failed, "\n".join(f"{c['check_id']} {c['resource']} {c['file_path']}" for c in failed)
    skipped = report["results"]["skipped_checks"]
    for c in skipped:
        reason = (c.get("check_result") or {}).get("suppress_comment") or ""
        assert len(reason) > 20, f"{c['check_id']} on {c['resource']} is skipped without a reason"
    summary = report["summary"]
    assert summary["parsing_errors"] == 0
    scanned = {c["file_path"] for c in report["results"]["passed_checks"]}
    assert all(any(str(p).endswith(f) for f in scanned) for ps in templates.values() for p in ps)
    counts: dict[str, list[int]] = {}
    for kind, i in (("passed_checks", 0), ("failed_checks", 1), ("skipped_checks", 2)):
        for c in report["results"].get(kind, []):
            stack = c["file_path"].strip("/").split("/")[0].removesuffix("-templates")
            counts.setdefault(stack, [0, 0, 0])[i] += 1
    for stack, (passed, failed, skipped) in sorted(counts.items()):
        print(f"checkov {stack}: {passed} passed, {failed} failed, {skipped} skipped")
    print(f"checkov over {len(rendered_stacks)} stacks: {summary['passed']} passed, {summary['skipped']} skipped "
          f"with a reason, {summary['failed']} failed")


# ------------------------------------------------------------------------------------------------- drift


def test_a_renamed_component_keeps_its_resources_through_an_alias() -> None:
    """Renaming a component with an alias to its old name moves every child (the engine gives children the
    parent's aliases, renaming their parent-name prefix); nothing is replaced, added or removed."""
    import pulumi

    from k3infra import plandiff
    from k3infra.gcp.bucket import GcsWeightBucket
    from tests.support import record

    args = {"bucket_name": "my-weights", "project": "my-project", "workload_pool": "my-project.svc.id.goog",
            "location": "us-central1", "namespace": "kimi-k3", "model_subpath": "models/moonshotai/Kimi-K3"}

    def as_plan(rec: Recording) -> dict[str, Any]:
        return {"stack": "test", "resources": [r.to_json() for r in rec.ordered()], "outputs": {}, "warnings": []}

    old = record(lambda: GcsWeightBucket("weights", dict(args)))
    renamed = record(lambda: GcsWeightBucket("model-weights", dict(args),
                                             pulumi.ResourceOptions(aliases=[pulumi.Alias(name="weights")])))
    unaliased = record(lambda: GcsWeightBucket("model-weights", dict(args)))
    old_urns = [r.urn for r in old.ordered()]
    assert [r.aliases for r in renamed.ordered()] == [(u,) for u in old_urns]

    moved = plandiff.diff_plans(as_plan(old), as_plan(renamed))
    assert [(d.kind, d.name, d.reason) for d in moved.resources] == [
        (plandiff.Kind.CHANGE, name, "moved; aliased to its old URN")
        for name in ("model-weights", "model-weights-bucket", "model-weights-reader", "model-weights-writer")]
    assert [d.base_urn for d in moved.resources] == old_urns

    lost = plandiff.diff_plans(as_plan(old), as_plan(unaliased))
    assert (lost.count(plandiff.Kind.ADD), lost.count(plandiff.Kind.REMOVE)) == (4, 4)
