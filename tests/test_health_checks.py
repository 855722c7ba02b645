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

