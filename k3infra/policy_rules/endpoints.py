"""``public-endpoint-restricted``: a public LoadBalancer Service has allowed source CIDRs (not the whole
internet) and the pods behind it require an API key.
"""

import ipaddress
from typing import Any, Iterator, Mapping, Sequence

from .base import Resource, as_list, get
from .workloads import container_argv, engine_of, flag_value, kind_of, pod_templates


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
    env = {get(e, "name") for e in as_list(container.get("env"))}
    argv = container_argv(container)
    return flag_value(argv, "--api-key") is not None or "VLLM_API_KEY" in env or "--api-key" in " ".join(argv)


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
    allowed_gateways = {str(n) for n in as_list(config.get("allowedGateways"))}
    for gw in resources:
        cls = str(get(gw.props, "spec.gatewayClassName", ""))
        if kind_of(gw) == "Gateway" and (cls in PUBLIC_GATEWAY_CLASSES or "external" in cls) and \
                str(get(gw.props, "metadata.name", gw.name)) not in allowed_gateways:
            yield (f"Gateway {gw.name} uses the public class {cls}, and a Gateway cannot restrict its clients' "
                   "CIDRs: use the internal class, or restrict it with a cloud policy and list it in this "
                   "policy's allowedGateways"), gw.urn
    for svc in resources:
        if kind_of(svc) != "Service" or get(svc.props, "spec.type") != "LoadBalancer" or _is_internal(svc):
            continue
        ranges = [str(c) for c in as_list(get(svc.props, "spec.loadBalancerSourceRanges"))]
        if not ranges:
            yield (f"Service {svc.name} is a public LoadBalancer without spec.loadBalancerSourceRanges: "
                   "list the CIDRs allowed to call it (or make it internal)"), svc.urn
        elif any(_wide_cidr(c) for c in ranges):
            yield f"Service {svc.name} allows {[c for c in ranges if _wide_cidr(c)][0]}: list specific CIDRs", svc.urn
        selector = get(svc.props, "spec.selector", {})
        backends = [t for t in templates if _selects(selector, t.labels)]
        servers = [c for t in backends for c in as_list(t.spec.get("containers")) if engine_of(c)]
        if not backends:
            yield (f"Service {svc.name} is public and selects no workload of this stack: its pods' "
                   "authentication cannot be verified"), svc.urn
        elif not servers or not all(_requires_api_key(c) for c in servers):
            yield (f"Service {svc.name} is public but the server behind it takes no API key "
                   "(--api-key or VLLM_API_KEY from a Secret)"), svc.urn
