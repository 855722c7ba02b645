"""The guardrails of the policy pack (``policies/``), as plain functions over resources.

A platform team enforces these on any program, whether it uses k3infra's components or not:

- ``gpu-pool-consumes-reservation``: a GPU pool on a reservation-only or quota-gated SKU (the catalog's
  ``capacity_types`` / ``quota_family``) consumes a named reservation; a pool that says it runs on reserved
  capacity (EKS ``CAPACITY_BLOCK``, a ``capacity-block`` launch template) names it.
- ``weight-bucket-private-encrypted``: buckets cannot be read anonymously and are encrypted at rest.
- ``public-endpoint-restricted``: a public LoadBalancer Service has allowed source CIDRs (not the whole
  internet) and the pods behind it require an API key.
- ``startup-budget-covers-load``: an inference server is not killed before its weights can have loaded: the
  start-up probe's budget (or the liveness probe's, without one) is at least the catalog's load estimate at the
  optimistic end of the loader's stated range plus the engine's warm-up. (The rule sees a manifest, not the
  machine: k3infra's own budgets come from the machine's NIC and the bucket's limits, catalog.loaders, which the
  rule cannot read; below the loader's fastest stated rate any budget kills every load.)
- ``nvl72-pool-within-rack``: a pool of an NVL72-rack SKU (A4X Max, ND GB300 v6) holds at most one rack's
  nodes (18), and on GKE is pinned to one reservation sub-block or a compact placement.
- ``least-privilege-iam``: IAM k3infra-style programs create is scoped: no ``*`` or ``service:*`` actions, no
  object writes on ``*``, no owner/administrator/basic roles or administrator managed policies, nothing
  granted to ``allUsers``. (AWS's own controller policies that need ``Resource: "*"`` for named control-plane
  actions pass: the rule targets wildcards in actions and data writes.)
- ``role-permissions-before-use``: whatever takes an IAM role (a node group, an add-on, a pod identity association,
  an EKS or HyperPod cluster) depends, directly or through others, on every policy attached to that role, so the
  role's permissions exist before it is used and are removed only after it is gone (pulumi-aws ``eks.NodeGroup``:
  "Ensure that IAM Role permissions are created before and deleted after EKS Node Group handling").
- ``capacity-purchase-flagged``: an EC2 Capacity Block purchase (non-refundable) or an Azure capacity
  reservation (billed from creation) is flagged (advisory: the stack asked for it explicitly).

Each rule sees :class:`Resource` values: built by ``policies/__main__.py`` from pulumi-policy's arguments,
and by the tests from the recording engine's registrations. Properties are the engine's camelCase names.
A rule returns violations; it never raises for a missing property.
"""

import ipaddress
import json
import re
from dataclasses import dataclass, field
from enum import StrEnum
from fractions import Fraction
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence

from .catalog import ACCELERATORS, ENGINES, LOADER_PROFILES, MODELS, Accelerator, CapacityType, EngineName, Loader, Model
from .catalog import distribution
from .catalog.assumptions import GCS_FUSE_RANGE_READ_OPTION
from .sizing import load_estimate

# ---------------------------------------------------------------------------------------------------------
# what a rule sees


class _Unknown:
    """A value known only after ``pulumi up`` (a preview of a resource not yet created)."""

    def __repr__(self) -> str:
        return "(known after apply)"

    def __bool__(self) -> bool:
        return True  # it will be set: a rule that only needs a value to be present is satisfied


UNKNOWN = _Unknown()
"""Stands for a value unknown during preview (``policies/__main__.py`` replaces pulumi-policy's sentinels)."""


@dataclass(frozen=True)
class Resource:
    """One resource as a rule sees it."""

    type: str
    name: str
    urn: str
    props: Mapping[str, Any]
    """Inputs (resource validation) or outputs (stack validation), camelCase."""
    dependencies: tuple[str, ...] = ()
    """URNs this resource depends on (explicitly or through its inputs)."""


@dataclass(frozen=True)
class Violation:
    """A rule broken by a resource (or by the stack, when ``urn`` is None)."""

    policy: str
    message: str
    urn: str | None


class Enforcement(StrEnum):
    """What a violation does to ``pulumi preview`` / ``up`` (pulumi-policy's enforcement levels)."""

    MANDATORY = "mandatory"
    ADVISORY = "advisory"


Check = Callable[[Sequence[Resource], Mapping[str, Any]], Iterable[tuple[str, str | None]]]


@dataclass(frozen=True)
class Rule:
    """One policy: a name, what it enforces, and the check (over the whole stack)."""

    name: str
    description: str
    enforcement: Enforcement
    check: Check
    config_schema: Mapping[str, Any] = field(default_factory=dict)
    """JSON-schema properties of the policy's configuration (pulumi-policy ``PolicyConfigSchema``)."""


def get(props: Any, path: str, default: Any = None) -> Any:
    """``get(props, "nodeConfig.reservationAffinity.values")``: None-safe nested lookup."""
    cur = props
    for part in path.split("."):
        if isinstance(cur, Mapping) and part in cur:
            cur = cur[part]
        else:
            return default
    return default if cur is None else cur


def _list(v: Any) -> list[Any]:
    return list(v) if isinstance(v, (list, tuple)) else []


def _int(v: Any, default: int) -> int:
    try:
        return int(v)
    except (TypeError, ValueError):
        return default


# ---------------------------------------------------------------------------------------------------------
# gpu-pool-consumes-reservation


def gated_skus(config: Mapping[str, Any]) -> dict[str, str]:
    """SKU → why it needs a reservation: reservation-only or quota-gated in the catalog, plus ``extraSkus``."""
    out: dict[str, str] = {}
    for sku, a in ACCELERATORS.items():
        if CapacityType.ON_DEMAND not in a.capacity_types:
            out[sku] = "is sold only through reservations"
        elif a.quota_family:
            out[sku] = f"is quota-gated ({a.quota_family})"
    for sku in _list(config.get("extraSkus")):
        out.setdefault(str(sku), "is listed in this policy's extraSkus")
    return out


def _gke_pool(r: Resource, gated: Mapping[str, str]) -> Iterator[str]:
    sku = get(r.props, "nodeConfig.machineType")
    if sku not in gated:
        return
    affinity = get(r.props, "nodeConfig.reservationAffinity", {})
    values = [v for v in _list(get(affinity, "values")) if v]
    if get(affinity, "consumeReservationType") != "SPECIFIC_RESERVATION" or not values:
        yield (f"GKE node pool {r.name}: {sku} {gated[sku]}; set nodeConfig.reservationAffinity to "
               f"consumeReservationType SPECIFIC_RESERVATION with the reservation path in values (given: "
               f"{get(affinity, 'consumeReservationType') or 'no reservation affinity'})")


def _aks_pool(r: Resource, pool: Mapping[str, Any], label: str, gated: Mapping[str, str]) -> Iterator[str]:
    sku = get(pool, "vmSize")
    if sku in gated and not get(pool, "capacityReservationGroupID"):
        yield (f"AKS {label}: {sku} {gated[sku]}; set capacityReservationGroupID to the capacity reservation "
               "group that holds its reservation")


def _launch_template(r: Resource, gated: Mapping[str, str]) -> Iterator[str]:
    sku = get(r.props, "instanceType")
    market = get(r.props, "instanceMarketOptions.marketType")
    target = get(r.props, "capacityReservationSpecification.capacityReservationTarget", {})
    named = get(target, "capacityReservationId") or get(target, "capacityReservationResourceGroupArn")
    if market == "capacity-block" and not named:
        yield (f"launch template {r.name}: market type capacity-block without "
               "capacityReservationSpecification.capacityReservationTarget: name the Capacity Block (cr-...)")
    elif sku in gated and not named:
        yield (f"launch template {r.name}: {sku} {gated[sku]}; target the reservation with "
               "capacityReservationSpecification.capacityReservationTarget")


def _eks_node_group(r: Resource, by_urn: Mapping[str, Resource], gated: Mapping[str, str]) -> Iterator[str]:
    capacity = get(r.props, "capacityType")
    skus = [s for s in _list(get(r.props, "instanceTypes")) if s in gated]
    if capacity == "CAPACITY_BLOCK":
        templates = [by_urn[u] for u in r.dependencies if u in by_urn and by_urn[u].type == "aws:ec2/launchTemplate:LaunchTemplate"]
        if not get(r.props, "launchTemplate") or not templates:
            yield (f"EKS node group {r.name}: capacityType CAPACITY_BLOCK needs a launch template that targets "
                   "the Capacity Block (launchTemplate with capacityReservationSpecification)")
    elif skus:
        yield (f"EKS node group {r.name}: {skus[0]} {gated[skus[0]]}; use capacityType CAPACITY_BLOCK with a "
               "launch template that targets the reservation")


def _hyperpod(r: Resource, gated: Mapping[str, str]) -> Iterator[str]:
    for group in _list(get(r.props, "instanceGroups")):
        sku = get(group, "instanceType")
        if sku in gated and not get(group, "trainingPlanArn"):
            yield (f"HyperPod cluster {r.name}, instance group {get(group, 'instanceGroupName')}: {sku} "
                   f"{gated[sku]}; set trainingPlanArn")


def _ack_pool(r: Resource, gated: Mapping[str, str]) -> Iterator[str]:
    skus = [s for s in _list(get(r.props, "instanceTypes")) if s in gated]
    if not skus:
        return
    private = get(r.props, "privatePoolOptions.privatePoolOptionsId") or \
        _list(get(r.props, "resourcePoolOptions.privatePoolIds"))
    lingjun = get(r.props, "type") == "lingjun" and get(r.props, "efloNodeGroup.groupId")
    if not (private or lingjun):
        yield (f"ACK node pool {r.name}: {skus[0]} {gated[skus[0]]}; set privatePoolOptions (Target) or "
               "resourcePoolOptions.privatePoolIds, or run it as a Lingjun pool (type lingjun, efloNodeGroup)")


def check_gpu_reservation(resources: Sequence[Resource], config: Mapping[str, Any]) -> Iterator[tuple[str, str | None]]:
    """Rule ``gpu-pool-consumes-reservation``."""
    gated = gated_skus(config)
    by_urn = {r.urn: r for r in resources}
    for r in resources:
        if r.type == "gcp:container/nodePool:NodePool":
            msgs: Iterable[str] = _gke_pool(r, gated)
        elif r.type == "azure-native:containerservice:AgentPool":
            msgs = _aks_pool(r, r.props, f"agent pool {r.name}", gated)
        elif r.type == "azure-native:containerservice:ManagedCluster":
            msgs = [m for p in _list(get(r.props, "agentPoolProfiles"))
                    for m in _aks_pool(r, p, f"cluster {r.name}, pool {get(p, 'name')}", gated)]
        elif r.type == "aws:ec2/launchTemplate:LaunchTemplate":
            msgs = _launch_template(r, gated)
        elif r.type == "aws:eks/nodeGroup:NodeGroup":
            msgs = _eks_node_group(r, by_urn, gated)
        elif r.type == "aws-native:sagemaker:Cluster":
            msgs = _hyperpod(r, gated)
        elif r.type == "alicloud:cs/nodePool:NodePool":
            msgs = _ack_pool(r, gated)
        else:
            continue
        for m in msgs:
            yield m, r.urn


# ---------------------------------------------------------------------------------------------------------
# weight-bucket-private-encrypted

PUBLIC_MEMBERS = ("allUsers", "allAuthenticatedUsers")


def _refers_to(r: Resource, bucket: Resource, *names: Any) -> bool:
    """A resource configures ``bucket``: it depends on it, or names it by one of its names."""
    target = get(r.props, "bucket") or get(r.props, "accountName")
    return bucket.urn in r.dependencies or (target is not None and target in [n for n in names if n])


def check_buckets(resources: Sequence[Resource], _config: Mapping[str, Any]) -> Iterator[tuple[str, str | None]]:
    """Rule ``weight-bucket-private-encrypted``."""
    by_type: dict[str, list[Resource]] = {}
    for r in resources:
        by_type.setdefault(r.type, []).append(r)

    def related(kind: str, bucket: Resource, *names: Any) -> list[Resource]:
        return [x for x in by_type.get(kind, []) if _refers_to(x, bucket, *names)]

    for b in by_type.get("gcp:storage/bucket:Bucket", []):
        if get(b.props, "publicAccessPrevention") != "enforced":
            yield (f"GCS bucket {b.name}: set publicAccessPrevention \"enforced\" (given: "
                   f"{get(b.props, 'publicAccessPrevention') or 'inherited'})"), b.urn
        if get(b.props, "uniformBucketLevelAccess") is not True:
            yield f"GCS bucket {b.name}: set uniformBucketLevelAccess true (no per-object ACLs)", b.urn
        for kind in ("gcp:storage/bucketIAMMember:BucketIAMMember", "gcp:storage/bucketIAMBinding:BucketIAMBinding"):
            for m in related(kind, b, get(b.props, "name")):
                members = [get(m.props, "member")] + _list(get(m.props, "members"))
                public = [x for x in members if x in PUBLIC_MEMBERS]
                if public:
                    yield f"GCS bucket {b.name}: {m.name} grants {get(m.props, 'role')} to {public[0]}", m.urn
        # GCS encrypts every object at rest (Google-managed keys unless encryption.defaultKmsKeyName is set)

    for kind in ("aws:s3/bucket:Bucket", "aws:s3/bucketV2:BucketV2"):
        for b in by_type.get(kind, []):
            names = (get(b.props, "bucket"), get(b.props, "id"), b.name)
            if get(b.props, "acl") in ("public-read", "public-read-write", "authenticated-read"):
                yield f"S3 bucket {b.name}: acl {get(b.props, 'acl')} makes it readable by others", b.urn
            blocks = related("aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock", b, *names)
            flags = ("blockPublicAcls", "blockPublicPolicy", "ignorePublicAcls", "restrictPublicBuckets")
            if not blocks or not all(get(x.props, f) is True for x in blocks for f in flags):
                yield (f"S3 bucket {b.name}: add a BucketPublicAccessBlock with {', '.join(flags)} all true"), b.urn
            # S3 encrypts every new object (SSE-S3) since 2023-01-05; an explicit configuration must encrypt too
            for enc in related("aws:s3/bucketServerSideEncryptionConfiguration:BucketServerSideEncryptionConfiguration", b, *names):
                algos = [get(rule, "applyServerSideEncryptionByDefault.sseAlgorithm") for rule in _list(get(enc.props, "rules"))]
                if not algos or not all(a in ("AES256", "aws:kms", "aws:kms:dsse") for a in algos):
                    yield f"S3 bucket {b.name}: {enc.name} sets no default encryption algorithm ({algos})", enc.urn

    for a in by_type.get("azure-native:storage:StorageAccount", []):
        if get(a.props, "allowBlobPublicAccess") is not False:
            yield f"storage account {a.name}: set allowBlobPublicAccess false", a.urn
        if get(a.props, "encryption.services.blob.enabled") is False:
            yield f"storage account {a.name}: blob encryption is disabled", a.urn
    for c in by_type.get("azure-native:storage:BlobContainer", []):
        if get(c.props, "publicAccess") not in (None, "None"):
            yield f"blob container {c.name}: publicAccess {get(c.props, 'publicAccess')} (must be None)", c.urn

    for b in by_type.get("alicloud:oss/bucket:Bucket", []):
        names = (get(b.props, "bucket"), get(b.props, "id"), b.name)
        acls = [get(b.props, "acl")] + [get(x.props, "acl") for x in related("alicloud:oss/bucketAcl:BucketAcl", b, *names)]
        public = [x for x in acls if x in ("public-read", "public-read-write")]
        if public:
            yield f"OSS bucket {b.name}: acl {public[0]} makes it readable by anyone", b.urn
        encrypted = get(b.props, "serverSideEncryptionRule.sseAlgorithm") in ("AES256", "KMS", "SM4") or any(
            get(x.props, "sseAlgorithm") in ("AES256", "KMS", "SM4")
            for x in related("alicloud:oss/bucketServerSideEncryption:BucketServerSideEncryption", b, *names))
        if not encrypted:
            yield (f"OSS bucket {b.name}: OSS does not encrypt by default; set serverSideEncryptionRule "
                   "(sseAlgorithm AES256 or KMS) or add a BucketServerSideEncryption"), b.urn


# ---------------------------------------------------------------------------------------------------------
# Kubernetes workloads: pod templates, containers, engines


@dataclass(frozen=True)
class PodTemplate:
    """One pod template of a workload (a LeaderWorkerSet has a leader's and a workers')."""

    workload: Resource
    role: str
    spec: Mapping[str, Any]
    labels: Mapping[str, Any]
    nodes: int
    """Nodes one model instance spans (LeaderWorkerSet size, SGLang --nnodes), for the load estimate."""


def _kind(r: Resource) -> str:
    return r.type.rsplit(":", 1)[-1] if r.type.startswith("kubernetes:") else ""


def pod_templates(r: Resource) -> list[PodTemplate]:
    """The pod templates of a Kubernetes workload resource (none for anything else)."""
    kind = _kind(r)
    if kind in ("Deployment", "StatefulSet", "Job", "DaemonSet", "ReplicaSet"):
        t = get(r.props, "spec.template", {})
        return [PodTemplate(r, kind, get(t, "spec", {}), get(t, "metadata.labels", {}), 1)]
    if kind == "Pod":
        return [PodTemplate(r, kind, get(r.props, "spec", {}), get(r.props, "metadata.labels", {}), 1)]
    if kind == "LeaderWorkerSet":
        lwt = get(r.props, "spec.leaderWorkerTemplate", {})
        size = _int(get(lwt, "size"), 1)
        out = [PodTemplate(r, "worker", get(lwt, "workerTemplate.spec", {}),
                           get(lwt, "workerTemplate.metadata.labels", {}), size)]
        if get(lwt, "leaderTemplate"):
            out.insert(0, PodTemplate(r, "leader", get(lwt, "leaderTemplate.spec", {}),
                                      get(lwt, "leaderTemplate.metadata.labels", {}), size))
        return out
    return []


def _argv(container: Mapping[str, Any]) -> list[str]:
    """Command and args (or a PAI-EAS ``script``) as words (shell scripts split on whitespace)."""
    words: list[str] = []
    for part in _list(container.get("command")) + _list(container.get("args")) + [container.get("script") or ""]:
        words += str(part).split()
    return words


def _flag(argv: Sequence[str], name: str) -> str | None:
    for i, w in enumerate(argv):
        if w == name and i + 1 < len(argv):
            return argv[i + 1]
        if w.startswith(name + "="):
            return w.split("=", 1)[1]
    return None


def engine_of(container: Mapping[str, Any]) -> EngineName | None:
    """The inference engine a container runs: from its command line, or, when it runs the image's own
    entrypoint with engine flags (SageMaker HyperPod), from the image name."""
    text = " ".join(_argv(container))
    if re.search(r"\bvllm\b.*\bserve\b|vllm\.entrypoints", text):
        return EngineName.VLLM
    if "sglang.launch_server" in text or re.search(r"\bsglang\b.*\bserve\b", text):
        return EngineName.SGLANG
    if not _list(container.get("command")) and "--served-model-name" in text:
        image = str(container.get("image") or "")
        for engine in EngineName:
            if str(engine) in image:
                return engine
    return None


def model_of(container: Mapping[str, Any]) -> Model | None:
    """The catalog model a server container serves (by served name, Hugging Face id or its last segment)."""
    words = _argv(container)
    for m in MODELS.values():
        base = m.hf_id.rsplit("/", 1)[-1]
        if any(w == m.served_model_name or m.hf_id in w or w.rstrip("/").endswith("/" + base) or w == base
               for w in words):
            return m
    return None


# ---------------------------------------------------------------------------------------------------------
# public-endpoint-restricted

INTERNAL_LB_ANNOTATIONS: Mapping[str, tuple[str, ...]] = {
    "networking.gke.io/load-balancer-type": ("internal",),
    "cloud.google.com/load-balancer-type": ("internal",),
    "service.beta.kubernetes.io/aws-load-balancer-scheme": ("internal",),
    "service.beta.kubernetes.io/aws-load-balancer-internal": ("true", "0.0.0.0/0"),
    "service.beta.kubernetes.io/azure-load-balancer-internal": ("true",),
    "service.beta.kubernetes.io/alibaba-cloud-loadbalancer-address-type": ("intranet",),
}
"""Annotations (and values, lower-case) that make a LoadBalancer Service internal on GKE, EKS, AKS and ACK."""

PUBLIC_GATEWAY_CLASSES = ("gke-l7-global-external-managed", "gke-l7-regional-external-managed", "gke-l7-gxlb")
"""Gateway classes that put a Gateway on the internet (any class with "external" in its name counts too)."""


def _is_internal(svc: Resource) -> bool:
    ann = get(svc.props, "metadata.annotations", {})
    return any(str(ann.get(k, "")).lower() in values for k, values in INTERNAL_LB_ANNOTATIONS.items())


def _requires_api_key(container: Mapping[str, Any]) -> bool:
    env = {get(e, "name") for e in _list(container.get("env"))}
    return _flag(_argv(container), "--api-key") is not None or "VLLM_API_KEY" in env or "--api-key" in " ".join(_argv(container))


def _selects(selector: Mapping[str, Any], labels: Mapping[str, Any]) -> bool:
    return bool(selector) and all(labels.get(k) == v for k, v in selector.items())


def _wide_cidr(cidr: str) -> bool:
    try:
        net = ipaddress.ip_network(cidr, strict=False)
    except ValueError:
        return False
    return net.prefixlen == 0


def check_public_endpoints(resources: Sequence[Resource], config: Mapping[str, Any]) -> Iterator[tuple[str, str | None]]:
    """Rule ``public-endpoint-restricted``. A public Gateway fails it: Gateway API has no source-CIDR field,
    so the allowed CIDRs cannot be proven (list a Gateway in ``allowedGateways`` once a cloud policy, such as
    Cloud Armor, restricts it)."""
    templates = [t for r in resources for t in pod_templates(r)]
    allowed_gateways = {str(n) for n in _list(config.get("allowedGateways"))}
    for gw in resources:
        cls = str(get(gw.props, "spec.gatewayClassName", ""))
        if _kind(gw) == "Gateway" and (cls in PUBLIC_GATEWAY_CLASSES or "external" in cls) and \
                str(get(gw.props, "metadata.name", gw.name)) not in allowed_gateways:
            yield (f"Gateway {gw.name} uses the public class {cls}, and a Gateway cannot restrict its clients' "
                   "CIDRs: use the internal class, or restrict it with a cloud policy and list it in this "
                   "policy's allowedGateways"), gw.urn
    for svc in resources:
        if _kind(svc) != "Service" or get(svc.props, "spec.type") != "LoadBalancer" or _is_internal(svc):
            continue
        ranges = [str(c) for c in _list(get(svc.props, "spec.loadBalancerSourceRanges"))]
        if not ranges:
            yield (f"Service {svc.name} is a public LoadBalancer without spec.loadBalancerSourceRanges: "
                   "list the CIDRs allowed to call it (or make it internal)"), svc.urn
        elif any(_wide_cidr(c) for c in ranges):
            yield f"Service {svc.name} allows {[c for c in ranges if _wide_cidr(c)][0]}: list specific CIDRs", svc.urn
        selector = get(svc.props, "spec.selector", {})
        backends = [t for t in templates if _selects(selector, t.labels)]
        servers = [c for t in backends for c in _list(t.spec.get("containers")) if engine_of(c)]
        if not backends:
            yield (f"Service {svc.name} is public and selects no workload of this stack: its pods' "
                   "authentication cannot be verified"), svc.urn
        elif not servers or not all(_requires_api_key(c) for c in servers):
            yield (f"Service {svc.name} is public but the server behind it takes no API key "
                   "(--api-key or VLLM_API_KEY from a Secret)"), svc.urn


# ---------------------------------------------------------------------------------------------------------
# startup-budget-covers-load

FUSE_DRIVERS = ("gcsfuse.csi.storage.gke.io", "s3.csi.aws.com", "blob.csi.azure.com", "ossplugin.csi.alibabacloud.com")


def probe_budget(probe: Mapping[str, Any]) -> int:
    """Seconds a probe tolerates before the kubelet gives up: initialDelay + failureThreshold x period."""
    return _int(probe.get("initialDelaySeconds"), 0) + _int(probe.get("failureThreshold"), 3) * _int(probe.get("periodSeconds"), 10)


def loader_of(container: Mapping[str, Any], pod_spec: Mapping[str, Any]) -> Loader:
    """How a server container loads its weights, from its flags and volumes."""
    argv = _argv(container)
    if _flag(argv, "--load-format") == "runai_streamer":
        return Loader.STREAMER
    mounted = {get(m, "name") for m in _list(container.get("volumeMounts"))}
    for v in _list(pod_spec.get("volumes")):
        if get(v, "name") in mounted and (get(v, "csi.driver") in FUSE_DRIVERS or get(v, "persistentVolumeClaim")):
            return Loader.FUSE
    if _list(pod_spec.get("initContainers")):
        return Loader.BUCKET_COPY
    return Loader.HUGGINGFACE if not mounted else Loader.BUCKET_COPY


def node_share(container: Mapping[str, Any], volumes: Sequence[Any], nodes: int) -> Fraction:
    """The part of the checkpoint one node of this server fetches (catalog.distribution), from the container's load
    format, the streamer's ``distributed`` and environment, and whether a mounted gcsfuse volume caches whole objects
    on range reads."""
    argv = _argv(container)
    try:
        extra = json.loads((_flag(argv, "--model-loader-extra-config") or "{}").strip("'\""))
    except ValueError:
        extra = {}
    env = {str(get(e, "name")): str(get(e, "value")) for e in _list(container.get("env"))}
    split = distribution.read_split(_flag(argv, "--load-format") or "", env=env,
                                    distributed=isinstance(extra, dict) and extra.get("distributed") is True)
    mounted = {get(m, "name") for m in _list(container.get("volumeMounts"))}
    whole_objects = any(f"{GCS_FUSE_RANGE_READ_OPTION}:true" in str(get(v, "csi.volumeAttributes.mountOptions", ""))
                        for v in volumes if get(v, "name") in mounted)
    world = (_int(_flag(argv, "--tensor-parallel-size") or _flag(argv, "--tp-size"), 1)
             * _int(_flag(argv, "--pipeline-parallel-size") or _flag(argv, "--pp-size"), 1))
    return distribution.node_share(split, nodes, max(1, world // max(1, nodes)), whole_objects)


def _estimate(model: Model, loader: Loader, nodes: int, engine: EngineName, draft: bool,
              whole: bool = False, share: Fraction | None = None) -> tuple[int, int]:
    """(load seconds, warm-up seconds) the budget must cover. With a copy to local disk first, a probe covers
    only the local read (the copy runs before the server starts); ``whole`` budgets (a deployment deadline)
    cover the copy too. ``share``: the part of the checkpoint a node fetches (``node_share``)."""
    est = load_estimate(model, loader, nodes, with_draft_model=draft, share=share)
    fetch = est.optimistic_fetch_seconds + est.local_read_seconds
    load = est.local_read_seconds if loader == Loader.BUCKET_COPY and not whole else fetch
    return load, ENGINES[engine].warmup_seconds


def _budget_findings(label: str, budget: int, probe_name: str, model: Model, loader: Loader, nodes: int,
                     engine: EngineName, draft: bool = False, whole: bool = False,
                     share: Fraction | None = None) -> Iterator[str]:
    load, warmup = _estimate(model, loader, nodes, engine, draft, whole, share)
    if budget < load + warmup:
        part = "" if share is None else f", {share} of the checkpoint from the bucket per node"
        yield (f"{label}: the {probe_name} gives up after {budget:,} s, but loading {model.display_name} "
               f"({loader}, {nodes} node(s){part}) is estimated at {load:,} s plus {warmup:,} s warm-up = "
               f"{load + warmup:,} s at the fastest the loader is stated to go ({LOADER_PROFILES[loader].source}); it "
               "would be killed mid-load")


def _servers(templates: Sequence[PodTemplate]) -> dict[str, tuple[EngineName, Model, Loader]]:
    """Container name → (engine, model, loader) for the inference servers among a workload's templates."""
    out: dict[str, tuple[EngineName, Model, Loader]] = {}
    for t in templates:
        for c in _list(t.spec.get("containers")):
            engine, model = engine_of(c), model_of(c)
            if engine is not None and model is not None:
                out.setdefault(str(get(c, "name")), (engine, model, loader_of(c, t.spec)))
    return out


def _with_draft(container: Mapping[str, Any]) -> bool:
    argv = _argv(container)
    return _flag(argv, "--speculative-draft-model-path") is not None or _flag(argv, "--speculative-algorithm") == "DSPARK"


def check_startup_budget(resources: Sequence[Resource], _config: Mapping[str, Any]) -> Iterator[tuple[str, str | None]]:
    """Rule ``startup-budget-covers-load``. In a LeaderWorkerSet the workers (vLLM headless ranks, SGLang ranks) load
    their share too: a worker container named like the leader's server is held to the same estimate."""
    for r in resources:
        templates = pod_templates(r)
        servers = _servers(templates)
        for t in templates:
            for c in _list(t.spec.get("containers")):
                found = servers.get(str(get(c, "name")))
                if found is None:
                    continue
                engine, model, loader = found
                nodes = max(t.nodes, _int(_flag(_argv(c), "--nnodes"), 1))
                if get(c, "startupProbe"):
                    budget, which = probe_budget(c["startupProbe"]), "startup probe"
                elif get(c, "livenessProbe"):
                    budget, which = probe_budget(c["livenessProbe"]), "liveness probe (there is no startup probe)"
                else:
                    continue  # nothing kills it while it loads
                role = f" ({t.role})" if t.role != _kind(r) else ""
                label = f"{_kind(r)} {r.name}{role}, container {get(c, 'name')}"
                share = node_share(c, _list(t.spec.get("volumes")), nodes)
                for m in _budget_findings(label, budget, which, model, loader, nodes, engine, _with_draft(c),
                                          share=share):
                    yield m, r.urn
        if _kind(r) == "InferenceEndpointConfig":
            yield from ((m, r.urn) for m in _hyperpod_endpoint(r))
        if r.type == "alicloud:pai/service:Service":
            yield from ((m, r.urn) for m in _eas_service(r))


def _hyperpod_endpoint(r: Resource) -> Iterator[str]:
    """SageMaker HyperPod ``InferenceEndpointConfig``: the deployment deadline covers the prefetch from S3 and
    the load; the worker's start-up probe covers the load from the prefetched copy."""
    spec = get(r.props, "spec", {})
    worker = get(spec, "worker", {})
    engine = engine_of(worker)
    model = model_of(worker) or model_of({"args": [get(spec, "modelName", "")]})
    if engine is None or model is None:
        return
    source = get(spec, "modelSourceConfig", {})
    kind = get(source, "modelSourceType")
    loader = (Loader.HUGGINGFACE if kind == "huggingface" else
              Loader.BUCKET_COPY if get(source, "prefetchEnabled") is True else Loader.FUSE)
    label = f"InferenceEndpointConfig {r.name}"
    yield from _budget_findings(label, _int(get(spec, "maxDeployTimeInSeconds"), 3600),
                                "deployment deadline (maxDeployTimeInSeconds)", model, loader, 1, engine, whole=True)
    startup = get(worker, "probes.startupProbe")
    probe, which = (startup, "startup probe") if startup else (get(worker, "probes.livenessProbe"), "liveness probe")
    if probe:
        yield from _budget_findings(label, probe_budget(probe), which, model, loader, 1, engine)


def _eas_probe_budget(check: Mapping[str, Any]) -> int:
    return (_int(check.get("initial_delay_seconds"), 0) +
            _int(check.get("failure_threshold"), 3) * _int(check.get("period_seconds"), 10))


def _eas_service(r: Resource) -> Iterator[str]:
    """PAI-EAS: ``startup_check`` (or, without it, ``health_check``) of each container in the service config."""
    raw = get(r.props, "serviceConfig")
    try:
        config = json.loads(raw) if isinstance(raw, str) else raw
    except ValueError:
        return
    if not isinstance(config, Mapping):
        return
    nodes = max(1, _int(get(config, "unit.size"), 1))
    oss = any(get(v, "oss") for v in _list(config.get("storage")))
    for c in _list(config.get("containers")):
        engine, model = engine_of(c), model_of(c)
        if engine is None or model is None:
            continue
        check, which = ((c["startup_check"], "startup_check") if get(c, "startup_check")
                        else (get(c, "health_check"), "health_check (there is no startup_check)"))
        if not check:
            continue
        loader = Loader.STREAMER if _flag(_argv(c), "--load-format") == "runai_streamer" else (
            Loader.FUSE if oss else Loader.HUGGINGFACE)
        yield from _budget_findings(f"PAI-EAS service {r.name}", _eas_probe_budget(check), which, model, loader, nodes,
                                    engine, _with_draft(c), share=node_share(c, (), nodes))


# ---------------------------------------------------------------------------------------------------------
# nvl72-pool-within-rack


def rack_skus() -> dict[str, Accelerator]:
    """SKUs whose pool is one NVLink rack (``max_nodes_per_pool`` set in the catalog)."""
    return {sku: a for sku, a in ACCELERATORS.items() if a.max_nodes_per_pool and a.nvlink_spans_nodes}


def _counts(props: Mapping[str, Any], *paths: str) -> list[tuple[str, int]]:
    return [(p, _int(get(props, p), 0)) for p in paths if get(props, p) is not None]


def check_rack_size(resources: Sequence[Resource], _config: Mapping[str, Any]) -> Iterator[tuple[str, str | None]]:
    """Rule ``nvl72-pool-within-rack``."""
    racks = rack_skus()
    for r in resources:
        pools: list[tuple[str, str | None, list[tuple[str, int]]]] = []
        if r.type == "gcp:container/nodePool:NodePool":
            sku = get(r.props, "nodeConfig.machineType")
            pools.append((f"GKE node pool {r.name}", sku, _counts(r.props, "nodeCount", "initialNodeCount",
                                                                   "autoscaling.maxNodeCount", "autoscaling.totalMaxNodeCount")))
            if sku in racks:
                path = " ".join(str(v) for v in _list(get(r.props, "nodeConfig.reservationAffinity.values")))
                if "/reservationSubBlocks/" not in path and get(r.props, "placementPolicy.type") != "COMPACT":
                    yield (f"GKE node pool {r.name}: {sku} spans nodes over NVLink only inside one rack; pin it to "
                           "a reservation sub-block (…/reservationBlocks/B/reservationSubBlocks/S) or a COMPACT "
                           "placement policy"), r.urn
        elif r.type == "azure-native:containerservice:AgentPool":
            pools.append((f"AKS agent pool {r.name}", get(r.props, "vmSize"), _counts(r.props, "count", "maxCount")))
        elif r.type == "azure-native:containerservice:ManagedCluster":
            for p in _list(get(r.props, "agentPoolProfiles")):
                pools.append((f"AKS cluster {r.name}, pool {get(p, 'name')}", get(p, "vmSize"), _counts(p, "count", "maxCount")))
        for label, sku, counts in pools:
            a = racks.get(sku or "")
            if a is None or a.max_nodes_per_pool is None:
                continue
            for path, n in counts:
                if n > a.max_nodes_per_pool:
                    yield (f"{label}: {path} {n} exceeds one {a.nvlink_domain_gpus}-GPU NVLink rack of {sku} "
                           f"({a.max_nodes_per_pool} nodes); use one pool per rack"), r.urn


# ---------------------------------------------------------------------------------------------------------
# capacity-purchase-flagged


def check_capacity_purchases(resources: Sequence[Resource], _config: Mapping[str, Any]) -> Iterator[tuple[str, str | None]]:
    """Rule ``capacity-purchase-flagged``."""
    for r in resources:
        if r.type == "aws:ec2/capacityBlockReservation:CapacityBlockReservation":
            yield (f"{r.name} purchases an EC2 Capacity Block (offering {get(r.props, 'capacityBlockOfferingId')}): "
                   "paid up front, non-refundable, and `pulumi destroy` does not cancel it"), r.urn
        elif r.type == "azure-native:compute:CapacityReservation":
            sku = get(r.props, "sku", {})
            yield (f"{r.name} creates an Azure capacity reservation ({get(sku, 'capacity')} x {get(sku, 'name')}): "
                   "billed from creation whether used or not"), r.urn


# least-privilege-iam

BROAD_AWS_POLICIES = ("AdministratorAccess", "PowerUserAccess", "IAMFullAccess", "AmazonS3FullAccess",
                      "AmazonEC2FullAccess", "AmazonSageMakerFullAccess")
"""AWS managed policies that grant a whole service (or everything)."""

BROAD_GCP_ROLES = ("roles/owner", "roles/editor", "roles/viewer", "roles/storage.admin", "roles/iam.securityAdmin",
                   "roles/resourcemanager.projectIamAdmin")
"""Basic roles, and roles that administer storage or IAM."""

PUBLIC_GCP_MEMBERS = ("allUsers", "allAuthenticatedUsers")

BROAD_AZURE_ROLES = {
    "8e3af657-a8ff-443c-a75c-2fe8c4bcb635": "Owner",
    "18d7d88d-d35e-4fb5-a5c3-7773c20a72d9": "User Access Administrator",
    "b7e6dc6d-f1e8-4753-8033-0f276bb0955b": "Storage Blob Data Owner",
}
"""Azure built-in roles that can grant access or own data."""

AZURE_CONTRIBUTOR = "b24988ac-6180-42a0-ab88-20f7382dd24c"

_DATA_WRITES = re.compile(r"^(s3|oss):(Put|Delete|Abort|Restore|Copy)", re.I)


def _statements(document: Any) -> list[Mapping[str, Any]]:
    if isinstance(document, str):
        try:
            document = json.loads(document)
        except ValueError:
            return []
    if not isinstance(document, Mapping):
        return []
    statements = document.get("Statement") or []
    return [st for st in (statements if isinstance(statements, list) else [statements]) if isinstance(st, Mapping)]


def _strings(v: Any) -> list[str]:
    """IAM documents give one action, resource or member as a string and several as a list."""
    return [v] if isinstance(v, str) else [str(x) for x in _list(v)]


def _policy_findings(label: str, document: Any) -> Iterator[str]:
    for st in _statements(document):
        if st.get("Effect", "Allow") != "Allow":
            continue
        actions, resources = _strings(st.get("Action")), _strings(st.get("Resource"))
        wide = [a for a in actions if a == "*" or a.endswith(":*")]
        if wide:
            yield f"{label} allows every action of a service ({', '.join(wide)}): name the actions it needs"
        writes = [a for a in actions if _DATA_WRITES.match(a)]
        if writes and "*" in resources:
            yield f"{label} allows {', '.join(writes)} on every resource: scope object writes to the weight bucket"


def check_least_privilege(resources: Sequence[Resource], _config: Mapping[str, Any]) -> Iterator[tuple[str, str | None]]:
    """Rule ``least-privilege-iam``."""
    for r in resources:
        p = r.props
        if r.type in ("aws:iam/policy:Policy", "aws:iam/rolePolicy:RolePolicy", "alicloud:ram/policy:Policy"):
            document = get(p, "policy") or get(p, "policyDocument") or get(p, "document")
            for message in _policy_findings(r.name, document):
                yield message, r.urn
        elif r.type in ("aws:iam/rolePolicyAttachment:RolePolicyAttachment", "aws:iam/policyAttachment:PolicyAttachment"):
            arn = str(get(p, "policyArn") or "")
            if arn.rsplit("/", 1)[-1] in BROAD_AWS_POLICIES:
                yield f"{r.name} attaches {arn}, which grants a whole service: attach a policy scoped to the task", r.urn
        elif r.type.startswith("gcp:") and "IAM" in r.type:
            role = str(get(p, "role") or "")
            members = _strings(get(p, "member")) + _strings(get(p, "members"))
            if role in BROAD_GCP_ROLES:
                yield f"{r.name} grants {role}: grant a predefined role scoped to the task", r.urn
            public = [m for m in members if m in PUBLIC_GCP_MEMBERS]
            if public:
                yield f"{r.name} grants {role} to {', '.join(public)}: that is anyone", r.urn
        elif r.type == "azure-native:authorization:RoleAssignment":
            role = str(get(p, "roleDefinitionId") or "").rsplit("/", 1)[-1].lower()
            scope = str(get(p, "scope") or "")
            if role in BROAD_AZURE_ROLES:
                yield f"{r.name} assigns {BROAD_AZURE_ROLES[role]}: assign a role scoped to the task", r.urn
            elif role == AZURE_CONTRIBUTOR and re.fullmatch(r"/subscriptions/[^/]+/?", scope):
                yield f"{r.name} assigns Contributor on a whole subscription: scope it to a resource group", r.urn


# ---------------------------------------------------------------------------------------------------------
# role-permissions-before-use

ROLE_TYPE = "aws:iam/role:Role"
ROLE_GRANT_TYPES = ("aws:iam/rolePolicyAttachment:RolePolicyAttachment", "aws:iam/rolePolicy:RolePolicy",
                    "aws:iam/rolePolicyAttachmentsExclusive:RolePolicyAttachmentsExclusive",
                    "aws:iam/rolePoliciesExclusive:RolePoliciesExclusive")
"""What gives an IAM role its permissions: a grant belongs to the role it depends on."""
NOT_ROLE_USERS = ("aws:iam/", "aws:eks/accessEntry:AccessEntry", "aws:kms/", "aws:s3/bucketPolicy:BucketPolicy")
"""Type prefixes that name a role without acting with its permissions: IAM documents (a trust or ``iam:PassRole``
naming it), EKS access entries (which map the role to a Kubernetes user), and resource policies that grant it
something (a KMS key policy or grant, a bucket policy), which the role's own policies may in turn name."""


def _closure(urn: str, by_urn: Mapping[str, Resource], memo: dict[str, frozenset[str]]) -> frozenset[str]:
    """Every URN ``urn`` depends on, directly or through other resources."""
    if urn in memo:
        return memo[urn]
    memo[urn] = frozenset()  # a cycle (which the engine refuses anyway) ends here
    found: set[str] = set()
    for d in by_urn[urn].dependencies if urn in by_urn else ():
        found.add(d)
        found |= _closure(d, by_urn, memo)
    memo[urn] = frozenset(found)
    return memo[urn]


def check_role_permissions(resources: Sequence[Resource], _config: Mapping[str, Any]) -> Iterator[tuple[str, str | None]]:
    """Rule ``role-permissions-before-use``: over the dependency graph, each resource that depends on a role
    depends on all of that role's grants."""
    by_urn = {r.urn: r for r in resources}
    roles = {r.urn: r for r in resources if r.type == ROLE_TYPE}
    grants: dict[str, list[Resource]] = {urn: [] for urn in roles}
    for r in resources:
        if r.type in ROLE_GRANT_TYPES:
            for d in r.dependencies:
                if d in grants:
                    grants[d].append(r)
    memo: dict[str, frozenset[str]] = {}
    for r in resources:
        if r.type.startswith(NOT_ROLE_USERS) or r.type.startswith("pulumi:"):
            continue
        for d in r.dependencies:
            if d not in roles:
                continue
            missing = sorted(g.name for g in grants[d] if g.urn not in _closure(r.urn, by_urn, memo))
            if missing:
                yield (f"{r.name} ({r.type}) uses IAM role {roles[d].name} but does not depend on its "
                       f"{', '.join(missing)}: it may be created before them (or they deleted first); depend on every "
                       "policy of the role"), r.urn


# ---------------------------------------------------------------------------------------------------------
# the pack

RULES: tuple[Rule, ...] = (
    Rule("gpu-pool-consumes-reservation",
         "GPU pools on reservation-only or quota-gated SKUs consume a named reservation",
         Enforcement.MANDATORY, check_gpu_reservation,
         {"extraSkus": {"type": "array", "items": {"type": "string"},
                        "description": "More machine types that must consume a reservation (e.g. p6-b300.48xlarge)"}}),
    Rule("weight-bucket-private-encrypted",
         "Buckets (model weights) are not publicly readable and are encrypted at rest",
         Enforcement.MANDATORY, check_buckets),
    Rule("public-endpoint-restricted",
         "A public inference endpoint has allowed source CIDRs and requires an API key",
         Enforcement.MANDATORY, check_public_endpoints,
         {"allowedGateways": {"type": "array", "items": {"type": "string"},
                              "description": "Public Gateways (metadata.name) whose clients a cloud policy restricts"}}),
    Rule("startup-budget-covers-load",
         "An inference server's start-up probe budget covers the estimated weight load plus warm-up",
         Enforcement.MANDATORY, check_startup_budget),
    Rule("nvl72-pool-within-rack",
         "A pool of an NVL72-rack SKU (A4X Max, ND GB300 v6) stays within one rack and is pinned to it",
         Enforcement.MANDATORY, check_rack_size),
    Rule("least-privilege-iam",
         "Identities get scoped permissions: no service-wide actions, no object writes on every resource, no "
         "owner, admin or basic roles, nothing granted to the public",
         Enforcement.MANDATORY, check_least_privilege),
    Rule("role-permissions-before-use",
         "Whatever uses an IAM role depends on every policy attached to the role (created before, deleted after)",
         Enforcement.MANDATORY, check_role_permissions),
    Rule("capacity-purchase-flagged",
         "Purchases of GPU capacity that cannot be undone (EC2 Capacity Blocks, Azure capacity reservations)",
         Enforcement.ADVISORY, check_capacity_purchases),
)
"""Every policy of the pack, in the order ``pulumi preview`` reports them."""


def evaluate(resources: Sequence[Resource], config: Mapping[str, Mapping[str, Any]] | None = None,
             rules: Sequence[Rule] = RULES) -> list[Violation]:
    """Run ``rules`` over ``resources``; ``config`` maps a policy name to its configuration."""
    out: list[Violation] = []
    for rule in rules:
        for message, urn in rule.check(resources, (config or {}).get(rule.name, {})):
            out.append(Violation(rule.name, message, urn))
    return out


__all__ = ["UNKNOWN", "Enforcement", "PodTemplate", "RULES", "Resource", "Rule", "Violation", "evaluate", "gated_skus",
           "get", "pod_templates", "probe_budget", "rack_skus"]
