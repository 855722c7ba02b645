"""The NetworkPolicy of a ModelServer's pods: who may reach the serving port, and the pods of the server one
another."""

from typing import Mapping, Sequence

import pulumi
import pulumi_kubernetes as k8s

from ..catalog.picker import KV_EVENTS_PORT, KV_EVENTS_PORT_NAME
from ..catalog import EngineName
from ..catalog.topologies import Parallelism, RoleName
from .contract import LoadBalancerSettings, MetricsAccess
from .server_args import ModelServerArgs

meta = k8s.meta.v1


def network_policy(name: str, args: ModelServerArgs, selector: Mapping[str, str], client_ranges: Sequence[str],
                   svc_labels: Mapping[str, str], child: pulumi.ResourceOptions,
                   port: int) -> k8s.networking.v1.NetworkPolicy:
    """Ingress to the servers: the serving ``port`` from the namespace (and the load balancer's clients or the
    gateway's proxies); every port between the pods of the server (NCCL bootstrap, the rendezvous).

    The serving port by number, not by its name: on a decode pod ``http`` is the routing sidecar's, a native sidecar
    (an init container), whose named ports some policy engines never resolved (kubernetes/kubernetes#125285;
    projectcalico/calico#8881, fixed by calico#8885): a rule by name would then admit nothing (independent review of
    issue 37, m1)."""
    net = k8s.networking.v1
    http = [net.NetworkPolicyPortArgs(protocol="TCP", port=port)]
    ranges = list(client_ranges)
    lb = args.get("load_balancer") or LoadBalancerSettings(internal_annotations={})
    if args.get("behind_gateway"):
        ranges += list(lb.get("gateway_source_ranges") or ())
    # The cloud's health checks probe whatever its load balancer or managed gateway forwards to: the server, unless
    # an installed gateway's proxies stand in front (serving.gateway_install admits them there).
    if ranges or (args.get("behind_gateway") and not lb.get("install_gateway")):
        ranges += list(lb.get("health_check_ranges") or ())
    # Behind a gateway the picker, in the namespace, also dials the engines' KV-event publisher (a named port: it
    # admits nothing where no container declares it, as when the picker approximates prefixes).
    picker = [_events_port(args)] if args.get("behind_gateway") else []
    rules = [
        net.NetworkPolicyIngressRuleArgs(from_=[net.NetworkPolicyPeerArgs(pod_selector=meta.LabelSelectorArgs())],
                                         ports=http + picker),
        net.NetworkPolicyIngressRuleArgs(from_=[net.NetworkPolicyPeerArgs(
            pod_selector=meta.LabelSelectorArgs(match_labels=dict(selector)))]),
    ]
    peer_roles = (args.get("role") or {}).get("peer_selector")
    if peer_roles:
        # The other roles of the topology: NIXL's side channel, the KV transfer over TCP, the sidecar's prefill calls.
        rules.append(net.NetworkPolicyIngressRuleArgs(from_=[net.NetworkPolicyPeerArgs(
            pod_selector=meta.LabelSelectorArgs(match_labels=dict(peer_roles)))]))
    if ranges:
        rules.append(net.NetworkPolicyIngressRuleArgs(
            from_=[net.NetworkPolicyPeerArgs(ip_block=net.IPBlockArgs(cidr=c)) for c in dict.fromkeys(ranges)],
            ports=http))
    # Ranges the load balancer rule already admits on the serving port are not repeated.
    peers = scraper_peers(args.get("metrics_access") or MetricsAccess(), ranges)
    if peers:
        rules.append(net.NetworkPolicyIngressRuleArgs(from_=peers, ports=http))
    return net.NetworkPolicy(
        f"{name}-network-policy",
        metadata=meta.ObjectMetaArgs(name=name, namespace=args["namespace"], labels=dict(svc_labels)),
        spec=net.NetworkPolicySpecArgs(pod_selector=meta.LabelSelectorArgs(match_labels=dict(selector)),
                                       policy_types=["Ingress"], ingress=rules),
        opts=child,
    )


def scraper_peers(access: MetricsAccess, admitted: Sequence[str] = ()) -> list[k8s.networking.v1.NetworkPolicyPeerArgs]:
    """The peers the cloud's collectors scrape from (``MetricsAccess``): their namespaces, and their ranges but those
    already ``admitted``."""
    net = k8s.networking.v1
    peers = [net.NetworkPolicyPeerArgs(namespace_selector=meta.LabelSelectorArgs(
        match_labels={"kubernetes.io/metadata.name": n})) for n in access.get("namespaces") or ()]
    return peers + [net.NetworkPolicyPeerArgs(ip_block=net.IPBlockArgs(cidr=c)) for c in access.get("cidrs") or ()
                    if c not in admitted]


def _events_port(args: ModelServerArgs) -> k8s.networking.v1.NetworkPolicyPortArgs:
    """The KV-events publisher's port(s): the named container port, or, where a DEP group's every rank publishes on
    ``5557 + its DP rank`` (vllm 0.33.0 ``distributed/kv_events.py`` ``offset_endpoint_port``), the range over the
    group's ranks (the independent review of the PD stacks, m2)."""
    net = k8s.networking.v1
    role = args.get("role")
    publishes = bool(args.get("kv_events")) and args["engine"] == EngineName.VLLM
    dep = role is not None and role["parallelism"] == Parallelism.DEP and role["name"] != RoleName.DECODE
    ranks = int(args["tensor_parallel"]) if dep else 1
    if not publishes or ranks == 1:
        return net.NetworkPolicyPortArgs(protocol="TCP", port=KV_EVENTS_PORT_NAME)
    return net.NetworkPolicyPortArgs(protocol="TCP", port=KV_EVENTS_PORT, end_port=KV_EVENTS_PORT + ranks - 1)
