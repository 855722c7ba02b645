"""Google Cloud deployment: GKE cluster, reserved GPU pool and GCS weight bucket for a validated stack.

``gcp-a4xmax`` (002 §5): 2 x A4X Max on one reservation sub-block, accelerator network profile + DRANET,
compact placement on a ``1x72`` workload policy, the NVIDIA DRA driver whose ComputeDomains carry TP=8 over
multi-node NVLink. ``gcp-a4-sglang`` (000): 2 x A4 with a second gVNIC VPC,
a RoCE VPC of 8 subnets, the Kubernetes RDMA networks and the gIB NCCL plugin.
"""

import pulumi

from .. import names
from ..catalog import CapacityType, Cloud, Workload
from ..catalog.transfer import SYNC_POOLS
from ..catalog.charts import CHARTS, KEDA_CHART, webhooks_served
from ..config import GcpConfig, StackConfig
from ..result import DeploymentResult
from ..serving.lws import LWS_CHART, LWS_CHART_VERSION
from ..observability.verify_job import with_checklist
from ..serving.status_access import with_status_access
from ..serving.stack import serve
from .bucket import GcsWeightBucket
from ..observability.rules import scaler_alerts
from .autoscaling import keda
from .cluster import GkeCluster
from .cluster_args import ReleaseChannel, UpgradeExclusion
from ..catalog.gke import GKE_MACHINES, GpuNetworkMode
from .monitoring import metrics_access, observe
from .node_pool import GkeGpuNodePool
from .reservation import ReservationRef, reservation_path
from .sync_pool import GkeSyncPool

GPU_POOL_NAME = "gpu"
"""GKE name of the GPU node pool (pods select it with ``cloud.google.com/gke-nodepool``)."""


def reservation_of(cfg: StackConfig) -> ReservationRef | None:
    """The reservation the stack consumes, or None."""
    c = cfg.capacity
    if c.type != CapacityType.RESERVATION or not c.reservation:
        return None
    assert cfg.gcp is not None
    ref: ReservationRef = {"project": c.project or cfg.gcp.project, "name": c.reservation}
    if c.block:
        ref["block"] = c.block
    if c.sub_block:
        ref["sub_block"] = c.sub_block
    return ref


def deploy(cfg: StackConfig) -> DeploymentResult:
    """Register the stack's Google Cloud resources and say what they produce."""
    g = cfg.gcp
    assert g is not None, "a gcp stack has Google Cloud settings"
    cluster = _cluster(cfg, g)
    ref = reservation_of(cfg)
    pool = _gpu_pool(cfg, g, cluster, ref)
    sync_pool = _sync_pool(cfg, g, cluster)
    weights = _weights(cfg, g, cluster)
    serving = with_checklist(cfg, serve(
        cfg, name=names.PREFIX, provider=cluster.provider, pool=pool.gpu_pool, store=weights.store,
        lb=cluster.load_balancer, pool_resources=pool.resources, identity_resources=weights.identity_resources,
        metrics=metrics_access(cfg), webhook_access=cluster.webhook_access,
        sync_nodes=sync_pool.sync_nodes if sync_pool else None,
        sync_pool_resources=[sync_pool.node_pool] if sync_pool else ()))
    serving = with_status_access(cfg, serving)
    keda(cfg, cluster, serving)
    warnings = [*cluster.warnings, *pool.warnings, *serving.warnings]
    outputs: dict[str, pulumi.Input[object]] = {
        **serving.outputs(),
        **observe(cfg, names.PREFIX, serving, cluster.provider),
        "clusterName": cluster.cluster_name,
        "clusterLocation": cluster.location,
        "kubeconfig": cluster.kubeconfig,
        "bucketUri": weights.bucket_uri,
        "modelUri": weights.uri,
        "reservation": pool.reservation_path,
        "gpuNodePool": {"name": pool.pool_name, "machineType": cfg.accelerator.sku, "nodes": cfg.total_nodes},
    }
    return DeploymentResult(outputs=outputs, warnings=tuple(warnings),
                            billing_after_destroy=tuple(billing_after_destroy(cfg, ref)))


def _cluster(cfg: StackConfig, g: GcpConfig) -> GkeCluster:
    """The GKE cluster, with what the GPU machine type needs of it (multi-networking, bare metal, the proxy-only
    subnet of a gateway, the webhook ports of the stack's charts, the monitoring components)."""
    sku = cfg.accelerator.sku
    machine = GKE_MACHINES.get(sku)
    mode = machine.network_mode if machine else GpuNetworkMode.NONE
    return GkeCluster(names.PREFIX, {
        "project": g.project,
        "region": g.region,
        "zone": cfg.zone,
        "cluster_name": cfg.cluster.name,
        "kubernetes_version": cfg.cluster.kubernetes_version,
        "gpu_machine_type": sku,
        "release_channel": ReleaseChannel(g.release_channel),
        "maintenance_window_start": g.maintenance_window_start,
        "upgrade_exclusion": UpgradeExclusion(g.upgrade_exclusion) if g.upgrade_exclusion else None,
        "upgrade_exclusion_start": g.upgrade_exclusion_start,
        "authorized_cidrs": list(g.authorized_networks),
        "private_endpoint": g.private_endpoint,
        "deletion_protection": cfg.cluster.deletion_protection,
        "system_machine_type": cfg.cluster.system_node_type or "e2-standard-8",
        "system_node_count": cfg.cluster.system_nodes,
        # 002 §5.2: A4X Max pools do not use multi-networking (the accelerator network profile and DRANET instead);
        # A4 pools attach their RDMA NICs as additional node networks, which needs it.
        "multi_networking": mode == GpuNetworkMode.RDMA_MULTI_NIC,
        # Both GKE gateway classes (internal and regional external) run their proxies in a proxy-only subnet.
        "proxy_only_subnet": cfg.endpoint.gateway,
        "shielded_nodes": not (machine and machine.bare_metal),
        "dcgm_metrics": cfg.observability.enabled,
        "hpa_metrics": bool(cfg.observability.enabled and scaler_alerts(cfg.engine.name, cfg.namespace,
                                                                         cfg.autoscaling, cfg.workload)),
        "webhook_ports": webhook_ports(cfg),
    })


def _gpu_pool(cfg: StackConfig, g: GcpConfig, cluster: GkeCluster, ref: ReservationRef | None) -> GkeGpuNodePool:
    """The GPU pool on the reservation, the sizing's node count."""
    sku = cfg.accelerator.sku
    return GkeGpuNodePool(names.GPU, {
        "project": g.project,
        "region": g.region,
        "zone": cfg.zone,
        "cluster": cluster.cluster_name,
        "cluster_location": cluster.location,
        "pool_name": GPU_POOL_NAME,
        "resource_prefix": f"{cfg.cluster.name}-{GPU_POOL_NAME}",
        "machine_type": sku,
        "node_count": cfg.total_nodes,
        "gpu_driver_version": g.gpu_driver_version,
        "reservation": ref,
        "check_reservation": g.check_reservation,
        "service_account": cluster.node_service_account,
        # The NVIDIA DRA driver only where a replica's tensor parallelism spans nodes (not for TP=4 x PP=2).
        "multi_node_nvlink": cfg.sizing.layout.multi_node_nvlink,
    }, pulumi.ResourceOptions(providers={"kubernetes": cluster.provider}))


def _sync_pool(cfg: StackConfig, g: GcpConfig, cluster: GkeCluster) -> GkeSyncPool | None:
    """The weight sync's own pool, where the sizing counts on one."""
    if not (cfg.weights.sync and cfg.sizing.sync and Cloud.GCP in SYNC_POOLS):
        return None
    return GkeSyncPool(f"{names.PREFIX}-sync-nodes", {
        "project": g.project, "region": g.region, "zone": cfg.zone, "cluster": cluster.cluster_name,
        "service_account": cluster.node_service_account, "pool": SYNC_POOLS[Cloud.GCP],
        "nodes": cfg.sizing.sync.nodes,
    })


def _weights(cfg: StackConfig, g: GcpConfig, cluster: GkeCluster) -> GcsWeightBucket:
    """The weights' bucket, read and written through the cluster's Workload Identity pool."""
    return GcsWeightBucket(names.WEIGHTS, {
        "bucket_name": cfg.weights.bucket,
        "project": g.project,
        "workload_pool": cluster.workload_pool,
        "location": g.region,
        "namespace": cfg.namespace,
        "model_subpath": cfg.weights.model_path(cfg.model.hf_id),
        "retain_on_destroy": cfg.weights.retain_on_destroy,
        "labels": {"k3infra-stack": _label(cfg.stack)},
    })


def webhook_ports(cfg: StackConfig) -> list[int]:
    """The target ports of the webhooks the charts this stack installs serve (catalog.charts): the LeaderWorkerSet
    controller's (9443) when the server is a LeaderWorkerSet, KEDA's (9443, and 6443 for its external-metrics
    APIService) with autoscaling; the DRA driver's and the endpoint picker's charts serve none with k3infra's
    values. tests/test_webhook_reach.py holds every stack's charts against the rules."""
    charts = [(LWS_CHART, LWS_CHART_VERSION)] if cfg.workload == Workload.LEADER_WORKER_SET else []
    if cfg.autoscaling is not None and cfg.autoscaling.enabled:
        charts.append(KEDA_CHART)
    return sorted({w.target_port for chart in charts for w in webhooks_served(CHARTS[chart], {})})


def _label(value: str) -> str:
    out = "".join(ch if ch.isalnum() or ch in "-_" else "-" for ch in value.lower())
    return out[:63]


def billing_after_destroy(cfg: StackConfig, ref: ReservationRef | None) -> list[str]:
    """What keeps costing money after ``pulumi destroy`` (002 §5.7)."""
    assert cfg.gcp is not None
    out = []
    if ref is not None:
        out.append(f"Compute Engine reservation {reservation_path(ref)} in {cfg.zone} keeps billing for every host "
                   "until it is released or ends: k3infra consumes it and `pulumi destroy` does not release it "
                   "(002 §5.7: release the reservation separately for billing to stop)")
    if cfg.weights.retain_on_destroy:
        out.append(f"bucket gs://{cfg.weights.bucket} is retained with the weights in it (~{cfg.model.weight_bytes / 1e12:.2f} "
                   "TB of Standard storage) until you delete it (`gcloud storage rm -r gs://"
                   f"{cfg.weights.bucket}`), or set k3infra:weights.retainOnDestroy to false before destroying")
    if cfg.cluster.deletion_protection:
        out.append(f"cluster {cfg.cluster.name} has deletion protection: `pulumi destroy` stops at it (and it keeps "
                   "billing) until k3infra:cluster.deletionProtection is false and `pulumi up` has applied that")
    return out
