"""Alibaba Cloud deployment: ACK (002 §6.3) or PAI-EAS (002 §6.2), composed from the components of this package.

ACK: AckCluster -> AckGpuNodePool (the sizing's node count, on the stack's capacity) and OssWeightBucket (RRSA
roles trusting the cluster's OIDC provider) -> serving (LeaderWorkerSet over the GPU nodes, weight sync Job).
PAI-EAS: OssWeightBucket (no cluster, no RRSA) -> PaiEasService running vLLM's canonical command on a Lingjun
quota (or, for a one-machine replica, an EAS resource group), the model mounted read-only from OSS.
"""

import math
from typing import Any, Mapping

import pulumi
import pulumi_alicloud as alicloud

from .. import maintenance, names
from ..catalog import GB, CapacityType, Cloud, Loader, Platform, pod_health_check_ranges
from ..config import AlicloudConfig, StackConfig
from ..config.naming import eas_service_name
from ..result import DeploymentResult
from ..serving.contract import LoadBalancerSettings
from ..serving.engine import Role, vllm_command
from .bucket import OssWeightBucket
from .cluster import AckCluster
from .eas_unit import EAS_LEADER_ADDRESS, EAS_RDMA_SETUP, RANK_ENV, unit_script
from .gpu_pool import AckCapacity, AckGpuNodePool
from ..catalog.autoscaling import ARMS_INSTANCE_IS_CLUSTER_ID, ARMS_INSTANCE_VERSION
from .monitoring import metrics_access, observe
from .autoscaling import eas_autoscaling_args
from .pai import STOP_ONE_UNIT, PaiEasService
from .registry import registry_access

MACHINE_MEMORY_GIB: Mapping[str, int] = {"ecs.ebmgn8v.48xlarge": 1024}
"""Host memory of the GPU machine types (docs/catalog-research.md §1.8: 1024 GiB); the catalog records vCPUs only."""

CONTAINER_SHARE = 0.9
"""Share of a machine's vCPUs and memory the EAS container requests; the rest stays with the platform."""

MODEL_MOUNT = "/mnt/models"
"""Where the model directory is mounted (002 §6.2 and §6.3: ``vllm serve /mnt/models/Kimi-K3``)."""

ADDRESS_TYPE = "service.beta.kubernetes.io/alibaba-cloud-loadbalancer-address-type"
"""ACK cloud controller annotation: ``intranet`` (a VPC-only CLB) or ``internet``."""


def ack_load_balancer(vpc_cidr: str) -> LoadBalancerSettings:
    """ACK's load balancers: an intranet CLB admitting the VPC unless the stack asks for an internet one.

    The CLB controller does not apply ``loadBalancerSourceRanges`` (kubernetes/cloud-provider-alibaba-cloud applies
    them to NLB only); the intranet address keeps the CLB inside the VPC and serving's NetworkPolicy (Terway with
    NetworkPolicy on) admits the VPC's range, and the CLB's health checks from 100.64.0.0/10 on the serving port
    (k3infra.catalog.health_checks): without them every backend is marked down."""
    return LoadBalancerSettings(
        internal_annotations={ADDRESS_TYPE: "intranet"},
        public_annotations={ADDRESS_TYPE: "internet"},
        internal_source_ranges=[vpc_cidr],
        health_check_ranges=list(pod_health_check_ranges(Cloud.ALICLOUD)),
        # ACK has no inference gateway: serving installs agentgateway (serving.gateway_install).
        install_gateway=True,
    )


def deploy(cfg: StackConfig) -> DeploymentResult:
    """Register the stack's resources on Alibaba Cloud."""
    if cfg.platform == Platform.PAI_EAS:
        return deploy_pai(cfg)
    return deploy_ack(cfg)


def tags(cfg: StackConfig) -> dict[str, str]:
    """Tags on every Alibaba Cloud resource of the stack."""
    return {"k3infra-stack": cfg.stack, "k3infra-model": cfg.model.served_model_name}


def model_dir(cfg: StackConfig) -> str:
    """The model's directory in the container: /mnt/models/<last part of the Hugging Face id>."""
    return f"{MODEL_MOUNT}/{cfg.model.hf_id.rsplit('/', 1)[-1]}"


def bucket_notes(cfg: StackConfig) -> list[str]:
    """What the weight bucket leaves behind."""
    uri = f"oss://{cfg.weights.bucket}"
    if cfg.weights.retain_on_destroy:
        return [f"OSS bucket {uri} is kept on destroy with the {cfg.model.weight_bytes / 1e12:.2f} TB of weights in it: "
                "Standard storage bills monthly until you delete it (002 §6.4; ossutil rm -r -f, then ossutil rb)"]
    return []


# ---------------------------------------------------------------------------------------------------- ACK


def data_disk_gb(cfg: StackConfig) -> int:
    """Data disk of a GPU node: 500 GB for the runtime and image, or room for this node's share of the weights
    when the loader copies them to local disk first (ebmgn8v has no local NVMe)."""
    if cfg.weights.loader != Loader.BUCKET_COPY:
        return 500
    return max(500, math.ceil(cfg.sizing.load.bytes_per_node / GB * 1.2) + 200)


def deploy_ack(cfg: StackConfig) -> DeploymentResult:
    """ACK Pro cluster, GPU pool, weight bucket, then the cloud-neutral serving workload (002 §6.3)."""
    # Kubernetes serving and its checklist; a PAI-EAS stack does not load them
    from ..observability.verify_job import with_checklist
    from ..serving.status_access import with_status_access
    from ..serving.stack import serve
    from .keda import keda

    ali = cfg.alicloud
    assert ali is not None
    t = tags(cfg)
    cluster = _ack_cluster(cfg, ali, t)
    pool = _ack_pool(cfg, ali, cluster, t)
    bucket = _ack_bucket(cfg, cluster, t)
    warnings = _private_api_server(ali)
    outputs: dict[str, pulumi.Input[Any]] = {
        "kubeconfig": cluster.kubeconfig,
        "clusterId": cluster.cluster_id,
        "apiServerIntranet": cluster.api_server_intranet,
        "gpuNodePoolId": pool.node_pool_id,
        "bucketUri": bucket.uri,
        "readerRole": bucket.reader_role_name or "",
        "writerRole": bucket.writer_role_name or "",
    }
    registry = registry_access(cfg, cluster)
    serving = with_checklist(cfg, serve(
        cfg, name=names.PREFIX, provider=cluster.provider, pool=pool.gpu_pool, store=bucket.weight_store,
        lb=ack_load_balancer(ali.vpc_cidr), pool_resources=[pool.pool, *registry],
        identity_resources=[*bucket.identity_resources, cluster.pod_identity, cluster.system_pool],
        metrics=metrics_access(cfg)))
    serving = with_status_access(cfg, serving)
    outputs.update(serving.outputs())
    monitoring, prometheus_addon = observe(cfg, names.PREFIX, cluster, serving)
    outputs.update(monitoring)
    if keda(cfg, cluster, serving, prometheus_addon):
        warnings.extend(f"autoscaling on ARMS Prometheus: {fact}" for fact in (ARMS_INSTANCE_IS_CLUSTER_ID,
                                                                                ARMS_INSTANCE_VERSION))
    warnings.extend(serving.warnings)
    if cfg.cluster.deletion_protection:
        warnings.append("cluster.deletionProtection is true: `pulumi destroy` stops at the ACK cluster until you set "
                        "it false and run `pulumi up` (the GPU node pool is deleted first, 002 §6.4)")
    return DeploymentResult(outputs=outputs, warnings=tuple(warnings), billing_after_destroy=tuple(_ack_billing(cfg)))


def _ack_cluster(cfg: StackConfig, ali: AlicloudConfig, t: dict[str, str]) -> AckCluster:
    """The ACK Pro cluster: its VPC, system nodes, upgrades and their window, API server access."""
    return AckCluster(names.PREFIX, {
        "cluster_name": cfg.cluster.name,
        "zone_id": cfg.zone,
        "vpc_cidr": ali.vpc_cidr,
        "kubernetes_version": cfg.cluster.kubernetes_version,
        "system_node_type": cfg.cluster.system_node_type,
        "system_nodes": cfg.cluster.system_nodes,
        "deletion_protection": cfg.cluster.deletion_protection,
        "public_api_server": ali.public_api_server,
        "upgrade_channel": ali.upgrade_channel,
        "node_auto_upgrade": ali.node_auto_upgrade,
        "maintenance_window": maintenance.from_config(ali.maintenance_window),
        "tags": t,
    })


def _ack_pool(cfg: StackConfig, ali: AlicloudConfig, cluster: AckCluster, t: dict[str, str]) -> AckGpuNodePool:
    """The GPU node pool on the stack's capacity (private pool or Lingjun), the sizing's node count."""
    cap = cfg.capacity
    return AckGpuNodePool(names.GPU, {
        "cluster_id": cluster.cluster_id,
        "vswitch_ids": [cluster.node_vswitch_id],
        "instance_type": cfg.accelerator.sku,
        "node_count": cfg.total_nodes,
        "gpus_per_node": cfg.accelerator.gpus_per_node,
        "key_name": cluster.node_key_name,
        "capacity": AckCapacity(str(cap.type)),
        "private_pool_id": cap.private_pool_id,
        "lingjun_cluster_id": cap.lingjun_cluster_id,
        "lingjun_node_group_id": cap.lingjun_node_group_id,
        "gpu_driver_version": ali.gpu_driver_version,
        "data_disk_gb": data_disk_gb(cfg),
        "node_auto_upgrade": ali.node_auto_upgrade,
        "tags": t,
    })


def _ack_bucket(cfg: StackConfig, cluster: AckCluster, t: dict[str, str]) -> OssWeightBucket:
    """The weights' bucket, with RRSA roles trusting the cluster's OIDC provider."""
    return OssWeightBucket(names.WEIGHTS, {
        "bucket_name": cfg.weights.bucket,
        "region": cfg.region,
        "model_subpath": cfg.weights.model_path(cfg.model.hf_id),
        "retain_on_destroy": cfg.weights.retain_on_destroy,
        "namespace": cfg.namespace,
        "oidc_provider_arn": cluster.oidc_provider_arn,
        "oidc_issuer_url": cluster.oidc_issuer_url,
        "tags": t,
    })


def _private_api_server(ali: AlicloudConfig) -> list[str]:
    """What a VPC-only API server means for ``pulumi up`` (nothing when it is public)."""
    warnings: list[str] = []
    if not ali.public_api_server:
        warnings.append("the ACK API server has only a VPC address (alicloud.publicApiServer false, the default; output "
                        "apiServerIntranet): Pulumi creates the Kubernetes objects only from inside the VPC it creates "
                        f"({ali.vpc_cidr}): an ECS instance in it, or a network joined to it by VPN Gateway, CEN or "
                        "Express Connect. The first `pulumi up` from elsewhere stops after the Alibaba Cloud resources; "
                        "connect, then run it again. Or set alicloud.publicApiServer: true before the cluster is created "
                        "(slb_internet_enabled applies at creation only)")
    return warnings


def _ack_billing(cfg: StackConfig) -> list[str]:
    """What keeps billing after ``pulumi destroy``: the bucket, the private pool or the Lingjun node group."""
    cap = cfg.capacity
    billing = bucket_notes(cfg)
    if cap.type == CapacityType.PRIVATE_POOL:
        billing.append(f"ECS private pool {cap.private_pool_id} (capacity reservation or elasticity assurance) bills "
                       "until it expires or you release it, whether or not nodes use it; the stack only consumes it")
    elif cap.type == CapacityType.LINGJUN:
        billing.append(f"Lingjun node group {cap.lingjun_node_group_id} (cluster {cap.lingjun_cluster_id}) is contracted "
                       "through sales and bills per the contract: cancel it separately (002 §6.4)")
    return billing


# ---------------------------------------------------------------------------------------------------- PAI-EAS


def eas_script(cfg: StackConfig) -> tuple[str, dict[str, str]]:
    """The bash every EAS machine runs, and the engine's environment.

    One machine: ``vllm serve`` with 002 §6.2's flags. Several: vLLM's own multi-node mode by ``RANK_ID`` (rank 0
    serves; the rest run ``--headless --node-rank $RANK_ID`` against ``MASTER_ADDRESS``, with a health responder on
    the serving port, since EAS probes every machine of the unit: k3infra.alicloud.eas_unit)."""
    model = model_dir(cfg)
    if cfg.nodes == 1:
        single = vllm_command(cfg, model=model, role=Role.SINGLE)
        return single.script(), dict(single.env)
    leader = vllm_command(cfg, model=model, role=Role.LEADER, leader_address=EAS_LEADER_ADDRESS)
    worker = vllm_command(cfg, model=model, role=Role.WORKER, node_rank=f"${{{RANK_ENV}}}",
                          leader_address=EAS_LEADER_ADDRESS)
    return unit_script(leader, worker, [EAS_RDMA_SETUP], cfg.engine.health_path), dict(leader.env)


def update_downtime_note(cfg: StackConfig) -> str:
    """What an update of the service costs when the resource holds no spare unit (rolling_strategy max_surge 0)."""
    start = math.ceil(cfg.sizing.await_timeout_seconds / 60)
    held = (cfg.alicloud.pai_resource_machines if cfg.alicloud else None) or cfg.nodes * cfg.replicas
    lost = ("the endpoint is down" if cfg.replicas == 1 else
            f"one of the {cfg.replicas} replicas at a time is down, the others serving,")
    return (f"PAI-EAS updates stop a unit before starting its replacement (rolling_strategy max_surge 0, "
            f"max_unavailable 1): the resource holds {held} machines, no room for a {cfg.nodes}-machine unit beside "
            f"the old ones, and EAS's default surge would wait for one forever. So any change to the service "
            f"(image, command, environment, probes) means downtime: {lost} for up to {start} minutes while the new "
            f"unit loads the weights (`pulumi up` waits that long per replica). Set alicloud.paiResourceMachines "
            f"when the quota holds {cfg.nodes * (cfg.replicas + 1)} or more machines, and updates surge instead")


def deploy_pai(cfg: StackConfig) -> DeploymentResult:
    """Weight bucket and a PAI-EAS service (002 §6.2)."""
    ali = cfg.alicloud
    assert ali is not None and ali.pai_resource_group is not None
    t = tags(cfg)
    bucket = OssWeightBucket(names.WEIGHTS, {
        "bucket_name": cfg.weights.bucket,
        "region": cfg.region,
        "model_subpath": cfg.weights.model_path(cfg.model.hf_id),
        "retain_on_destroy": cfg.weights.retain_on_destroy,
        "tags": t,
    })
    eas = _pai_service(cfg, ali, bucket, t)
    quota = ali.pai_resource_group.startswith("quota")
    warnings = _pai_warnings(cfg, ali, eas, quota)
    billing = _pai_billing(cfg, ali, quota)
    outputs: dict[str, pulumi.Input[Any]] = {
        "endpoint": eas.endpoint,
        "publicEndpoint": eas.public_endpoint,
        "easServiceName": eas.service_name,
        "easResource": ali.pai_resource_group,
        "bucketUri": bucket.uri,
    }
    return DeploymentResult(outputs=outputs, warnings=tuple(warnings), billing_after_destroy=tuple(billing))


def _pai_service(cfg: StackConfig, ali: AlicloudConfig, bucket: OssWeightBucket, t: dict[str, str]) -> PaiEasService:
    """The EAS service: vLLM's command line on every machine of a unit, the model mounted from the bucket, the
    machines' share of the resource, the scaler."""
    assert ali.pai_resource_group is not None
    script, env = eas_script(cfg)
    accel = cfg.accelerator
    memory_gib = MACHINE_MEMORY_GIB.get(accel.sku)
    if memory_gib is None:
        raise pulumi.RunError(f"k3infra does not know the host memory of {accel.sku}: add it to MACHINE_MEMORY_GIB")
    name = eas_service_name(cfg.stack)
    scaling = cfg.autoscaling
    assert scaling is not None
    return PaiEasService(names.ENDPOINT, {
        "service_name": name,
        "region": cfg.region,
        "zone_id": cfg.zone,
        "image": cfg.image,
        "script": script,
        "env": env,
        "port": cfg.engine.port,
        "health_path": cfg.engine.health_path,
        "startup_budget_seconds": cfg.sizing.probe_budget_seconds,
        "machines": cfg.nodes,
        "replicas": scaling.initial_replicas,
        "gpus_per_machine": accel.gpus_per_node,
        "cpus_per_machine": int(accel.vcpus * CONTAINER_SHARE),
        "memory_mb_per_machine": int(memory_gib * 1024 * CONTAINER_SHARE),
        "resource": ali.pai_resource_group,
        "workspace_id": ali.pai_workspace_id,
        "model_uri": bucket.uri,
        "mount_path": model_dir(cfg),
        "vpc_cidr": ali.vpc_cidr,
        "token": pulumi.Output.secret(cfg.api_key) if cfg.api_key else None,
        "docker_auth": pulumi.Output.secret(cfg.registry_auth) if cfg.registry_auth else None,
        "registry_instance_id": ali.acr_instance_id,
        "create_timeout_seconds": cfg.sizing.await_timeout_seconds,
        # What the quota or group holds: the stated machines, else the stack's replicas' (config.autoscaling
        # capacity_replicas), so an update surges wherever a unit fits beyond the scaler's maximum.
        "resource_machines": ali.pai_resource_machines or cfg.nodes * scaling.capacity_replicas,
        "tags": t,
        "autoscaling": eas_autoscaling_args(scaling),
    })


def _pai_warnings(cfg: StackConfig, ali: AlicloudConfig, eas: PaiEasService, quota: bool) -> list[str]:
    """What the plan says about the service: the weights to upload, the bill, the token, the public gateway,
    scale to zero, the downtime of an update without a spare unit."""
    scaling = cfg.autoscaling
    assert scaling is not None
    warnings = [
        f"upload the weights to oss://{cfg.weights.bucket}/{cfg.weights.model_path(cfg.model.hf_id)}/ before the "
        "service starts (docs/alicloud.md: create the bucket first with `pulumi up --target`, then ossutil cp); "
        "EAS has no cluster for the sync Job",
        "PAI-EAS bills while the service exists, idle or not: stop or delete it after testing (002 §6.4)",
    ]
    if cfg.api_key is None:
        warnings.append("k3infra:apiKey is not set: EAS generates the service token; read it in the EAS console "
                        "(Invocation information) before calling the endpoint")
    else:
        warnings.append("k3infra:apiKey is the EAS service token inside service_config, and EAS returns tokens beside "
                        "it (DescribeService AccessToken): right after the first `pulumi up`, `pulumi preview --diff` "
                        "must show the service unchanged, else every later `pulumi up` rolls the Unit "
                        "(docs/alicloud.md, After the first deploy)")
    warnings.append("EAS's shared gateway also serves the service on the internet (token-guarded); the endpoint "
                    "output is the VPC one")
    if scaling.scale_to_zero:
        warnings.append(f"autoscaling.scaleToZero on PAI-EAS: the {'Lingjun quota' if quota else 'EAS resource group'} "
                        f"{ali.pai_resource_group} is held and billed whether instances run or not; at zero instances "
                        "its machines are free for other services in it, the bill stays (002 §6.4)")
    if eas.rolling == STOP_ONE_UNIT:
        warnings.append(update_downtime_note(cfg))
    return warnings


def _pai_billing(cfg: StackConfig, ali: AlicloudConfig, quota: bool) -> list[str]:
    """What keeps billing after ``pulumi destroy``: the service until deleted, the quota or resource group, the
    bucket."""
    name = eas_service_name(cfg.stack)
    billing = [f"PAI-EAS service {name} bills until `pulumi destroy` deletes it, even while idle (002 §6.4)"]
    if quota:
        billing.append(f"Lingjun resource quota {ali.pai_resource_group} outlives the stack and bills per its "
                       "contract: cancel it separately (002 §6.4)")
    else:
        billing.append(f"EAS resource group {ali.pai_resource_group}: its machines bill until you release them in "
                       "the EAS console")
    billing += bucket_notes(cfg)
    return billing
