"""The rule every managed control plane follows (config.clouds.control_plane_access): private, or limited to the CIDRs
the stack states. A stack with neither stops a real run (`pulumi preview`/`up`) before anything is registered, with a
problem naming the key to set, and the offline plan warns; an explicit 0.0.0.0/0 is allowed with a warning. A
documentation range (RFC 5737) is a configuration problem naming the key: nobody connects from one, so the first
`pulumi up` would create the cluster and then fail to reach it. The stack templates set neither (only the deployer knows
their address) and say in a comment how to; the cluster a plan registers admits exactly the ranges the stack sets."""

import re

import pytest

from k3infra import offline, planning
from k3infra.config import ConfigError, parse_config
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
def test_neither_limited_nor_private_stops_a_real_run_naming_both_keys(cloud, listed):
    base, name, cidrs, private, plane = CLOUDS[cloud]
    raw = with_(base, **{name: {} if listed is None else {cidrs: listed}})
    (p,) = problems(raw)
    assert p.key == f"k3infra:{name}.{cidrs}"
    assert p.reason == (f"is not set: the {plane} would answer every internet address; a control plane is private or "
                        "limited to the CIDRs the stack states")
    assert p.allowed == (f"the CIDRs `pulumi up` and kubectl connect from, such as [A.B.C.D/32]; or {name}.{private}: "
                         "true; or [0.0.0.0/0] to open it to every address on purpose")


@pytest.mark.parametrize("cloud", CLOUDS)
def test_neither_limited_nor_private_is_a_warning_in_the_offline_plan(cloud):
    base, name, cidrs, private, plane = CLOUDS[cloud]
    cfg = parse_config(with_(base, **{name: {}}), stack="t")
    (w,) = [w for w in cfg.warnings if w.startswith(f"k3infra:{name}.{cidrs} is not set")]
    assert w.endswith(f"`pulumi up` stops until it is set (the CIDRs `pulumi up` and kubectl connect from, such as "
                      f"[A.B.C.D/32]; or {name}.{private}: true; or [0.0.0.0/0] to open it to every address on purpose)")


@pytest.mark.parametrize("cloud", CLOUDS)
def test_private_or_limited_is_accepted_without_an_open_warning(cloud):
    base, name, cidrs, private, _ = CLOUDS[cloud]
    for section in ({private: True}, {cidrs: ["81.2.69.0/24", "81.2.70.7/32"]}):
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
    (p,) = problems(with_(base, **{name: {cidrs: ["81.2.69.7/24"]}}))
    assert p.key == f"k3infra:{name}.{cidrs}[0]" and p.reason == "is not a network address: 81.2.69.7/24 has host bits set"


@pytest.mark.parametrize("cloud", CLOUDS)
@pytest.mark.parametrize("cidr", ["192.0.2.0/24", "198.51.100.0/24", "203.0.113.0/24", "203.0.113.7/32", "192.0.2.128/25"])
def test_a_documentation_range_is_a_problem_naming_the_key(cloud, cidr):
    base, name, cidrs, private, plane = CLOUDS[cloud]
    (p,) = problems(with_(base, **{name: {cidrs: ["81.2.69.0/24", cidr]}}))
    assert p.key == f"k3infra:{name}.{cidrs}[1]" and cidr in p.given
    assert p.reason.startswith("is in the documentation range ") and "(RFC 5737)" in p.reason
    assert f"the {plane} would answer nobody, and the first `pulumi up` would create the cluster" in p.reason
    assert p.allowed == (f"the CIDRs `pulumi up` and kubectl connect from (A.B.C.D/32); or {name}.{private}: true; "
                         "or [0.0.0.0/0]")


TEMPLATES = {
    "gcp-a4xmax": ("gcp", "authorizedNetworks"),
    "gcp-a4xmax-pd": ("gcp", "authorizedNetworks"),
    "gcp-a4-sglang": ("gcp", "authorizedNetworks"),
    "gcp-a4x-sglang": ("gcp", "authorizedNetworks"),
    "aws-eks": ("aws", "publicAccessCidrs"),
    "aws-eks-pd": ("aws", "publicAccessCidrs"),
    "aws-hyperpod": ("aws", "publicAccessCidrs"),
    "azure-gb300": ("azure", "authorizedIpRanges"),
    "azure-gb300-pd": ("azure", "authorizedIpRanges"),
}


def test_every_stack_with_a_managed_control_plane_is_a_template_listed_here():
    clouds = {p.name.removeprefix("Pulumi.").removesuffix(".yaml"): re.search(r"k3infra:cloud: (\w+)", p.read_text())[1]
              for p in (ROOT / "stacks").glob("Pulumi.*.yaml")}
    assert {s for s, c in clouds.items() if c in ("gcp", "aws", "azure")} == set(TEMPLATES)


@pytest.mark.parametrize("stack", TEMPLATES)
def test_templates_leave_the_deployers_address_to_the_deployer_and_say_how_to_set_it(stack):
    section, key = TEMPLATES[stack]
    text = (ROOT / "stacks" / f"Pulumi.{stack}.yaml").read_text()
    for documentation in ("192.0.2.", "198.51.100.", "203.0.113."):
        assert documentation not in text
    assert f"    {key}:" not in text and "0.0.0.0/0]" not in text.replace("or [0.0.0.0/0]", "")
    assert f"#   pulumi config set --path 'k3infra:{section}.{key}[0]' A.B.C.D/32" in text
    p = plan(stack)
    assert any(w.startswith(f"k3infra:{section}.{key} is not set") and "`pulumi up` stops until it is set" in w
               for w in p.warnings)
    raw = {k: (v.value if hasattr(v, "value") else v) for k, v in planning.load(stack, root=ROOT).config.items()}
    with pytest.raises(ConfigError) as e:
        parse_config(raw, stack=stack, real_run=True)
    assert f"k3infra:{section}.{key}" in {p.key for p in e.value.problems}


CLUSTER_ACCESS = {
    "gcp-a4xmax": ("gcp.authorizedNetworks", "gcp:container/cluster:Cluster",
                   lambda i: [c["cidrBlock"] for c in i["masterAuthorizedNetworksConfig"]["cidrBlocks"]]),
    "aws-eks": ("aws.publicAccessCidrs", "aws:eks/cluster:Cluster", lambda i: i["vpcConfig"]["publicAccessCidrs"]),
    "aws-hyperpod": ("aws.publicAccessCidrs", "aws:eks/cluster:Cluster",
                     lambda i: i["vpcConfig"]["publicAccessCidrs"]),
    "azure-gb300": ("azure.authorizedIpRanges", "azure-native:containerservice:ManagedCluster",
                    lambda i: i["apiServerAccessProfile"]["authorizedIPRanges"]),
}


@pytest.mark.parametrize("stack", CLUSTER_ACCESS)
def test_the_planned_control_plane_admits_only_the_stated_range(stack):
    key, type_, ranges = CLUSTER_ACCESS[stack]
    p = plan(stack, f"{key}=[81.2.69.7/32]")
    (cluster,) = [r for r in p.recording.resources if r.type == type_]
    assert ranges(offline.plain(cluster.inputs)) == ["81.2.69.7/32"]
    assert not any("every internet address" in w or w.startswith(f"k3infra:{key} ") for w in p.warnings)


def test_ack_keeps_its_api_server_on_the_vpc_by_default():
    cluster = plan("alicloud-ack").recording.one("alicloud:cs/managedKubernetes:ManagedKubernetes", "k3-cluster")
    assert offline.plain(cluster.inputs)["slbInternetEnabled"] is False
