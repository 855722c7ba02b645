"""Where each cloud's load-balancer health checks come from, and whether they reach the pods.

The serving NetworkPolicy admits only the clients it names, so a health check that probes a pod directly must
come from a range the policy admits, or the load balancer marks every backend down and the endpoint never
answers. Each cloud's cluster hands these ranges to serving through ``LoadBalancerSettings.health_check_ranges``
(or, for a managed gateway, ``gateway_source_ranges``); this table is the one place they are written down.
"""

from dataclasses import dataclass
from types import MappingProxyType
from typing import Mapping

from .types import Cloud


@dataclass(frozen=True)
class HealthCheckSource:
    """Where one cloud's load-balancer health checks originate."""

    ranges: tuple[str, ...]
    """Source CIDRs of the probes. Empty when they come from addresses the cluster's own ranges already cover."""
    reaches_pods: bool
    """True when the probes connect to the pods (so the pods' NetworkPolicy must admit ``ranges``); False when
    they stop at the node (``externalTrafficPolicy: Local``'s health-check node port, served by the node)."""
    what: str
    """Which load balancer probes, and how k3infra's Services are wired to it."""
    source: str
    """The vendor page that states the ranges."""


HEALTH_CHECK_SOURCES: Mapping[Cloud, HealthCheckSource] = MappingProxyType({
    Cloud.GCP: HealthCheckSource(
        ranges=("35.191.0.0/16", "130.211.0.0/22"),
        reaches_pods=True,
        what="Google Cloud load balancers probe container-native (NEG) backends, the pods behind a GKE Gateway, "
             "from these ranges",
        source="cloud.google.com/load-balancing/docs/health-check-concepts (probe IP ranges and firewall rules)",
    ),
    Cloud.ALICLOUD: HealthCheckSource(
        ranges=("100.64.0.0/10",),
        reaches_pods=True,
        what="ACK's cloud controller puts the pods' ENIs behind the CLB on Terway clusters (backend type eni), so the "
             "CLB probes the serving port of the pods from this range",
        source="alibabacloud.com/help/en/slb/classic-load-balancer/support/faq-about-health-checks (\"CLB performs "
               "health checks by using the 100.64.0.0/10 CIDR block ... if you use other security policies like "
               "iptables, you must allow this CIDR block\")",
    ),
    Cloud.AZURE: HealthCheckSource(
        ranges=("168.63.129.16/32",),
        reaches_pods=False,
        what="Azure Load Balancer probes come from the platform address 168.63.129.16 (service tag "
             "AzureLoadBalancer); with externalTrafficPolicy: Local they go to the node's health-check node port, "
             "which the node answers, never to the pod",
        source="learn.microsoft.com/azure/virtual-network/what-is-ip-address-168-63-129-16; "
               "learn.microsoft.com/azure/aks/load-balancer-standard (externalTrafficPolicy Local health probes)",
    ),
    Cloud.KUBERNETES: HealthCheckSource(
        ranges=(),
        reaches_pods=False,
        what="an existing cluster's own load balancer (MetalLB, a cloud's controller) fronts a public endpoint's "
             "LoadBalancer Service; k3infra states no probe ranges for it, and the server's NetworkPolicy admits only "
             "endpoint.allowedCidrs and its own namespace",
        source="none: k3infra does not manage an existing cluster's load balancer (docs/kubernetes.md)",
    ),
    Cloud.AWS: HealthCheckSource(
        ranges=(),
        reaches_pods=False,
        what="EKS's cloud controller (cloud-provider-aws, the service controller behind `aws-load-balancer-type: "
             "nlb`) registers the nodes as instance targets; with externalTrafficPolicy: Local the NLB checks HTTP "
             "/healthz on the Service's health-check node port, which kube-proxy on the node answers, never the pod. "
             "The probes come from the NLB's private addresses in the VPC",
        source="kubernetes/cloud-provider-aws v1.35.2 pkg/providers/v1/aws_loadbalancer.go (ensureTargetGroup: target "
               "type instance; buildNLBHealthCheckConfiguration: healthCheckNodePort, HTTP, for Local); "
               "docs.aws.amazon.com/elasticloadbalancing/latest/network/target-group-health-checks.html",
    ),
})
"""Each cloud's load-balancer health-check sources."""


def pod_health_check_ranges(cloud: Cloud) -> tuple[str, ...]:
    """The ranges a pod behind ``cloud``'s load balancer must admit on its serving port for health checks."""
    found = HEALTH_CHECK_SOURCES[cloud]
    return found.ranges if found.reaches_pods else ()
