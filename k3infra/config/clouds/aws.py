"""AWS configuration rules beyond the cloud-neutral ones.

What needs the cloud's answer (the availability zone of a Capacity Block, reserved or offered) is checked at
preview by k3infra.aws.capacity, with the same message shape and keys.
"""

import ipaddress
import re
from typing import Any, Mapping

from ...catalog import CapacityType, Exposure, Platform
from ...catalog.charts import CLUSTER_AUTOSCALER_CHARTS
from ...catalog.eks_addons import EKS_CLUSTER_ADDONS
from ...catalog.eks_versions import HYPERPOD_KUBERNETES, key as version_key, minor
from ...catalog.hyperpod import DEEP_HEALTH_CHECK_MINUTES
from ..model import AwsConfig
from ..problems import Problems
from ..naming import cidr_problem
from .common import EXAMPLE_CIDR, CheckContext, control_plane_access

K = "k3infra:"

DEFAULT_HYPERPOD_CHART = "sagemaker-hyperpod-cli/helm_chart/HyperPodHelmChart"

VPC_PREFIX_RANGE = (16, 20)
"""AWS allows VPCs of /16 to /28; k3infra needs room for a quarter-VPC private subnet per zone (pods take VPC
addresses with the VPC CNI), so /16 to /20 (k3infra.aws.network)."""

NOT_PUBLIC = tuple(ipaddress.IPv4Network(n) for n in (
    "0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16", "172.16.0.0/12", "192.168.0.0/16",
    "224.0.0.0/4", "240.0.0.0/4"))
"""Ranges that never reach an EKS public endpoint from the internet: private (RFC 1918), shared (RFC 6598),
loopback, link-local, multicast, reserved and "this network" (0.0.0.0/0 itself is allowed: it means everyone)."""

PUBLIC_ACCESS_CIDRS_MAX = 40
"""CIDR blocks an EKS public endpoint can be limited to ("Public endpoint access CIDR ranges per cluster",
EKS service quotas)."""

CAPACITY_BLOCK_MAX_INSTANCES = 64
"""Instances one Capacity Block can hold (EC2 DescribeCapacityBlockOfferings: up to 64 per block)."""

CAPACITY_BLOCK_DAILY_UNTIL_HOURS = 14 * 24
"""Capacity Blocks last 1-14 days in 1-day steps, then up to 182 days in 7-day steps (EC2 User Guide,
capacity-blocks)."""


def _bad(p: Problems, key: str) -> bool:
    return key in p.keys()


def _endpoint_access(aws: dict, p: Problems, warnings: list[str]) -> None:
    """``aws.publicAccessCidrs`` and ``aws.privateEndpoint``: what may reach the EKS API (EKS User Guide,
    cluster-endpoint: the blocks "cannot include reserved addresses"; none given means 0.0.0.0/0, which k3infra
    takes only when the stack lists it: config.clouds.control_plane_access)."""
    key = K + "aws.publicAccessCidrs"
    cidrs = aws.get("publicAccessCidrs")
    cidrs = cidrs if isinstance(cidrs, list) else None
    private = aws.get("privateEndpoint") is True
    if cidrs and not _bad(p, key):
        if private:
            p.add(key, "a private-only endpoint (aws.privateEndpoint) has no public access to limit", cidrs,
                  "no publicAccessCidrs with privateEndpoint: true")
        if len(cidrs) > PUBLIC_ACCESS_CIDRS_MAX:
            p.add(key, f"EKS limits a public endpoint to {PUBLIC_ACCESS_CIDRS_MAX} CIDR blocks", len(cidrs),
                  f"at most {PUBLIC_ACCESS_CIDRS_MAX}")
        for i, cidr in enumerate(cidrs):
            if cidr_problem(cidr):
                continue  # control_plane_access reports it
            net = ipaddress.IPv4Network(cidr)
            if net.prefixlen and any(net.overlaps(bad) for bad in NOT_PUBLIC):
                p.add(f"{key}[{i}]", "EKS admits only public addresses to its public endpoint (no private or reserved "
                      "ranges: in-VPC clients use the private endpoint)", cidr,
                      f"a public IPv4 CIDR such as {EXAMPLE_CIDR} (your egress address)")
    elif private:
        warnings.append("aws.privateEndpoint is true: the EKS API has no public endpoint, so `pulumi up` and kubectl "
                        "must run from the VPC or a network connected to it")
    control_plane_access(p, warnings, plane="EKS API endpoint", cidrs_key="aws.publicAccessCidrs", cidrs=cidrs,
                         private_key="aws.privateEndpoint", private=private)


def check(ctx: CheckContext, p: Problems, warnings: list[str]) -> None:
    """Report AWS-specific problems in ``ctx``."""
    v = ctx.values
    aws = v.get("aws")
    if isinstance(aws, dict):
        cidr = aws.get("vpcCidr")
        key = K + "aws.vpcCidr"
        if isinstance(cidr, str) and not _bad(p, key):
            try:
                prefix = ipaddress.IPv4Network(cidr, strict=True).prefixlen
            except ValueError as e:
                p.add(key, f"is not a network address: {e}", cidr, "an IPv4 CIDR from /16 to /20")
            else:
                lo, hi = VPC_PREFIX_RANGE
                if not lo <= prefix <= hi:
                    p.add(key, f"a /{prefix} VPC does not fit k3infra's layout: AWS VPCs are at most /16, and each "
                          "private subnet takes a quarter of the VPC (every pod takes a VPC address)", cidr,
                          f"a CIDR from /{lo} to /{hi}, such as 10.0.0.0/16")

        chart = aws.get("hyperpodHelmChart")
        if ctx.platform == Platform.EKS and isinstance(chart, str) and chart != DEFAULT_HYPERPOD_CHART:
            warnings.append("aws.hyperpodHelmChart is ignored: it applies to platform hyperpod")
        _endpoint_access(aws, p, warnings)

    bucket_key = K + "weights.bucket"
    if ctx.weights is not None and "." in ctx.weights.bucket and not _bad(p, bucket_key):
        p.add(bucket_key, "S3 bucket names with dots break virtual-hosted HTTPS certificate checks (Mountpoint for "
              "Amazon S3 and the RunAI streamer address the bucket as BUCKET.s3.REGION.amazonaws.com)",
              ctx.weights.bucket, "a name with lowercase letters, digits and hyphens")

    cap = ctx.capacity
    if cap is not None and cap.type == CapacityType.CAPACITY_BLOCK and cap.purchase:
        hours = cap.duration_hours
        key = K + "capacity.durationHours"
        if isinstance(hours, int) and not _bad(p, key):
            if hours <= CAPACITY_BLOCK_DAILY_UNTIL_HOURS and hours % 24:
                p.add(key, "Capacity Blocks up to 14 days last whole days", hours,
                      "24, 48, ... 336 (1-14 days), then multiples of 168 up to 4368 (182 days)")
            elif hours > CAPACITY_BLOCK_DAILY_UNTIL_HOURS and hours % 168:
                p.add(key, "Capacity Blocks longer than 14 days last whole weeks", hours,
                      "multiples of 168 from 504 (21 days) up to 4368 (182 days)")
        if ctx.sizing is not None and ctx.sizing.total_nodes > CAPACITY_BLOCK_MAX_INSTANCES:
            p.add(K + "capacity.purchase", f"the stack needs {ctx.sizing.total_nodes} instances, and one Capacity "
                  f"Block holds at most {CAPACITY_BLOCK_MAX_INSTANCES}", True,
                  f"nodes x replicas <= {CAPACITY_BLOCK_MAX_INSTANCES}, or several blocks bought outside k3infra "
                  "and consumed by reservationId")

    endpoint = ctx.endpoint
    if ctx.platform == Platform.HYPERPOD and endpoint is not None and endpoint.exposure == Exposure.PUBLIC:
        p.add(K + "endpoint.exposure", "the InferenceEndpointConfig has no field for source ranges, so a public "
              "HyperPod endpoint could not be limited to endpoint.allowedCidrs", str(endpoint.exposure),
              "internal (reach it from the VPC, or put your own gateway in front)")
    _kubernetes_version(ctx, p)
    _deep_health_checks(ctx, warnings)


def _kubernetes_version(ctx: CheckContext, p: Problems) -> None:
    """The cluster's minor must be one k3infra pins the EKS add-ons for (catalog.eks_addons), and, where the weight
    sync's node group is built, the Cluster Autoscaler chart (catalog.charts); HyperPod runs 1.28 to 1.34 only."""
    cluster = ctx.values.get("cluster")
    version = cluster.get("kubernetesVersion") if isinstance(cluster, dict) else None
    key = K + "cluster.kubernetesVersion"
    if not isinstance(version, str) or _bad(p, key) or not re.match(r"\d+\.\d+", version):
        return
    hyperpod = ctx.platform == Platform.HYPERPOD
    lo, hi = HYPERPOD_KUBERNETES
    in_hyperpod = version_key(lo) <= version_key(version) <= version_key(hi)
    pinned = [m for m in EKS_CLUSTER_ADDONS if not hyperpod or version_key(lo) <= version_key(m) <= version_key(hi)]
    if ctx.weights is not None and ctx.weights.sync:
        pinned = [m for m in pinned if m in CLUSTER_AUTOSCALER_CHARTS]
    if hyperpod and not in_hyperpod:
        p.add(key, f"SageMaker HyperPod's EKS orchestrator supports Kubernetes {lo} to {hi}", version,
              f"{lo} to {hi}, of which k3infra pins {', '.join(pinned)}")
    elif minor(version) not in pinned:
        sync = (" or the weight sync's Cluster Autoscaler chart (catalog/charts.py)"
                if ctx.weights and ctx.weights.sync else "")
        p.add(key, f"k3infra has no pinned EKS add-ons (catalog/eks_addons.py){sync} for this Kubernetes minor: each "
              "is built for, and pinned per, the cluster's minor", version, ", ".join(pinned))


def _deep_health_checks(ctx: CheckContext, warnings: list[str]) -> None:
    """``aws.deepHealthChecks`` applies to HyperPod; on a group with no spare instance it means hours without serving
    after every replacement, which the plan says."""
    aws = ctx.values.get("aws")
    if not isinstance(aws, dict) or aws.get("deepHealthChecks") is not True:
        return
    if ctx.platform != Platform.HYPERPOD:
        warnings.append("aws.deepHealthChecks is ignored: it applies to platform hyperpod")
        return
    warnings.append(f"aws.deepHealthChecks is true: every new or replacement HyperPod instance runs deep health "
                    f"checks (up to ~{DEEP_HEALTH_CHECK_MINUTES // 60} h, catalog.hyperpod) before it takes pods, and "
                    "the group holds no spare instance, so the endpoint serves nothing meanwhile; the GPU pool's time, "
                    "the endpoint's deadline and the cold start include them")


def deep_health_check_seconds(values: Mapping[str, Any], platform: Platform | None) -> int:
    """What a stack's deep health checks add to its GPU pool before the endpoint can start (0 without them)."""
    aws = values.get("aws")
    on = platform == Platform.HYPERPOD and isinstance(aws, dict) and aws.get("deepHealthChecks") is True
    return DEEP_HEALTH_CHECK_MINUTES * 60 if on else 0


def settings(v: dict[str, Any], region: str) -> AwsConfig:
    """The typed ``k3infra:aws`` section."""
    return AwsConfig(region=region, vpc_cidr=v["aws"]["vpcCidr"], hyperpod_helm_chart=v["aws"]["hyperpodHelmChart"],
                     public_access_cidrs=tuple(v["aws"].get("publicAccessCidrs") or ()),
                     private_endpoint=bool(v["aws"].get("privateEndpoint")),
                     deep_health_checks=bool(v["aws"].get("deepHealthChecks")))
