"""The AWS deployments: EKS on a Capacity Block (002 §3.2) and SageMaker HyperPod with the Inference Operator (002 §3.1)."""

from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

import pulumi

from .. import names, offline
from ..catalog import CapacityType, Cloud, Loader, Platform
from ..catalog.eks_addons import MOUNTPOINT, cluster_addon
from ..catalog.hyperpod import DEEP_HEALTH_CHECK_MINUTES
from ..catalog.transfer import SYNC_POOLS
from ..catalog.eks_versions import EKS_DEFAULT_KUBERNETES, HYPERPOD_DEFAULT_KUBERNETES, standard_support_warning
from ..clock import plan_time
from ..config import ConfigError, Problem, StackConfig
from ..config.problems import show
from ..result import DeploymentResult
from ..sizing import rolling_update_timeout_seconds
from ..serving.autoscaling import hyperpod_autoscaling_spec
from .autoscaling import keda
from ..serving.engine import vllm_command
from ..observability.verify_job import with_checklist
from ..serving.status_access import with_status_access
from ..serving.stack import serve
from . import capacity as cb, efa
from . import training_plan as tp
from .bucket import CsiCredentials, S3WeightBucket, S3WeightBucketArgs
from .cluster import EksCluster
from .monitoring import metrics_access, observe
from .nodegroup import CapacityKind, EksGpuNodeGroup
from .sync_pool import EksSyncNodeGroup
from .hyperpod_chart import DEPENDENCIES_CHART_COMMIT, chart_checkout_commit
from .hyperpod_endpoint_config import MODEL_MOUNT_PATH
from .hyperpod_weights import node_weights_of, pod_security_level, prefetch_fits

if TYPE_CHECKING:  # an EKS stack does not load pulumi-aws-native (hyperpod.py imports it)
    from .hyperpod import InferenceEndpointArgs
    from ..serving.weight_sync import WeightSync

S3_STANDARD_USD_PER_GB_MONTH = 0.023
"""S3 Standard list price, first 50 TB, us-east-1 / us-west-2 (aws.amazon.com/s3/pricing)."""

ENDPOINT_NAME = "kimi-k3"
"""Name of the Kubernetes objects that serve the model."""


def deploy(cfg: StackConfig) -> DeploymentResult:
    """Register an AWS stack's resources: EKS (default) or HyperPod."""
    if cfg.platform == Platform.HYPERPOD:
        return _hyperpod(cfg)
    return _eks(cfg)


def _cluster(cfg: StackConfig, *, hyperpod: bool, warnings: list[str]) -> EksCluster:
    """The EKS cluster; warns when its Kubernetes version is out of standard support on the plan's date."""
    assert cfg.aws is not None
    c = cfg.cluster
    version = c.kubernetes_version or (HYPERPOD_DEFAULT_KUBERNETES if hyperpod else EKS_DEFAULT_KUBERNETES)
    setting = "cluster.kubernetesVersion" if c.kubernetes_version else "k3infra's default"
    late = standard_support_warning(version, plan_time().date(), setting=setting)
    if late:
        warnings.append(late)
    return EksCluster(names.PREFIX, {
        "cluster_name": c.name,
        "region": cfg.region,
        "zone": cfg.zone,
        "vpc_cidr": cfg.aws.vpc_cidr,
        "kubernetes_version": version,
        "deletion_protection": c.deletion_protection,
        "system_node_type": c.system_node_type or "m7i.2xlarge",
        "system_nodes": c.system_nodes,
        "oidc_provider": hyperpod,
        "public_access_cidrs": list(cfg.aws.public_access_cidrs),
        "private_endpoint": cfg.aws.private_endpoint,
    })


def _bucket(cfg: StackConfig, cluster: EksCluster, credentials: CsiCredentials, mount: bool,
            mountpoint_version: str | None = None) -> S3WeightBucket:
    """The weight bucket; its Mountpoint add-on at ``mountpoint_version``, else the cluster minor's pin."""
    w = cfg.weights
    args: S3WeightBucketArgs = {
        "bucket_name": w.bucket,
        "region": cfg.region,
        "cluster_name": cluster.cluster_name,
        "namespace": cfg.namespace,
        "model_subpath": w.model_path(cfg.model.hf_id),
        "retain_on_destroy": w.retain_on_destroy,
        "mount": mount,
        "csi_credentials": credentials,
        "mountpoint_addon_version": mountpoint_version or cluster_addon(MOUNTPOINT, cluster.kubernetes_version),
        "mount_throughput_gbps": cfg.sizing.load.mount_throughput_gbps,
    }
    if cluster.oidc_provider_arn is not None:  # the driver of a Mountpoint v1 reads IRSA only
        args["oidc_provider_arn"], args["oidc_issuer"] = cluster.oidc_provider_arn, cluster.oidc_issuer
    return S3WeightBucket(names.WEIGHTS, args, opts=pulumi.ResourceOptions(depends_on=[cluster.system_pool]))


def _bucket_billing(cfg: StackConfig) -> list[str]:
    if not cfg.weights.retain_on_destroy:
        return []
    gb = cfg.model.weight_bytes / 1e9
    return [f"S3 bucket {cfg.weights.bucket} is retained with the weights (~{gb:,.0f} GB, about USD "
            f"{gb * S3_STANDARD_USD_PER_GB_MONTH:,.0f} per month in S3 Standard); delete it with "
            f"`aws s3 rb s3://{cfg.weights.bucket} --force` when no stack needs it"]


@dataclass
class _Capacity:
    """What the GPU node group takes from the stack's capacity, and what the plan says about it."""

    args: dict[str, Any]
    static: dict[str, Any]
    """The capacity output's parts known at preview."""
    warnings: list[str] = field(default_factory=list)
    billing: list[str] = field(default_factory=list)


def _ends_soon(what: str, end: str | None, margin_hours: int, now: datetime) -> list[str]:
    if not cb.ends_within(end, now, margin_hours):
        return []
    return [f"{what} ends {end}, within capacity.endMarginHours ({margin_hours} h) of the plan's date: the GPU nodes stop "
            "then (EKS scales a Capacity Block's group to zero 40 minutes before its end)"]


def _capacity_block(cfg: StackConfig) -> _Capacity:
    """The node group's capacity arguments, outputs, warnings and billing notes.

    Looks the block (or the offering) up at preview and stops the stack when it cannot hold the nodes; places
    the plan's date in the block's window: not started (scale up at the start, do not wait for the server),
    active, or draining (EKS has scaled the group to zero).
    """
    c = cfg.capacity
    itype, nodes = cfg.accelerator.sku, cfg.total_nodes
    now = plan_time()
    kind = {"capacity": CapacityKind.CAPACITY_BLOCK}
    if c.purchase:
        assert c.duration_hours is not None and c.start_after is not None and c.end_before is not None
        offer = cb.find_offering(itype, nodes, c.duration_hours, c.start_after, c.end_before, cfg.region)
        problems = cb.problems(offer, zone=cfg.zone, instance_type=itype, nodes=nodes, purchase=True)
        if problems:
            raise ConfigError(problems, f"stack {cfg.stack} (Capacity Block offering {offer.id})")
        fee = f"{offer.currency or 'USD'} {float(offer.upfront_fee or 0):,.2f}"
        out = _Capacity(
            args={**kind, "capacity_block_offering_id": offer.id},
            static={"type": str(CapacityType.CAPACITY_BLOCK), "purchased": True, "offeringId": offer.id,
                    "availabilityZone": offer.availability_zone, "instanceType": itype,
                    "instanceCount": offer.instance_count, "upfrontFee": offer.upfront_fee, "currency": offer.currency,
                    "window": cb.window(offer)},
            warnings=[f"capacity.purchase is true: `pulumi up` buys Capacity Block offering {offer.id} "
                      f"({offer.instance_count} x {itype} in {offer.availability_zone}, {cb.window(offer)}) for an "
                      f"upfront fee of {fee}, charged at purchase and not refundable"],
            billing=[f"the purchased Capacity Block (offering {offer.id}, {fee} upfront) stays paid for its whole "
                     "window: `pulumi destroy` does not cancel or refund it"])
        if now < cb.parse(cb.rfc3339(c.start_after)):
            out.args["starts_later"] = True
            out.warnings.append(f"the Capacity Block starts after {c.start_after}: the GPU node group is created at 0 "
                                f"nodes and a scheduled action scales it to {nodes} at the block's start; `pulumi up` "
                                "does not wait for the model server (pulumi.com/skipAwait), which starts when the "
                                "nodes join")
        else:
            out.args["capacity_pending"] = "the Capacity Block this update buys may start later in its window"
            out.warnings.append(f"the Capacity Block this update buys may start any time in {cb.window(offer)}: the GPU "
                                f"node group asks for {nodes} node(s) from creation (EKS launches them when the block "
                                "becomes active) and `pulumi up` does not wait for the model server "
                                "(pulumi.com/skipAwait)")
        return out
    assert c.reservation_id is not None
    block = cb.lookup_reservation(c.reservation_id, cfg.region)
    problems = cb.problems(block, zone=cfg.zone, instance_type=itype, nodes=nodes, purchase=False)
    if problems:
        raise ConfigError(problems, f"stack {cfg.stack} (Capacity Block {block.id})")
    out = _Capacity(
        args={**kind, "capacity_reservation_id": c.reservation_id},
        static={"type": str(CapacityType.CAPACITY_BLOCK), "purchased": False,
                "availabilityZone": block.availability_zone, "instanceType": block.instance_type,
                "instanceCount": block.instance_count, "state": block.state},
        billing=[f"Capacity Block {block.id} was paid at purchase and runs until {block.end_date} whether or not the "
                 "nodes exist: `pulumi destroy` does not refund it"])
    phase = cb.phase(block, now)
    out.static["phase"] = phase.value
    if phase == cb.Phase.NOT_STARTED:
        out.args["starts_later"] = True
        out.warnings.append(f"Capacity Block {block.id} is not active until {block.start_date}: the GPU node group is "
                            f"created at 0 nodes and a scheduled action scales it to {nodes} then; `pulumi up` does not "
                            "wait for the model server (pulumi.com/skipAwait), which starts when the nodes join")
    elif phase == cb.Phase.DRAINING:
        out.args.update(draining=True, capacity_pending=f"Capacity Block {block.id} is ending")
        out.warnings.append(f"Capacity Block {block.id} ends {block.end_date} and EKS has scaled its node group to zero: "
                            "k3infra keeps it at zero and does not wait for the model server; consume a new block "
                            "(capacity.reservationId) to serve again")
    if phase != cb.Phase.DRAINING:
        out.warnings += _ends_soon(f"Capacity Block {block.id}", block.end_date, c.end_margin_hours, now)
    return out


def _eks(cfg: StackConfig) -> DeploymentResult:
    warnings: list[str] = []
    billing: list[str] = []
    cluster = _cluster(cfg, hyperpod=False, warnings=warnings)
    k8s_opts = pulumi.ResourceOptions(providers={"kubernetes": cluster.provider})

    if cfg.capacity.type == CapacityType.CAPACITY_BLOCK:
        capacity = _capacity_block(cfg)
        warnings += capacity.warnings
        billing += capacity.billing
    else:
        capacity = _Capacity({"capacity": CapacityKind.ON_DEMAND}, {"type": str(CapacityType.ON_DEMAND)})
    accel = cfg.accelerator
    gpu = EksGpuNodeGroup(names.GPU, {
        "cluster_name": cluster.cluster_name,
        "node_role_arn": cluster.node_role_arn,
        "subnet_ids": cluster.capacity_subnet_ids,
        "security_group_id": cluster.cluster_security_group_id,
        "instance_type": accel.sku,
        "gpus_per_node": accel.gpus_per_node,
        "node_count": cfg.total_nodes,
        "efa_device_plugin": efa.needs_efa(cfg),
        **capacity.args,  # type: ignore[typeddict-item]
    }, opts=k8s_opts)
    bucket = _bucket(cfg, cluster, CsiCredentials.POD, mount=cfg.weights.loader == Loader.FUSE)
    billing += _bucket_billing(cfg)
    sync_pool = _sync_pool(cfg, cluster)

    outputs: dict[str, Any] = {
        "clusterName": cluster.cluster_name,
        "region": cfg.region,
        "kubeconfig": cluster.kubeconfig,
        "bucketUri": bucket.uri,
        "capacity": pulumi.Output.all(gpu.capacity_reservation_id, gpu.capacity_start, gpu.capacity_end).apply(
            lambda v: {**capacity.static, "reservationId": v[0], "start": v[1], "end": v[2]}),
        "capacityStartTime": gpu.capacity_start,
        "capacityEndTime": gpu.capacity_end,
    }
    served = with_checklist(cfg, serve(
        cfg, name=names.PREFIX, provider=cluster.provider, pool=gpu.pool, store=bucket.store, lb=cluster.load_balancer,
        pool_resources=gpu.pool_resources, identity_resources=[*bucket.identity_resources, *bucket.mount_resources],
        metrics=metrics_access(cfg),
        sync_nodes=sync_pool.sync_nodes if sync_pool else None,
        sync_pool_resources=sync_pool.resources if sync_pool else (),
    ))
    served = with_status_access(cfg, served)
    outputs.update(served.outputs())
    monitoring, workspace = observe(cfg, names.PREFIX, cluster, served, gpu.pool, gpu.capacity_end)
    outputs.update(monitoring)
    if workspace is not None:
        keda(cfg, cluster, served, workspace.arn, workspace.id)
    warnings += served.warnings
    return DeploymentResult(outputs=outputs, warnings=tuple(warnings), billing_after_destroy=tuple(billing))


def _sync_pool(cfg: StackConfig, cluster: EksCluster) -> EksSyncNodeGroup | None:
    """The weight sync's own node group, where the stack syncs and the catalog has a pool for AWS."""
    if not (cfg.weights.sync and Cloud.AWS in SYNC_POOLS):
        return None
    return EksSyncNodeGroup(f"{names.PREFIX}-sync-nodes", {
        "cluster_name": cluster.cluster_name, "node_role_arn": cluster.node_role_arn,
        "subnet_ids": cluster.private_subnet_ids, "region": cfg.region, "pool": SYNC_POOLS[Cloud.AWS],
        "kubernetes_version": cluster.kubernetes_version,
    }, opts=pulumi.ResourceOptions(providers={"kubernetes": cluster.provider}, depends_on=[cluster.system_pool]))


def _hyperpod_sync(cfg: StackConfig, cluster: EksCluster, bucket: S3WeightBucket,
                   avoid: dict[str, str]) -> tuple[pulumi.Resource, "WeightSync | None"]:
    """The endpoint's namespace and, with ``weights.sync``, the copy from Hugging Face into the bucket.

    HyperPod serves without ``serve()``, so the pieces the sync needs are made here: the namespace, the sync
    Job's service account (bound to the bucket's writer role), the Hugging Face token Secret, the sync's own
    node group (the EKS cluster's, as on aws-eks), then the serving package's WeightSync Job on that group, never
    on the HyperPod instances.
    """
    import pulumi_kubernetes as k8s

    from ..serving import pods
    from ..serving.server_args import HF_TOKEN_SECRET_KEY
    from ..serving.weight_sync import WeightSync, sync_args_of

    opts = pulumi.ResourceOptions(provider=cluster.provider)
    ns = cfg.namespace
    namespace = k8s.core.v1.Namespace("k3-namespace", metadata=k8s.meta.v1.ObjectMetaArgs(
        name=ns, labels={"app.kubernetes.io/part-of": pods.PART_OF,
                         "pod-security.kubernetes.io/enforce": pod_security_level(cfg)}),
        opts=opts)
    if not cfg.weights.sync:
        return namespace, None
    assert cfg.weights.revision is not None
    in_ns = pulumi.ResourceOptions(provider=cluster.provider, depends_on=[namespace])
    writer = k8s.core.v1.ServiceAccount("k3-writer", metadata=k8s.meta.v1.ObjectMetaArgs(
        name=bucket.store["writer"]["name"], namespace=ns, labels=pods.labels("k3", "writer")),
        automount_service_account_token=False,
        opts=pulumi.ResourceOptions(provider=cluster.provider, depends_on=[namespace, *bucket.identity_resources]))
    deps: list[pulumi.Resource] = [namespace, writer, *bucket.identity_resources]
    token_secret = None
    if cfg.hf_token:
        token_secret = "k3-hf-token"
        deps.append(k8s.core.v1.Secret("k3-hf-token", metadata=k8s.meta.v1.ObjectMetaArgs(
            name=token_secret, namespace=ns, labels=pods.labels("k3", "hf-token")), type="Opaque",
            string_data={HF_TOKEN_SECRET_KEY: pulumi.Output.secret(cfg.hf_token)}, opts=in_ns))
    pool = _sync_pool(cfg, cluster)
    args = sync_args_of(cfg, bucket.store, token_secret, avoid, nodes=pool.sync_nodes if pool else None)
    sync = WeightSync("k3-sync", args, opts=pulumi.ResourceOptions(providers={"kubernetes": cluster.provider},
                                                                    depends_on=[*deps, *(pool.resources if pool else ())]))
    return namespace, sync


def _training_plan(cfg: StackConfig, plan_arn: str | None, deadline_seconds: int) -> tuple[dict[str, Any], str | None,
                                                                                            list[str]]:
    """The capacity output of a HyperPod stack, why the endpoint cannot be created yet (None: it can), and the
    plan's warnings.

    The plan is described at preview where credentials allow (k3infra.aws.training_plan) and the stack stops
    when it cannot hold the instances; without a lookup the output says how to read the window."""
    if plan_arn is None:
        return {"type": str(cfg.capacity.type)}, None, []
    check = tp.lookup(plan_arn, cfg.region, cfg.accelerator.sku, offline=offline.active())
    name = tp.plan_name(plan_arn)
    static: dict[str, Any] = {"type": str(CapacityType.TRAINING_PLAN), "trainingPlanArn": plan_arn}
    facts = check.facts
    if facts is None:
        unread = {**static, "start": None, "end": None,
                  "windowCommand": f"aws sagemaker describe-training-plan --region {cfg.region} "
                                   f"--training-plan-name {name} --query '[StartTime,EndTime,Status]'"}
        return unread, None, list(check.warnings)
    problems = tp.problems(facts, arn=plan_arn, zone=cfg.zone, instance_type=cfg.accelerator.sku,
                           nodes=cfg.total_nodes)
    if problems:
        raise ConfigError(problems, f"stack {cfg.stack} (training plan {name})")
    warnings: list[str] = []
    pending = None
    if facts.status in tp.NOT_ACTIVE:
        pending = f"training plan {name} is {facts.status} until {facts.start}"
        warnings.append(f"{pending}: the HyperPod cluster and the inference operator are created now and the instances "
                        "start with the plan; the InferenceEndpointConfig is not, because the operator's deployment "
                        f"deadline (maxDeployTimeInSeconds, {deadline_seconds} s) would run out before the plan starts: "
                        "run `pulumi up` again once the plan is Active, which creates the endpoint and waits for it")
    warnings += _ends_soon(f"training plan {name}", facts.end, cfg.capacity.end_margin_hours, plan_time())
    return {**static, "status": facts.status, "start": facts.start, "end": facts.end,
            "availabilityZones": list(facts.availability_zones), "instanceCount": facts.instance_count}, pending, warnings


def _dependencies_chart(cfg: StackConfig) -> list[str]:
    """The HyperPod dependencies chart must be the pinned commit's; a missing checkout is said in the plan."""
    assert cfg.aws is not None
    path = cfg.aws.hyperpod_helm_chart
    clone = (f"git clone https://github.com/aws/sagemaker-hyperpod-cli && git -C sagemaker-hyperpod-cli checkout "
             f"{DEPENDENCIES_CHART_COMMIT}")
    found = chart_checkout_commit(path)
    if found is None:
        return [f"the HyperPod dependencies chart {path} is not a git checkout here, so its commit is unchecked: "
                f"`pulumi up` needs it at {DEPENDENCIES_CHART_COMMIT[:12]} ({clone})"]
    if found != DEPENDENCIES_CHART_COMMIT:
        raise ConfigError([Problem(
            key="k3infra:aws.hyperpodHelmChart",
            reason=f"the checkout is at commit {found[:12]}, and k3infra installs the chart of "
                   f"{DEPENDENCIES_CHART_COMMIT[:12]} (its chart version never changes, the commit pins it)",
            given=show(path), allowed=f"a checkout of aws/sagemaker-hyperpod-cli at {DEPENDENCIES_CHART_COMMIT}")],
            f"stack {cfg.stack}")
    return []


def _deep_health_checks(cfg: StackConfig, deadline: int) -> tuple[int, str | None, list[str]]:
    """With ``aws.deepHealthChecks``: the endpoint's deadline with the checks in it (a replacement instance spends
    them before the operator can place the model again), why the endpoint waits for a later update (this one creates
    the cluster, whose instances start in their checks), and what the plan says. Without: ``deadline`` unchanged."""
    from . import hyperpod_nodes as nodes

    assert cfg.aws is not None
    if not cfg.aws.deep_health_checks:
        return deadline, None, []
    deadline += DEEP_HEALTH_CHECK_MINUTES * 60
    check = nodes.lookup(cfg.cluster.name, cfg.region, offline=offline.active())
    waits = nodes.endpoint_waits(check, cfg.cluster.name)
    warnings = list(check.warnings)
    if waits:
        warnings.append(f"{waits}: the InferenceEndpointConfig is not created on this update, because the operator's "
                        "deadline (maxDeployTimeInSeconds) runs from its creation; run `pulumi up` again once `kubectl "
                        "get nodes -l sagemaker.amazonaws.com/node-health-status=Schedulable` lists an instance, which "
                        "creates the endpoint and waits for it")
    warnings += [w for w in (nodes.not_schedulable_warning(check, cfg.cluster.name, deadline),) if w]
    return deadline, waits, warnings


def _hyperpod(cfg: StackConfig) -> DeploymentResult:
    # Imported here: an EKS stack does not load pulumi-aws-native.
    from .hyperpod import (MOUNTPOINT_ADDON_VERSION, OPERATOR_DEFAULT_DEPLOY_SECONDS, HyperPodCluster, HyperPodEndpoint,
                           health_agent_region_warning)

    assert cfg.aws is not None
    billing: list[str] = []
    plan_arn = cfg.capacity.training_plan_arn if cfg.capacity.type == CapacityType.TRAINING_PLAN else None
    s = cfg.sizing
    scaling = cfg.autoscaling
    assert scaling is not None
    # An update replaces every replica the scaler may run, one start each (serving.rollout); deep health checks
    # add a replacement instance's checks.
    deadline, nodes_pending, warnings = _deep_health_checks(cfg, max(
        rolling_update_timeout_seconds(s.await_timeout_seconds, scaling.max_replicas), OPERATOR_DEFAULT_DEPLOY_SECONDS))
    capacity_output, pending, plan_warnings = _training_plan(cfg, plan_arn, deadline)
    pending = pending or nodes_pending
    warnings += plan_warnings
    warnings += _dependencies_chart(cfg)
    warnings += [w for w in (health_agent_region_warning(cfg.region),) if w]
    prefetch_fits(cfg)
    cluster = _cluster(cfg, hyperpod=True, warnings=warnings)

    # The operator mounts the bucket through the Mountpoint driver with the driver's own (read-only) identity.
    bucket = _bucket(cfg, cluster, CsiCredentials.DRIVER, mount=True, mountpoint_version=MOUNTPOINT_ADDON_VERSION)
    billing += _bucket_billing(cfg)
    hp = HyperPodCluster("k3-hyperpod", {
        "cluster_name": cfg.cluster.name,
        "region": cfg.region,
        "eks_cluster_arn": cluster.arn,
        "vpc_id": cluster.vpc_id,
        "subnet_ids": cluster.capacity_subnet_ids,
        "security_group_ids": cluster.cluster_security_group_id.apply(lambda sg: [sg]),
        "instance_type": cfg.accelerator.sku,
        "instance_count": cfg.total_nodes,
        "training_plan_arn": plan_arn,
        "dependencies_chart": cfg.aws.hyperpod_helm_chart,
        "deep_health_checks": cfg.aws.deep_health_checks,
    }, opts=pulumi.ResourceOptions(providers={"kubernetes": cluster.provider}, depends_on=[cluster.system_pool]))

    namespace, sync = _hyperpod_sync(cfg, cluster, bucket, avoid={"k3infra.io/pool": "k3-hyperpod"})

    endpoint = HyperPodEndpoint(names.ENDPOINT, {
        "region": cfg.region,
        "eks_cluster_name": cluster.cluster_name,
        "hyperpod_cluster_arn": hp.cluster_arn,
        "oidc_provider_arn": cluster.oidc_provider_arn or "",
        "oidc_issuer": cluster.oidc_issuer,
        "bucket_name": bucket.bucket_name,
        "endpoint": {**_endpoint(cfg, deadline, pending), "node_weights": node_weights_of(
            cfg, sync.marker() if sync is not None else None, bucket.store, bucket.bucket_arn)},
    }, opts=pulumi.ResourceOptions(providers={"kubernetes": cluster.provider},
                                   depends_on=[cluster.system_pool, *bucket.mount_resources, hp, namespace,
                                               *([sync] if sync is not None else [])]))

    if plan_arn:
        billing.append(f"Flexible Training Plan {plan_arn} is paid for its whole term up front: `pulumi destroy` "
                       "releases the instances but neither cancels nor refunds the plan")
    outputs: dict[str, Any] = {
        "endpoint": endpoint.endpoint.apply(lambda u: f"{u}/v1/chat/completions" if u else ""),
        "clusterName": cluster.cluster_name,
        "region": cfg.region,
        "kubeconfig": cluster.kubeconfig,
        "bucketUri": bucket.uri,
        "hyperpodClusterArn": hp.cluster_arn,
        "capacity": capacity_output,
        # Read with DescribeTrainingPlan at preview where credentials allow; otherwise the capacity output says how.
        "capacityStartTime": capacity_output.get("start"),
        "capacityEndTime": capacity_output.get("end"),
    }
    return DeploymentResult(outputs=outputs, warnings=tuple(warnings), billing_after_destroy=tuple(billing))


def _endpoint(cfg: StackConfig, deadline: int, pending: str | None) -> "InferenceEndpointArgs":
    """What the HyperPod endpoint serves: the vLLM line for an image whose entrypoint is the server, the model from
    the bucket's mount, the probes' and the deployment's budgets, and the scaler's spec where it scales."""
    scaling, s = cfg.autoscaling, cfg.sizing
    assert scaling is not None
    cmd = vllm_command(cfg, model=MODEL_MOUNT_PATH)
    return {
        "name": ENDPOINT_NAME,
        "namespace": cfg.namespace,
        "model_name": cfg.model.served_model_name,
        "instance_type": cfg.accelerator.sku,
        "replicas": scaling.initial_replicas,
        "image": cfg.image,
        "args": cmd.api_server_args(),
        "env": cmd.env,
        "port": cfg.engine.port,
        "health_path": cfg.engine.health_path,
        "metrics_path": cfg.engine.metrics_path,
        "gpus": cfg.accelerator.gpus_per_node,
        "model_location": cfg.weights.model_path(cfg.model.hf_id),
        "prefetch": cfg.weights.loader == Loader.BUCKET_COPY,  # unused with the node's copy (hyperpod_weights)
        "max_deploy_seconds": deadline,
        "startup_budget_seconds": s.probe_budget_seconds,
        "create_namespace": False,
        "capacity_pending": pending,
        "autoscaling": hyperpod_autoscaling_spec(scaling, cfg.engine.name, cfg.namespace,
                                                 cfg.observability.workspace or "")
        if scaling.enabled else None,
    }

