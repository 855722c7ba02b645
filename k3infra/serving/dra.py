"""What a server's pods claim through Dynamic Resource Allocation, and the objects those claims resolve to.

Two kinds of claims, both from the GPU pool (``GpuPool``), neither of them the GPUs (the device plugin keeps
advertising ``nvidia.com/gpu``):

- ``device_claims``: devices from a DeviceClass, e.g. every RDMA NIC of the node from DRANET. One
  ``ResourceClaimTemplate`` per claim in the serving namespace; each pod gets a claim of its own from it.
- ``compute_domains``: when a replica's tensor parallelism spans nodes of one NVLink domain, the replica gets a
  ``ComputeDomain`` of its own (NVIDIA DRA driver, ``resource.nvidia.com/v1beta1``) with ``numNodes: 0``
  (``compute_domain`` says why).
  The driver's controller creates the domain's channel template; every pod of the replica claims it, which
  injects the IMEX channel NCCL needs to reach the other nodes' GPUs over NVLink (cluster-toolkit
  ``examples/gke-a4x-max-bm/nccl-jobset-example.yaml``; NVIDIA ``demo/specs/imex/channel-injection.yaml``).

A LeaderWorkerSet's templates are shared by all its groups, so the claims of a pod cannot name its group's
ComputeDomain; with ComputeDomains each replica is therefore a LeaderWorkerSet of its own (NVIDIA
k8s-dra-driver-gpu issue #934 describes the gap). Where a scaler owns the replica count (``shared_domain``) the
server is instead one LeaderWorkerSet whose groups all claim one ComputeDomain: KEDA scales a LeaderWorkerSet by
its scale subresource (whole groups), and groups cannot be added as LeaderWorkerSets. One domain for all groups
keeps what a domain guarantees, "MNNVL-reachability between pods that are in the domain" and "secure isolation
from other pods that are not in the domain" (NVIDIA, "NVIDIA DRA Driver for GPUs: ComputeDomains", Guarantees):
the server's own groups reach each other too, which they never use, and every other pod stays out. A domain may
span NVLink partitions (the CRD's ``status.nodes[]`` keys each node by ``(cliqueID, index)``, one IMEX domain per
clique), and ``group_affinity`` keeps each group in one. Nothing here branches on the cloud.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Sequence

import pulumi
import pulumi_kubernetes as k8s

from .contract import DeviceClaim, GpuPool
from .pods import labels

core = k8s.core.v1
meta = k8s.meta.v1
resource = k8s.resource.v1

COMPUTE_DOMAIN_API_VERSION = "resource.nvidia.com/v1beta1"
"""The ComputeDomain API of the pinned NVIDIA DRA driver (schemas/crds/nvidia-dra-computedomains.yaml)."""

CHANNEL_CLAIM = "nvlink-channel"
"""Name of the ComputeDomain channel claim in the pods."""

MULTI_NODE_NVLINK_ENV: Mapping[str, str] = {
    # vLLM sets NCCL_CUMEM_ENABLE=0 unless IMEX channels are visible, and NCCL needs cuMem fabric handles for
    # multi-node NVLink (vllm-project/vllm#16992, #19105): state it rather than rely on the detection.
    "NCCL_CUMEM_ENABLE": "1",
    # Require MNNVL instead of silently falling back to the network (NCCL_MNNVL_ENABLE: 0 off, 1 on, 2 auto;
    # sgl-project/sglang#24977 sets both for GB200/GB300).
    "NCCL_MNNVL_ENABLE": "1",
}
"""NCCL settings of a pod that claims a ComputeDomain channel (engine-neutral: vLLM and SGLang both use NCCL)."""

RDMA_CLAIM = "rdma"
"""Name of the RDMA NIC claim in the server pods, on every cloud."""

RDMA_CAPABILITIES = ("IPC_LOCK",)
"""RDMA memory registration pins pages (GKE's gIB NCCL test pods and cluster-toolkit's A4X Max NCCL example add
IPC_LOCK; the engine container drops every other capability)."""

GROUP_KEY_LABEL = "leaderworkerset.sigs.k8s.io/group-key"
"""Label the LeaderWorkerSet controller puts on every pod of a group, with one value per group."""


@dataclass(frozen=True)
class PodClaim:
    """One entry of a pod's ``resourceClaims``, claimed by the engine container under the same name."""

    name: str
    template: pulumi.Input[str]


@dataclass
class ServerClaims:
    """The claims of a server's pods, per group, and the objects they resolve to."""

    groups: list[list[PodClaim]]
    """Claims of the pods of each group (one entry per group; identical when there is no ComputeDomain)."""
    resources: list[pulumi.Resource] = field(default_factory=list)
    """The ResourceClaimTemplates and ComputeDomains: the workload depends on them."""
    env: dict[str, str] = field(default_factory=dict)
    """Environment of the engine container (NCCL settings with a ComputeDomain)."""

    @property
    def per_group(self) -> bool:
        """True when groups claim different objects (a ComputeDomain each)."""
        return len(self.groups) > 1 and any(g != self.groups[0] for g in self.groups[1:])


def claim_rdma_nics(pool: GpuPool, *, device_class: str, count: int, selectors: Sequence[str] = ()) -> None:
    """Have every server pod claim ``count`` RDMA NICs of ``device_class`` (all of its node's), with IPC_LOCK; each NIC
    must satisfy every CEL expression of ``selectors``."""
    claim: DeviceClaim = {"name": RDMA_CLAIM, "device_class": device_class, "count": count}
    if selectors:
        claim["selectors"] = list(selectors)
    pool["device_claims"] = [claim]
    pool["capabilities"] = list(RDMA_CAPABILITIES)


def uses_compute_domains(pool: GpuPool, tensor_parallel: int) -> bool:
    """True when the server's tensor parallelism spans nodes of a pool that offers ComputeDomains."""
    return bool(pool.get("compute_domains")) and tensor_parallel > int(pool["gpus_per_node"])


def server_claims(name: str, *, namespace: str, pool: GpuPool, groups: int, tensor_parallel: int,
                  opts: pulumi.ResourceOptions, shared_domain: bool = False) -> ServerClaims:
    """The claim templates and ComputeDomains of server ``name`` with ``groups`` replicas: a ComputeDomain per
    group, or with ``shared_domain`` (a scaler owns the count) one that every group claims."""
    shared: list[PodClaim] = []
    out = ServerClaims(groups=[])
    for claim in pool.get("device_claims") or ():
        template = device_claim_template(f"{name}-{claim['name']}", namespace=namespace, instance=name,
                                         device_class=claim["device_class"], count=int(claim["count"]),
                                         request=claim["name"], selectors=claim.get("selectors") or (), opts=opts)
        out.resources.append(template)
        shared.append(PodClaim(claim["name"], template.metadata.apply(lambda m: m.name or "")))
    if not uses_compute_domains(pool, tensor_parallel):
        out.groups = [list(shared) for _ in range(groups)]
        return out
    for i in range(1 if shared_domain else groups):
        domain, channel = compute_domain(f"{name}-nvlink-{i}", namespace=namespace, instance=name, opts=opts)
        out.resources.append(domain)
        out.groups.append([*shared, PodClaim(CHANNEL_CLAIM, channel)])
    out.groups += [list(out.groups[0]) for _ in range(groups - len(out.groups))]
    out.env.update(MULTI_NODE_NVLINK_ENV)
    return out


def immutable_spec(opts: pulumi.ResourceOptions) -> pulumi.ResourceOptions:
    """Options of an object whose spec the API server refuses to change: a new spec replaces it (deleting the
    old one first, since the name is fixed)."""
    return pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(replace_on_changes=["spec"],
                                                                     delete_before_replace=True))


def device_claim_template(name: str, *, namespace: str, instance: str, device_class: str, count: int, request: str,
                          opts: pulumi.ResourceOptions, selectors: Sequence[str] = ()) -> resource.ResourceClaimTemplate:
    """A ResourceClaimTemplate for ``count`` devices of ``device_class`` (cluster-toolkit's ``all-mrdma``), each
    satisfying every CEL expression of ``selectors`` (dranet's ``ib-same-fabric``)."""
    return resource.ResourceClaimTemplate(
        name,
        metadata=meta.ObjectMetaArgs(name=name, namespace=namespace, labels=labels(instance, "device-claim")),
        spec=resource.ResourceClaimTemplateSpecArgs(spec=resource.ResourceClaimSpecArgs(
            devices=resource.DeviceClaimArgs(requests=[resource.DeviceRequestArgs(
                name=request,
                exactly=resource.ExactDeviceRequestArgs(
                    device_class_name=device_class, allocation_mode="ExactCount", count=count,
                    selectors=[resource.DeviceSelectorArgs(cel=resource.CELDeviceSelectorArgs(expression=e))
                               for e in selectors] or None),
            )]))),
        opts=immutable_spec(opts),
    )


COMPUTE_DOMAIN_NUM_NODES = 0
"""``spec.numNodes`` of every ComputeDomain. The v25.12.0 CRD (schemas/crds/nvidia-dra-computedomains.yaml, field
doc) deprecates the field ("will be removed in the next API version") and, with the IMEXDaemonsWithDNSNames feature
gate that is on by default since 25.8 (k8s-dra-driver-gpu ``pkg/featuregates/featuregates.go``), recommends 0: a
non-zero value gates neither the IMEX daemons nor the pods and only sets the domain's ``Ready`` status, which
"workload however should not rely on". The field is still required, so 0 is written. Nothing in k3infra reads
that status: the PlacementCheck reads the nodes' topology label, the pods' affinity keeps a replica in one
domain, and the engine's own rendezvous (every rank joins torch.distributed before NCCL opens the IMEX channel)
is the workload's "own source of truth for the number of workers online" that the field doc asks for."""


def compute_domain(name: str, *, namespace: str, instance: str,
                   opts: pulumi.ResourceOptions) -> tuple[k8s.apiextensions.CustomResource, str]:
    """One replica's ComputeDomain (``numNodes`` 0: COMPUTE_DOMAIN_NUM_NODES) and the name of the channel template
    its controller creates. The spec is immutable (``x-kubernetes-validations: self == oldSelf``): a change
    replaces the domain; a change of the replica's node count no longer does.
    """
    channel = f"{name}-channel"
    domain = k8s.apiextensions.CustomResource(
        name,
        api_version=COMPUTE_DOMAIN_API_VERSION,
        kind="ComputeDomain",
        metadata=meta.ObjectMetaArgs(name=name, namespace=namespace, labels=labels(instance, "compute-domain")),
        spec={"numNodes": COMPUTE_DOMAIN_NUM_NODES, "channel": {"resourceClaimTemplate": {"name": channel}}},
        opts=immutable_spec(opts),
    )
    return domain, channel


def pod_resource_claims(claims: Sequence[PodClaim]) -> list[core.PodResourceClaimArgs] | None:
    """The pod's ``resourceClaims``, each generated from its template."""
    return [core.PodResourceClaimArgs(name=c.name, resource_claim_template_name=c.template) for c in claims] or None


def container_claims(claims: Sequence[PodClaim]) -> list[core.ResourceClaimArgs] | None:
    """The engine container's ``resources.claims``: every claim of the pod."""
    return [core.ResourceClaimArgs(name=c.name) for c in claims] or None


def group_affinity(topology_label: str | None, selector: Mapping[str, str]) -> core.AffinityArgs | None:
    """Every pod of a LeaderWorkerSet group on nodes sharing one value of ``topology_label`` (one NVLink domain).

    ``matchLabelKeys`` adds the incoming pod's own group key to the selector (GA in Kubernetes 1.33), so the
    term reads "the pods of my group"; the first pod of a group matches its own term and schedules anywhere.
    Unlike LWS's ``exclusive-topology`` annotation it does not keep other groups out of the domain: an NVL72 rack
    holds up to nine two-node replicas.
    """
    if not topology_label:
        return None
    return core.AffinityArgs(pod_affinity=core.PodAffinityArgs(
        required_during_scheduling_ignored_during_execution=[core.PodAffinityTermArgs(
            topology_key=topology_label,
            label_selector=meta.LabelSelectorArgs(match_labels=dict(selector)),
            match_label_keys=[GROUP_KEY_LABEL],
        )]))


__all__ = ["CHANNEL_CLAIM", "COMPUTE_DOMAIN_API_VERSION", "GROUP_KEY_LABEL", "MULTI_NODE_NVLINK_ENV", "RDMA_CAPABILITIES",
           "RDMA_CLAIM", "PodClaim", "ServerClaims", "claim_rdma_nics", "compute_domain", "container_claims",
           "device_claim_template", "group_affinity", "pod_resource_claims", "server_claims", "uses_compute_domains"]
