"""The inference gateway's implementation where the cluster brings none: agentgateway (AKS, EKS, ACK, and an
existing cluster that declares no ``kubernetes.gatewayClass``).

Why agentgateway: llm-d/llm-d 09df9e5 ``guides/prereq/gateway-provider/README.md`` documents three self-installed
providers and calls agentgateway "the preferred self-installed inference path"; kgateway's "support in llm-d is
deprecated and will be removed in the next release"; Istio brings a mesh control plane (istiod, its injection and
validation webhooks) that serving does not use. What is installed, in llm-d's order (``agentgateway.helmfile.yaml``,
``install-gateway-provider-dependencies.sh``), each pinned in catalog.charts:

- the Gateway API CRDs (standard channel) and the Inference Extension's (InferencePool), from their releases;
- the ``agentgateway-crds`` chart, then the ``agentgateway`` chart with ``inferenceExtension.enabled: true``, in
  ``agentgateway-system``. Its controller creates the ``agentgateway`` GatewayClass and, for each Gateway of that
  class, a proxy Deployment and a LoadBalancer Service in the Gateway's namespace, carrying the Gateway's
  ``spec.infrastructure.annotations`` (agentgateway v1.0.0 ``controller/pkg/kgateway/deployer/
  agentgateway_parameters.go`` L363-366, testdata ``agentgateway-infrastructure-out.yaml``): how the
  InferenceGateway makes that Service internal with the cloud's ``LoadBalancerSettings``. An AgentgatewayParameters
  (``proxy_parameters``) restricts it to the client ranges and keeps client addresses, or makes it a ClusterIP where
  the cluster states no internal client ranges (an existing cluster), as the server's own would be; a NetworkPolicy
  (``proxy_network_policy``) admits the clients and the cloud's pod health checks to the proxies, which take the
  place the server's own load balancer had in front of the servers.

The charts serve no admission webhook (catalog.charts), so no control-plane port is needed. Helm v4 Charts await
their Deployments; the CRDs are awaited until established.
"""

from typing import Any, Sequence

import pulumi
import pulumi_kubernetes as k8s

from ..catalog.charts import AGENTGATEWAY_CHART, AGENTGATEWAY_CRDS_CHART, GATEWAY_API_CRDS, INFERENCE_CRDS
from . import pods

core = k8s.core.v1
meta = k8s.meta.v1

AGENTGATEWAY_PARAMETERS_API = "agentgateway.dev/v1alpha1"
"""AgentgatewayParameters (agentgateway v1.0.0 ``agentgateway-crds``): a Gateway's ``spec.infrastructure.parametersRef``
overlays its proxy's objects, e.g. ``service.spec.type`` (testdata ``agentgateway-both-gwc-and-gw-have-params.yaml``)."""
AGENTGATEWAY_NAMESPACE = "agentgateway-system"
"""Where llm-d's helmfile installs the control plane."""
AGENTGATEWAY_VALUES = {"inferenceExtension": {"enabled": True}}
"""The chart's values: InferencePool backends on (llm-d ``agentgateway.helmfile.yaml``; chart default false)."""


def install_agentgateway(name: str, opts: pulumi.ResourceOptions) -> list[pulumi.Resource]:
    """The Gateway API and Inference Extension CRDs, then agentgateway's CRDs chart, then its controller chart;
    returns them, the controller last (what a Gateway of its class waits for)."""
    gateway_api = k8s.yaml.v2.ConfigFile(f"{name}-gateway-api-crds", file=GATEWAY_API_CRDS, opts=opts)
    inference = k8s.yaml.v2.ConfigFile(f"{name}-inference-crds", file=INFERENCE_CRDS, opts=opts)
    namespace = core.Namespace(f"{name}-agentgateway-namespace", metadata=meta.ObjectMetaArgs(
        name=AGENTGATEWAY_NAMESPACE, labels={"app.kubernetes.io/part-of": pods.PART_OF}), opts=opts)
    crds = k8s.helm.v4.Chart(
        f"{name}-agentgateway-crds", chart=AGENTGATEWAY_CRDS_CHART[0], version=AGENTGATEWAY_CRDS_CHART[1],
        namespace=AGENTGATEWAY_NAMESPACE, name="agentgateway-crds",
        opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(depends_on=[namespace])))
    controller = k8s.helm.v4.Chart(
        f"{name}-agentgateway", chart=AGENTGATEWAY_CHART[0], version=AGENTGATEWAY_CHART[1],
        namespace=AGENTGATEWAY_NAMESPACE, name="agentgateway", values=AGENTGATEWAY_VALUES,
        opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(
            depends_on=[namespace, crds, gateway_api, inference])))
    return [gateway_api, inference, namespace, crds, controller]


PROXY_SELECTOR_LABEL = "gateway.networking.k8s.io/gateway-name"
"""The label agentgateway puts on a Gateway's proxy pods, valued with the Gateway's name (agentgateway v1.0.0
testdata ``agentgateway-aws-annotations-out.yaml``: the Deployment's selector and the Service's)."""


def proxy_service_spec(client_ranges: Sequence[str]) -> dict[str, Any]:
    """The overlay on the proxy's generated Service (a strategic merge patch, agentgateway v1.0.0
    ``controller/pkg/deployer/strategicpatch``): with client ranges, a LoadBalancer restricted to them that keeps
    client addresses (``externalTrafficPolicy: Local``, as the server's own load balancer: the proxies'
    NetworkPolicy matches those addresses, and AKS's and EKS's checks then probe the node's health-check port);
    without, a ClusterIP (an internal endpoint on a cluster that states no internal client ranges)."""
    if not client_ranges:
        return {"type": "ClusterIP"}
    return {"type": "LoadBalancer", "externalTrafficPolicy": "Local", "loadBalancerSourceRanges": list(client_ranges)}


def proxy_parameters(name: str, namespace: str, labels: dict[str, str], client_ranges: Sequence[str],
                     opts: pulumi.ResourceOptions) -> tuple[dict[str, str], pulumi.Resource]:
    """AgentgatewayParameters shaping a Gateway's proxy Service (``proxy_service_spec``); returns the Gateway's
    ``infrastructure.parametersRef`` and the object (the Gateway waits for it: agentgateway only logs a missing
    one and retries, agentgateway v1.0.0 ``agentgateway_parameters.go``)."""
    params = k8s.apiextensions.CustomResource(
        f"{name}-proxy", api_version=AGENTGATEWAY_PARAMETERS_API, kind="AgentgatewayParameters",
        metadata=meta.ObjectMetaArgs(name=f"{name}-proxy", namespace=namespace, labels=labels),
        spec={"service": {"spec": proxy_service_spec(client_ranges)}}, opts=opts)
    return ({"group": AGENTGATEWAY_PARAMETERS_API.split("/")[0], "kind": "AgentgatewayParameters",
             "name": f"{name}-proxy"}, params)


def proxy_network_policy(name: str, namespace: str, labels: dict[str, str], port: int, ranges: Sequence[str],
                         opts: pulumi.ResourceOptions) -> k8s.networking.v1.NetworkPolicy:
    """Ingress to the Gateway's proxy pods: the listener's port from the namespace and from ``ranges`` (the
    load balancer's clients and the cloud's health checks where they probe pods, e.g. ACK's 100.64.0.0/10), nothing
    else. Without it the proxies, which forward to every server, would take connections from anywhere in the
    cluster's network."""
    net = k8s.networking.v1
    ports = [net.NetworkPolicyPortArgs(protocol="TCP", port=port)]
    rules = [net.NetworkPolicyIngressRuleArgs(
        from_=[net.NetworkPolicyPeerArgs(pod_selector=meta.LabelSelectorArgs())], ports=ports)]
    if ranges:
        rules.append(net.NetworkPolicyIngressRuleArgs(
            from_=[net.NetworkPolicyPeerArgs(ip_block=net.IPBlockArgs(cidr=c)) for c in dict.fromkeys(ranges)],
            ports=ports))
    return net.NetworkPolicy(
        f"{name}-proxy-network-policy",
        metadata=meta.ObjectMetaArgs(name=f"{name}-proxy", namespace=namespace, labels=labels),
        spec=net.NetworkPolicySpecArgs(pod_selector=meta.LabelSelectorArgs(match_labels={PROXY_SELECTOR_LABEL: name}),
                                       policy_types=["Ingress"], ingress=rules),
        opts=opts)


__all__ = ["AGENTGATEWAY_NAMESPACE", "AGENTGATEWAY_PARAMETERS_API", "AGENTGATEWAY_VALUES", "PROXY_SELECTOR_LABEL",
           "install_agentgateway", "proxy_network_policy", "proxy_parameters", "proxy_service_spec"]
