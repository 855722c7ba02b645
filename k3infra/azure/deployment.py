"""The azure-gb300 deployment (002 §4): quota gate, AKS, the ND GB300 v6 pool on a Capacity Reservation Group with
the device plugin, the NVIDIA DRA driver and DRANET, pull access to the image's registry, Blob weights with workload
identity, then serving: a LeaderWorkerSet of two nodes running vLLM at TP=8 over multi-node NVLink (002 §4.4), its
start-up probe budget from the sizing (not the seed's fixed 900 s), behind an internal load balancer."""

import re

import pulumi
from pulumi.runtime import mocks, settings

from .. import maintenance, names
from ..catalog import Cloud
from ..catalog.transfer import SYNC_POOLS
from ..config import AzureConfig, StackConfig
from ..config.clouds.azure import default_kubernetes_version
from ..result import DeploymentResult
from ..observability.verify_job import with_checklist
from ..serving.status_access import with_status_access
from ..serving.stack import serve
from . import quota
from .autoscaling import keda, wants_keda
from .capacity import parse_group_id
from .cluster import AksCluster
from .gpu_pool import AksGpuNodePool, GpuDriver
from .monitoring import metrics_access, observe
from .registry import acr_pull
from .storage import BlobWeightBucket
from .sync_pool import AksSyncPool


def offline() -> bool:
    """True under the recording engine (``k3infra plan``, tests): no Azure lookups are made there."""
    return isinstance(settings.get_monitor(), mocks.MockMonitor)


def agent_pool_name(gpu_model: str) -> str:
    """``gb300pool`` for GB300, the pool name 002 §4.2 uses (AKS: 1-12 lowercase letters and digits)."""
    stem = re.sub(r"[^a-z0-9]", "", gpu_model.lower()) or "gpu"
    if not stem[0].isalpha():
        stem = "gpu" + stem
    return (stem + "pool")[:12]


def deploy(cfg: StackConfig) -> DeploymentResult:
    """Register the Azure stack and return its outputs."""
    assert cfg.azure is not None, "an Azure stack has Azure settings"
    az = cfg.azure
    gate = quota.gate(cfg, offline=offline())
    warnings: list[str] = list(gate.warnings if gate else ())
    tags = {"k3infra-stack": cfg.stack}
    cluster = _cluster(cfg, az, tags)
    warnings.extend(_statements(cfg))
    pool = _gpu_pool(cfg, az, cluster, tags)
    pull = [acr_pull(f"{names.PREFIX}-acr-pull", registry_id=az.container_registry, cluster=cluster.managed_cluster,
                     opts=pulumi.ResourceOptions())] if az.container_registry else []
    sync_pool = _sync_pool(cfg, cluster, tags)
    weights = _weights(cfg, az, cluster, tags)
    serving = with_checklist(cfg, serve(
        cfg,
        name=names.PREFIX,
        provider=cluster.provider,
        pool=pool.gpu_pool,
        store=weights.store,
        lb=cluster.load_balancer,
        pool_resources=[*pool.resources, *pull],
        identity_resources=weights.identity_resources,
        metrics=metrics_access(cfg),
        sync_nodes=sync_pool.sync_nodes if sync_pool else None,
        sync_pool_resources=[sync_pool.agent_pool] if sync_pool else (),
    ))
    serving = with_status_access(cfg, serving)
    warnings.extend(serving.warnings)

    monitoring, workspace = observe(cfg, names.PREFIX, cluster, serving, pool.gpu_pool, tags)
    keda(cfg, cluster, serving, workspace, tags)
    outputs: dict[str, pulumi.Input[object]] = {
        **serving.outputs(),
        **monitoring,
        "kubeconfig": cluster.kubeconfig,
        "resourceGroup": cluster.resource_group_name,
        "clusterName": cluster.cluster_name,
        "gpuPool": pool.agent_pool_name,
        "bucketUri": weights.uri,
        "storageAccount": weights.account_name,
        "reservationGroup": pool.capacity_reservation_group_id,
        "quota": gate.as_dict() if gate else None,
        "startupBudgetSeconds": cfg.sizing.probe_budget_seconds,
    }
    return DeploymentResult(outputs=outputs, warnings=tuple(warnings), billing_after_destroy=_billing(cfg))


def _cluster(cfg: StackConfig, az: AzureConfig, tags: dict[str, str]) -> AksCluster:
    """The AKS cluster: version, system pool, upgrades and their window, API server access, monitoring, KEDA."""
    return AksCluster(names.PREFIX, {
        "resource_group_name": az.resource_group,
        "location": az.location,
        "cluster_name": cfg.cluster.name,
        "kubernetes_version": cfg.cluster.kubernetes_version or default_kubernetes_version(cfg.accelerator.gpu_model,
                                                                                          az.upgrade_channel),
        "system_vm_size": cfg.cluster.system_node_type,
        "system_node_count": cfg.cluster.system_nodes,
        "deletion_protection": cfg.cluster.deletion_protection,
        "upgrade_channel": az.upgrade_channel,
        "node_os_upgrade_channel": az.node_os_upgrade_channel,
        "maintenance_window": maintenance.from_config(az.maintenance_window),
        "private_api_server": az.private_cluster,
        "api_authorized_cidrs": list(az.authorized_ip_ranges),
        "local_accounts": az.local_accounts,
        "admin_group_object_ids": list(az.entra_admin_groups),
        "deployer_principal_type": az.deployer_principal_type,
        "tags": tags,
        "managed_prometheus": cfg.observability.enabled,
        "keda": wants_keda(cfg),
    })


def _gpu_pool(cfg: StackConfig, az: AzureConfig, cluster: AksCluster, tags: dict[str, str]) -> AksGpuNodePool:
    """The GPU pool on the stack's Capacity Reservation Group (checked unless it is another subscription's)."""
    cap = cfg.capacity
    group = parse_group_id(cap.group_id) if cap.group_id else None
    other_subscription = bool(group and az.subscription_id and group.subscription.lower() != az.subscription_id.lower())
    return AksGpuNodePool(names.GPU, {
        "resource_group_name": cluster.resource_group_name,
        "cluster_name": cluster.cluster_name,
        "location": az.location,
        "cluster_identity": {"resource_id": cluster.identity_id, "principal_id": cluster.identity_principal_id},
        "vm_size": cfg.accelerator.sku,
        "node_count": cfg.total_nodes,
        "zone": cfg.zone,
        "gpus_per_node": cfg.accelerator.gpus_per_node,
        "agent_pool_name": agent_pool_name(cfg.accelerator.gpu_model),
        "gpu_driver": GpuDriver(az.gpu_driver),
        "capacity_reservation_group_id": cap.group_id,
        "verify_capacity_reservation_group": not other_subscription,
        "create_capacity_reservation": cap.create,
        "capacity_resource_group_name": f"{az.resource_group}-capacity",
        "role_propagation_minutes": az.role_propagation_minutes,
        # The NVIDIA DRA driver only where a replica's tensor parallelism spans nodes (not for TP=4 x PP=2).
        "multi_node_nvlink": cfg.sizing.layout.multi_node_nvlink,
        "interconnect_subgroup_id": az.interconnect_subgroup_id,
        "tags": tags,
    }, pulumi.ResourceOptions(providers={"kubernetes": cluster.provider}))


def _sync_pool(cfg: StackConfig, cluster: AksCluster, tags: dict[str, str]) -> AksSyncPool | None:
    """The weight sync's own pool, where the sizing counts on one."""
    if not (cfg.weights.sync and cfg.sizing.sync and Cloud.AZURE in SYNC_POOLS):
        return None
    return AksSyncPool(f"{names.PREFIX}-sync-nodes", {
        "resource_group_name": cluster.resource_group_name, "cluster_name": cluster.cluster_name,
        "pool": SYNC_POOLS[Cloud.AZURE], "nodes": cfg.sizing.sync.nodes, "tags": tags})


def _weights(cfg: StackConfig, az: AzureConfig, cluster: AksCluster, tags: dict[str, str]) -> BlobWeightBucket:
    """The weights' storage account and container, with identities federated with the cluster's issuer."""
    return BlobWeightBucket(names.WEIGHTS, {
        "resource_group_name": f"{az.resource_group}-weights",
        "location": az.location,
        "account_name": cfg.weights.account or "",
        "container_name": cfg.weights.bucket,
        "model_subpath": cfg.weights.model_path(cfg.model.hf_id),
        "oidc_issuer_url": cluster.oidc_issuer_url,
        "namespace": cfg.namespace,
        "retain_on_destroy": cfg.weights.retain_on_destroy,
        "tags": tags,
    })


def _statements(cfg: StackConfig) -> list[str]:
    """What the plan must say about the order of the first `pulumi up` and how Pulumi reaches the cluster."""
    assert cfg.azure is not None
    out: list[str] = []
    cap, minutes = cfg.capacity, cfg.azure.role_propagation_minutes
    if cap.group_id or cap.create:
        grant = (f"the cluster identity's Contributor grant on the reservation group's resource group "
                 f"({names.GPU}-crg-access)")
        if minutes:
            out.append(f"{grant} can take up to 60 minutes to propagate (aks/use-capacity-reservation-groups): the GPU "
                       f"pool waits {minutes} minutes after it ({names.GPU}-crg-access-propagation, time:Sleep); only "
                       "the first `pulumi up`, or a new identity or group, waits")
        else:
            out.append(f"azure.rolePropagationMinutes is 0: the GPU pool does not wait for {grant}; create the grant "
                       f"first (`pulumi up --target` its URN, shown by `pulumi stack --show-urns`), wait up to 60 "
                       "minutes for it to propagate, then run `pulumi up`")
    out.append(f"storage account {cfg.weights.account} keeps public network access on: AKS creates the cluster's "
               "virtual network itself, so there is no subnet to give the account a private endpoint or a service "
               "endpoint; the endpoint takes Entra ID tokens only (shared keys and anonymous access off, TLS 1.2), "
               "and only the server's and the sync Job's identities hold roles on the container")
    if cfg.azure.private_cluster:
        out.append("azure.privateCluster is true: the AKS API server has only an address in the cluster's virtual "
                   "network (created by AKS in its node resource group), so the Kubernetes objects are created only "
                   "when Pulumi runs from a network peered with it or connected by VPN; the first `pulumi up` from "
                   "elsewhere stops after the Azure resources")
    return out


def _billing(cfg: StackConfig) -> tuple[str, ...]:
    """What keeps billing after `pulumi destroy`."""
    assert cfg.azure is not None
    out: list[str] = []
    cap = cfg.capacity
    if cap.group_id:
        out.append(f"Capacity Reservation Group {cap.group_id}: k3infra only references it, so its reservation bills "
                   "until you delete it yourself, nodes or not (002 §4.6: az capacity reservation delete, then "
                   "az capacity reservation group delete)")
    if cfg.weights.retain_on_destroy:
        out.append(f"storage account {cfg.weights.account} (container {cfg.weights.bucket}, ~1.56 TB of weights) in "
                   f"resource group {cfg.azure.resource_group}-weights is retained on destroy and bills until deleted "
                   f"(az group delete -n {cfg.azure.resource_group}-weights)")
    return tuple(out)
