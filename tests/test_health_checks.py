"""Load-balancer health checks: each cloud's source ranges in one table, and the server's NetworkPolicy admits
them on the serving port where they reach the pods (an ACK CLB marks every backend down otherwise)."""

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


def _server_policy_ranges(stack: str) -> list[str]:
    policy = next(r for r in plan(stack).recording.resources
                  if r.type == "kubernetes:networking.k8s.io/v1:NetworkPolicy" and r.name == "k3-server-network-policy")
    out = []
    for rule in policy.inputs["spec"]["ingress"]:
        blocks = [p["ipBlock"]["cidr"] for p in rule["from"] if "ipBlock" in p]
        if blocks:
            assert rule["ports"] == [{"port": "http", "protocol": "TCP"}]  # the serving port only
            out += blocks
    return out


def test_ack_server_admits_the_clb_health_checks_on_the_serving_port():
    assert _server_policy_ranges("alicloud-ack") == ["10.0.0.0/8", "100.64.0.0/10"]


def test_aks_server_admits_the_vnet_only():
    assert _server_policy_ranges("azure-gb300") == ["10.224.0.0/12"]



def _load_balancer_service(stack: str) -> dict:
    (svc,) = [r.inputs for r in plan(stack).recording.by_type("kubernetes:core/v1:Service")
              if r.inputs["spec"].get("type") == "LoadBalancer"]
    return svc


def test_where_the_table_says_probes_stop_at_the_node_the_service_makes_them():
    """A row with reaches_pods False holds only for Services with externalTrafficPolicy: Local, whose load balancer
    checks the health-check node port that kube-proxy answers."""
    for cloud, stack in ((Cloud.AZURE, "azure-gb300"), (Cloud.AWS, "aws-eks")):
        assert not HEALTH_CHECK_SOURCES[cloud].reaches_pods
        assert _load_balancer_service(stack)["spec"]["externalTrafficPolicy"] == "Local", stack


def test_eks_gets_an_nlb_with_instance_targets_from_the_cloud_controller():
    """kubernetes/cloud-provider-aws v1.35.2 (EKS 1.35's cloud controller): aws-load-balancer-type "nlb" is its own
    NLB path (isNLB), whose target groups are of type instance and, for Local, health-check HTTP /healthz on the
    health-check node port; "external" and "nlb-ip" (isLBExternal) are left to the AWS Load Balancer Controller,
    which EKS stacks do not install. So the probes never reach the pod, and the row says so."""
    annotations = _load_balancer_service("aws-eks")["metadata"]["annotations"]
    assert annotations["service.beta.kubernetes.io/aws-load-balancer-type"] == "nlb"
    assert "service.beta.kubernetes.io/aws-load-balancer-nlb-target-type" not in annotations
    assert "loadBalancerClass" not in _load_balancer_service("aws-eks")["spec"]
    assert pod_health_check_ranges(Cloud.AWS) == ()
    assert "instance targets" in HEALTH_CHECK_SOURCES[Cloud.AWS].what
    assert _server_policy_ranges("aws-eks") == ["10.0.0.0/18", "10.0.64.0/18"]  # the private subnets only
