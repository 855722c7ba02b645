"""The rule every managed control plane follows (config.clouds.control_plane_access): private, or limited to the CIDRs
the stack states. A stack with neither is a configuration problem that names the key to set; an explicit 0.0.0.0/0
is allowed with a warning. The stack templates list the documentation range, with a comment to replace it, and the
cluster each plan registers carries it."""

import re

import pytest

from k3infra import offline
from k3infra.config import parse_config
from tests import configs
from tests.configs import problems, with_
from tests.support import ROOT, plan

CLOUDS = {
    # base config, section, CIDR key, private key, plane
    "gcp": (configs.GCP, "gcp", "authorizedNetworks", "privateEndpoint", "GKE control plane"),
    "aws": (configs.AWS, "aws", "publicAccessCidrs", "privateEndpoint", "EKS API endpoint"),
    "hyperpod": (configs.HYPERPOD, "aws", "publicAccessCidrs", "privateEndpoint", "EKS API endpoint"),
    "azure": (configs.AZURE, "azure", "authorizedIpRanges", "privateCluster", "AKS API server"),
}


@pytest.mark.parametrize("cloud", CLOUDS)
@pytest.mark.parametrize("listed", [None, []])
def test_neither_limited_nor_private_is_a_problem_naming_both_keys(cloud, listed):
    base, name, cidrs, private, plane = CLOUDS[cloud]
    raw = with_(base, **{name: {} if listed is None else {cidrs: listed}})
    (p,) = problems(raw)
    assert p.key == f"k3infra:{name}.{cidrs}"
    assert p.reason == (f"the {plane} would answer every internet address: a control plane is private or limited to "
                        "the CIDRs the stack states")
    assert p.allowed == (f"the CIDRs `pulumi up` and kubectl connect from, such as [203.0.113.0/24]; or {name}.{private}: "
                         "true; or [0.0.0.0/0] to open it to every address on purpose")


@pytest.mark.parametrize("cloud", CLOUDS)
def test_private_or_limited_is_accepted_without_an_open_warning(cloud):
    base, name, cidrs, private, _ = CLOUDS[cloud]
    for section in ({private: True}, {cidrs: ["198.51.100.0/24", "203.0.113.7/32"]}):
        cfg = parse_config(with_(base, **{name: section}), stack="t")
        assert not [w for w in cfg.warnings if "every internet address" in w]


@pytest.mark.parametrize("cloud", CLOUDS)
def test_an_explicit_open_range_is_allowed_with_a_warning(cloud):
    base, name, cidrs, _, plane = CLOUDS[cloud]
    cfg = parse_config(with_(base, **{name: {cidrs: ["0.0.0.0/0"]}}), stack="t")
    assert f"{name}.{cidrs} lists 0.0.0.0/0: the {plane} answers every internet address (callers still need the " \
           "cluster's credentials)" in cfg.warnings


@pytest.mark.parametrize("cloud", ["gcp", "azure"])
def test_a_range_with_host_bits_is_named(cloud):
    base, name, cidrs, _, _ = CLOUDS[cloud]
    (p,) = problems(with_(base, **{name: {cidrs: ["203.0.113.7/24"]}}))
    assert p.key == f"k3infra:{name}.{cidrs}[0]" and p.reason == "is not a network address: 203.0.113.7/24 has host bits set"


TEMPLATES = {
    "gcp-a4xmax": ("gcp", "authorizedNetworks"),
    "gcp-a4-sglang": ("gcp", "authorizedNetworks"),
    "aws-eks": ("aws", "publicAccessCidrs"),
    "aws-hyperpod": ("aws", "publicAccessCidrs"),
    "azure-gb300": ("azure", "authorizedIpRanges"),
}


def test_every_stack_with_a_managed_control_plane_is_a_template_listed_here():
    clouds = {p.name.removeprefix("Pulumi.").removesuffix(".yaml"): re.search(r"k3infra:cloud: (\w+)", p.read_text())[1]
              for p in (ROOT / "stacks").glob("Pulumi.*.yaml")}
    assert {s for s, c in clouds.items() if c in ("gcp", "aws", "azure")} == set(TEMPLATES)


@pytest.mark.parametrize("stack", TEMPLATES)
def test_templates_list_the_documentation_range_to_replace(stack):
    section, key = TEMPLATES[stack]
    text = (ROOT / "stacks" / f"Pulumi.{stack}.yaml").read_text()
    block = text[text.index(f"  k3infra:{section}:"):]
    assert f"    {key}: [203.0.113.0/24]\n" in block
    comment = block[:block.index(f"    {key}:")]
    assert "Replace" in comment and "documentation range" in comment


CLUSTER_ACCESS = {
    "gcp-a4xmax": ("gcp:container/cluster:Cluster", lambda i: [c["cidrBlock"] for c in
                                                                i["masterAuthorizedNetworksConfig"]["cidrBlocks"]]),
    "aws-eks": ("aws:eks/cluster:Cluster", lambda i: i["vpcConfig"]["publicAccessCidrs"]),
    "aws-hyperpod": ("aws:eks/cluster:Cluster", lambda i: i["vpcConfig"]["publicAccessCidrs"]),
    "azure-gb300": ("azure-native:containerservice:ManagedCluster",
                    lambda i: i["apiServerAccessProfile"]["authorizedIPRanges"]),
}


@pytest.mark.parametrize("stack", CLUSTER_ACCESS)
def test_the_planned_control_plane_admits_only_the_stated_range(stack):
    type_, ranges = CLUSTER_ACCESS[stack]
    (cluster,) = [r for r in plan(stack).recording.resources if r.type == type_]
    assert ranges(offline.plain(cluster.inputs)) == ["203.0.113.0/24"]


def test_ack_keeps_its_api_server_on_the_vpc_by_default():
    cluster = plan("alicloud-ack").recording.one("alicloud:cs/managedKubernetes:ManagedKubernetes", "k3-cluster")
    assert offline.plain(cluster.inputs)["slbInternetEnabled"] is False
