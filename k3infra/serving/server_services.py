"""The Services in front of a ModelServer's leaders: the ClusterIP Service, and the internal or public load balancer
the exposure asks for."""

from typing import Mapping

import pulumi
import pulumi_kubernetes as k8s

from ..catalog import Exposure
from ..catalog.topologies import RoleName
from .contract import LoadBalancerSettings
from .server_args import ModelServerArgs

core = k8s.core.v1
meta = k8s.meta.v1


def cluster_ip_service(name: str, namespace: str, leader_selector: Mapping[str, str], port: int,
                       labels: Mapping[str, str], opts: pulumi.ResourceOptions) -> core.Service:
    """The ClusterIP Service in front of the leaders, on the engine's port (named like the server)."""
    return core.Service(
        f"{name}-service",
        metadata=meta.ObjectMetaArgs(name=name, namespace=namespace, labels=dict(labels)),
        spec=core.ServiceSpecArgs(type="ClusterIP", selector=dict(leader_selector), ports=[
            core.ServicePortArgs(name="http", port=port, target_port="http", protocol="TCP")]),
        opts=opts,
    )


def pods_service(name: str, args: ModelServerArgs, leader_selector: Mapping[str, str], port: int,
                 labels: Mapping[str, str], opts: pulumi.ResourceOptions) -> core.Service | None:
    """A disaggregated prefill role's headless Service over its leaders (``<name>-pods``; None for any other server):
    its DNS name answers with the ready leaders' own IPs, which is what the decode pods' routing sidecar accepts as a
    prefill target under SSRF protection (a pod of the gateway's pool by IP or name, catalog.topologies
    ``ROUTING_SIDECAR_SSRF_POOL_GROUP``), not the ClusterIP's. The checklist names it (observability.verify_job)."""
    role = args.get("role")
    if role is None or role["name"] != RoleName.PREFILL:
        return None
    return core.Service(
        f"{name}-pods",
        metadata=meta.ObjectMetaArgs(name=f"{name}-pods", namespace=args["namespace"], labels=dict(labels)),
        spec=core.ServiceSpecArgs(cluster_ip="None", selector=dict(leader_selector), ports=[
            core.ServicePortArgs(name="http", port=port, target_port="http", protocol="TCP")]),
        opts=opts,
    )


def load_balancer(name: str, args: ModelServerArgs, leader_selector: Mapping[str, str], port: int,
                  svc_labels: Mapping[str, str], child: pulumi.ResourceOptions
                  ) -> tuple[core.Service | None, list[str]]:
    """The load balancer the exposure asks for, and the client ranges it admits: none behind a gateway, and none for
    a disaggregated prefill role, whose only clients are the decode pods' routing sidecars and the picker, in the
    namespace."""
    role = args.get("role")
    if args.get("behind_gateway") or (role is not None and role["name"] == RoleName.PREFILL):
        return None, []
    lb = args.get("load_balancer") or LoadBalancerSettings(internal_annotations={})
    public = args.get("exposure") == Exposure.PUBLIC
    if public:
        ranges = list(args.get("allowed_cidrs") or ())
        annotations = dict(lb.get("public_annotations") or {})
        role = "public"
    else:
        ranges = list(lb.get("internal_source_ranges") or ())
        if not ranges:
            return None, []
        annotations = dict(lb["internal_annotations"])
        role = "internal"
    svc = core.Service(
        f"{name}-{role}",
        metadata=meta.ObjectMetaArgs(name=f"{name}-{role}", namespace=args["namespace"], labels=dict(svc_labels),
                                     annotations=annotations or None),
        spec=core.ServiceSpecArgs(
            type="LoadBalancer", selector=dict(leader_selector), load_balancer_source_ranges=ranges,
            # Keep client addresses so the NetworkPolicy can match them.
            external_traffic_policy="Local",
            ports=[core.ServicePortArgs(name="http", port=port, target_port="http", protocol="TCP")],
        ),
        opts=child,
    )
    return svc, ranges


def lb_host(status: object) -> str:
    """The first ingress address of a load balancer Service's status ("pending" before it has one)."""
    lb = getattr(status, "load_balancer", None) if not isinstance(status, dict) else status.get("load_balancer")
    ingress = (getattr(lb, "ingress", None) if not isinstance(lb, dict) else lb.get("ingress")) or []
    for i in ingress:
        host = (i.get("ip") or i.get("hostname")) if isinstance(i, dict) else (i.ip or i.hostname)
        if host:
            return host
    return "pending"
