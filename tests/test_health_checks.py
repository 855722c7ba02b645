"""Load-balancer health checks: each cloud's source ranges in one table, and the NetworkPolicy of whatever the load
balancer forwards to (the server, or the installed gateway's proxies in front of it) admits them on its port where
they reach the pods (an ACK CLB marks every backend down otherwise)."""

import ipaddress

from k3infra.catalog import HEALTH_CHECK_SOURCES, Cloud, pod_health_check_ranges
from k3infra.gcp.cluster import HEALTH_CHECK_RANGES as GCP_RANGES
from tests.support import plan


def test_every_cloud_has_a_row_with_a_source():
    assert set(HEALTH_CHECK_SOURCES) == set(Cloud)
    for cloud, row in HEALTH_CHECK_SOURCES.items():
        assert row.source and row.what, cloud
        for cidr in row.ranges:
            ipaddress.IPv4Network(cidr)  # a network address, not a host with a mask


def test_the_values_that_matter():
    assert pod_health_check_ranges(Cloud.ALICLOUD) == ("100.64.0.0/10",)
    assert pod_health_check_ranges(Cloud.GCP) == ("35.191.0.0/16", "130.211.0.0/22")
    assert pod_health_check_ranges(Cloud.AZURE) == ()  # 168.63.129.16 probes the node, not the pod
    assert HEALTH_CHECK_SOURCES[Cloud.AZURE].ranges == ("168.63.129.16/32",)
    assert GCP_RANGES == pod_health_check_ranges(Cloud.GCP)  # GKE takes them from the table


PROXY_PARAMETERS = "kubernetes:agentgateway.dev/v1alpha1:AgentgatewayParameters"


def _policy_ranges(stack: str, name: str, port: object) -> list[str]:
    policy = next(r for r in plan(stack).recording.resources
                  if r.type == "kubernetes:networking.k8s.io/v1:NetworkPolicy" and r.name == name)
    out = []
    for rule in policy.inputs["spec"]["ingress"]:
        blocks = [p["ipBlock"]["cidr"] for p in rule["from"] if "ipBlock" in p]
        if blocks:
            assert rule["ports"] == [{"port": port, "protocol": "TCP"}]  # the serving (or listener) port only
            out += blocks
    return out


def _server_policy_ranges(stack: str) -> list[str]:
    return _policy_ranges(stack, "k3-server-network-policy", plan(stack).config.engine.port)  # by number (review m1)


def _proxy_policy_ranges(stack: str) -> list[str]:
    """The ranges the installed gateway's proxies admit on the listener (serving.gateway_install)."""
    return _policy_ranges(stack, "k3-gateway-proxy-network-policy", 80)


def test_ack_gateway_admits_the_clb_health_checks_on_its_listener():
    """ACK's CLB checks the pods behind its Service (100.64.0.0/10): with agentgateway in front, those are the
    proxies, so they admit the checks and the VPC; the server admits neither (its clients are the proxies)."""
    assert _proxy_policy_ranges("alicloud-ack") == ["10.0.0.0/8", "100.64.0.0/10"]
    assert _server_policy_ranges("alicloud-ack") == []


def test_aks_gateway_admits_the_vnet_only():
    assert _proxy_policy_ranges("azure-gb300") == ["10.224.0.0/12"]
    assert _server_policy_ranges("azure-gb300") == []


def test_gke_server_admits_the_managed_gateways_proxies_and_checks():
    """GKE's managed gateway checks the pods themselves (its HealthCheckPolicy) from Google's ranges, and forwards
    from the proxy-only subnet: the server admits both; there are no installed proxies."""
    ranges = _server_policy_ranges("gcp-a4xmax")
    assert ranges[-2:] == ["35.191.0.0/16", "130.211.0.0/22"]
    assert not plan("gcp-a4xmax").recording.by_type(PROXY_PARAMETERS)


def _load_balancer_spec(stack: str) -> dict:
    """The spec of the stack's one load balancer: its own Service, or the overlay on the installed gateway's."""
    rec = plan(stack).recording
    services = [r.inputs["spec"] for r in rec.by_type("kubernetes:core/v1:Service")
                if r.inputs["spec"].get("type") == "LoadBalancer"]
    overlays = [r.inputs["spec"]["service"]["spec"] for r in rec.by_type(PROXY_PARAMETERS)]
    (spec,) = services + [o for o in overlays if o["type"] == "LoadBalancer"]
    return spec


def _load_balancer_annotations(stack: str) -> dict:
    rec = plan(stack).recording
    services = [r.inputs["metadata"]["annotations"] for r in rec.by_type("kubernetes:core/v1:Service")
                if r.inputs["spec"].get("type") == "LoadBalancer"]
    gateways = [r.inputs["spec"]["infrastructure"]["annotations"]
                for r in rec.by_type("kubernetes:gateway.networking.k8s.io/v1:Gateway")
                if "annotations" in r.inputs["spec"].get("infrastructure", {})]
    (annotations,) = services + gateways
    return annotations


def test_where_the_table_says_probes_stop_at_the_node_the_service_makes_them():
    """A row with reaches_pods False holds only for Services with externalTrafficPolicy: Local, whose load balancer
    checks the health-check node port that kube-proxy answers: the installed gateway's Service too."""
    for cloud, stack in ((Cloud.AZURE, "azure-gb300"), (Cloud.AWS, "aws-eks"), (Cloud.AZURE, "azure-gb300-pd")):
        assert not HEALTH_CHECK_SOURCES[cloud].reaches_pods
        assert _load_balancer_spec(stack)["externalTrafficPolicy"] == "Local", stack


def test_the_installed_gateways_load_balancer_admits_the_client_ranges_only():
    assert _load_balancer_spec("aws-eks")["loadBalancerSourceRanges"] == ["10.0.0.0/18", "10.0.64.0/18"]
    assert _load_balancer_spec("azure-gb300")["loadBalancerSourceRanges"] == ["10.224.0.0/12"]
    assert _load_balancer_spec("alicloud-ack")["loadBalancerSourceRanges"] == ["10.0.0.0/8"]


def test_eks_gets_an_nlb_with_instance_targets_from_the_cloud_controller():
    """kubernetes/cloud-provider-aws v1.35.2 (EKS 1.35's cloud controller): aws-load-balancer-type "nlb" is its own
    NLB path (isNLB), whose target groups are of type instance and, for Local, health-check HTTP /healthz on the
    health-check node port; "external" and "nlb-ip" (isLBExternal) are left to the AWS Load Balancer Controller,
    which EKS stacks do not install. So the probes never reach the pod, and the row says so."""
    annotations = _load_balancer_annotations("aws-eks")
    assert annotations["service.beta.kubernetes.io/aws-load-balancer-type"] == "nlb"
    assert "service.beta.kubernetes.io/aws-load-balancer-nlb-target-type" not in annotations
    assert "loadBalancerClass" not in _load_balancer_spec("aws-eks")
    assert pod_health_check_ranges(Cloud.AWS) == ()
    assert "instance targets" in HEALTH_CHECK_SOURCES[Cloud.AWS].what
    assert _proxy_policy_ranges("aws-eks") == ["10.0.0.0/18", "10.0.64.0/18"]  # the private subnets only
