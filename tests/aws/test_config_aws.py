"""AWS configuration rules (k3infra/config/clouds/aws.py) and the AWS rules the cloud-neutral checks carry."""

import pytest

from k3infra.config import parse_config
from tests.configs import AWS, HYPERPOD, only, problems, with_

PURCHASE = {"type": "capacity-block", "purchase": True, "startAfter": "2026-12-01", "endBefore": "2027-07-01"}


def test_the_reference_stacks_are_valid():
    assert problems(AWS) == [] and problems(HYPERPOD) == []


@pytest.mark.parametrize("cidr", ["10.0.0.0/16", "10.0.0.0/18", "192.168.0.0/20"])
def test_vpc_cidrs_from_16_to_20_are_accepted(cidr):
    assert problems(with_(AWS, aws__vpcCidr=cidr)) == []


@pytest.mark.parametrize("cidr", ["10.0.0.0/8", "10.0.0.0/24"])
def test_vpc_cidrs_outside_16_to_20_are_rejected(cidr):
    p = only(with_(AWS, aws__vpcCidr=cidr))
    assert p.key == "k3infra:aws.vpcCidr"
    assert "does not fit k3infra's layout" in p.reason and p.allowed == "a CIDR from /16 to /20, such as 10.0.0.0/16"


def test_bucket_names_with_dots_break_virtual_hosted_https():
    p = only(with_(AWS, weights={"bucket": "kimi.k3.weights", "sync": False}))
    assert p.key == "k3infra:weights.bucket"
    assert p.reason.startswith("S3 bucket names with dots break virtual-hosted HTTPS certificate checks")


@pytest.mark.parametrize("hours", [24, 48, 336, 504, 4368])
def test_capacity_block_durations_in_days_then_weeks(hours):
    assert problems(with_(AWS, capacity={**PURCHASE, "durationHours": hours})) == []


@pytest.mark.parametrize("hours, reason", [
    (30, "Capacity Blocks up to 14 days last whole days"),
    (360, "Capacity Blocks longer than 14 days last whole weeks"),
])
def test_capacity_block_durations_that_ec2_does_not_sell(hours, reason):
    p = only(with_(AWS, capacity={**PURCHASE, "durationHours": hours}))
    assert (p.key, p.reason, p.given) == ("k3infra:capacity.durationHours", reason, str(hours))


def test_a_purchase_of_more_than_64_instances():
    p = only(with_(AWS, capacity={**PURCHASE, "durationHours": 24}, replicas=65))
    assert p.key == "k3infra:capacity.purchase"
    assert p.reason == "the stack needs 65 instances, and one Capacity Block holds at most 64"


def test_purchase_without_an_offering_window_names_each_missing_field():
    found = problems(with_(AWS, capacity={"type": "capacity-block", "purchase": True}))
    assert [(p.key, p.reason) for p in found] == [
        (f"k3infra:capacity.{k}", "is required: buying a Capacity Block needs the offering window (start, end, duration)")
        for k in ("durationHours", "endBefore", "startAfter")
    ]


def test_purchase_warns_that_it_cannot_be_undone():
    cfg = parse_config(with_(AWS, capacity={**PURCHASE, "durationHours": 24}), stack="t")
    assert any("buys a Capacity Block, which is immediate and non-refundable" in w for w in cfg.warnings)


def test_a_gateway_on_eks_is_accepted_and_on_hyperpod_refused():
    """EKS gets agentgateway (serving.gateway_install); HyperPod's endpoint routes itself."""
    assert problems(with_(AWS, endpoint={"gateway": True})) == []
    p = only(with_(HYPERPOD, endpoint={"gateway": True}))
    assert p.key == "k3infra:endpoint.gateway" and "routes itself" in p.reason


def test_a_multi_node_hyperpod_endpoint_is_rejected_with_the_reason():
    p = only(with_(HYPERPOD, nodes=2))
    assert str(p) == ("k3infra:nodes: the HyperPod Inference Operator runs one replica on one instance (no "
                      "leader/worker field in InferenceEndpointConfig) (given: 2; allowed: 1)")


def test_replicas_are_fine_on_hyperpod():
    assert problems(with_(HYPERPOD, replicas=2)) == []


def test_a_training_plan_arn_of_the_wrong_shape():
    p = only(with_(HYPERPOD, capacity={"type": "training-plan",
                                       "trainingPlanArn": "arn:aws:sagemaker:us-west-2:123456789012:cluster/abc"}))
    assert p.key == "k3infra:capacity.trainingPlanArn" and p.reason == "is not well formed"
    assert p.allowed == "arn:aws:sagemaker:REGION:ACCOUNT(12 digits):training-plan/NAME"


def test_a_public_hyperpod_endpoint_cannot_be_limited_to_cidrs():
    p = only(with_(HYPERPOD, endpoint={"exposure": "public", "allowedCidrs": ["203.0.113.0/24"]}, apiKey="k"))
    assert p.key == "k3infra:endpoint.exposure" and "no field for source ranges" in p.reason


@pytest.mark.parametrize("version, allowed", [("1.34", None), ("1.27", "1.28 to 1.34, of which k3infra pins 1.34"),
                                              ("1.35", "1.28 to 1.34, of which k3infra pins 1.34"), ("1.28", "1.34"),
                                              ("1.33", "1.34")])
def test_hyperpod_kubernetes_versions(version, allowed):
    """HyperPod runs 1.28 to 1.34; within that, k3infra pins the EKS add-ons (and the Cluster Autoscaler with #8047,
    1.33 and later only) for 1.34."""
    found = problems(with_(HYPERPOD, cluster={"kubernetesVersion": version}))
    if allowed is None:
        assert found == []
    else:
        (p,) = found
        assert p.key == "k3infra:cluster.kubernetesVersion" and p.allowed == allowed


@pytest.mark.parametrize("version, sync, allowed", [("1.35", True, None), ("1.34", False, None),
                                                    ("1.31", True, "1.34, 1.35"), ("1.36", False, "1.34, 1.35")])
def test_eks_kubernetes_versions_are_those_with_pinned_add_ons(version, sync, allowed):
    found = problems(with_(AWS, cluster={"kubernetesVersion": version},
                           weights={"bucket": "b-1", "sync": sync, "revision": "0" * 40}))
    if allowed is None:
        assert found == []
    else:
        (p,) = found
        assert p.key == "k3infra:cluster.kubernetesVersion" and p.allowed == allowed
        assert ("Cluster Autoscaler" in p.reason) is sync


def test_the_hyperpod_chart_path_defaults_to_a_cli_checkout():
    cfg = parse_config(HYPERPOD, stack="t")
    assert cfg.aws is not None and cfg.aws.hyperpod_helm_chart == "sagemaker-hyperpod-cli/helm_chart/HyperPodHelmChart"


def test_the_hyperpod_chart_path_is_ignored_on_eks_with_a_warning():
    cfg = parse_config(with_(AWS, aws__hyperpodHelmChart="/opt/charts/HyperPodHelmChart"), stack="t")
    assert "aws.hyperpodHelmChart is ignored: it applies to platform hyperpod" in cfg.warnings


# --- EKS API endpoint access (issue 16) -------------------------------------------------------------------------


def test_an_api_endpoint_neither_limited_nor_private_is_a_config_error():
    p = only(with_(AWS, aws={}))
    assert p.key == "k3infra:aws.publicAccessCidrs" and "would answer every internet address" in p.reason
    assert "aws.privateEndpoint: true" in p.allowed and "[0.0.0.0/0]" in p.allowed


def test_public_access_cidrs_limit_the_endpoint():
    cfg = parse_config(with_(AWS, aws={"publicAccessCidrs": ["81.2.69.0/24", "81.2.70.7/32"]}), stack="t")
    assert cfg.aws is not None and cfg.aws.public_access_cidrs == ("81.2.69.0/24", "81.2.70.7/32")
    assert not [w for w in cfg.warnings if "EKS API endpoint" in w]


@pytest.mark.parametrize("cidr", ["10.0.0.0/16", "192.168.1.0/24", "100.64.0.0/16", "127.0.0.1/32", "172.20.0.0/16"])
def test_private_and_reserved_ranges_cannot_reach_a_public_endpoint(cidr):
    p = only(with_(AWS, aws={"publicAccessCidrs": [cidr]}))
    assert p.key == "k3infra:aws.publicAccessCidrs[0]" and "only public addresses" in p.reason


def test_a_private_endpoint_takes_no_public_cidrs_and_warns_where_pulumi_must_run():
    p = only(with_(AWS, aws={"privateEndpoint": True, "publicAccessCidrs": ["81.2.69.0/24"]}))
    assert p.key == "k3infra:aws.publicAccessCidrs" and "no public access to limit" in p.reason
    cfg = parse_config(with_(AWS, aws={"privateEndpoint": True}), stack="t")
    assert cfg.aws is not None and cfg.aws.private_endpoint is True
    assert any(w.startswith("aws.privateEndpoint is true: the EKS API has no public endpoint") for w in cfg.warnings)


def test_an_open_cidr_is_allowed_with_a_warning():
    cfg = parse_config(with_(AWS, aws={"publicAccessCidrs": ["0.0.0.0/0"]}), stack="t")
    assert ("aws.publicAccessCidrs lists 0.0.0.0/0: the EKS API endpoint answers every internet address (callers "
            "still need the cluster's credentials)") in cfg.warnings


def test_end_margin_applies_to_capacity_blocks_and_training_plans_only():
    cfg = parse_config(with_(AWS, capacity={"type": "capacity-block", "reservationId": "cr-0123456789abcdef0",
                                           "endMarginHours": 6}), stack="t")
    assert cfg.capacity.end_margin_hours == 6
    assert parse_config(AWS, stack="t").capacity.end_margin_hours == 24
    assert only(with_(AWS, capacity={"type": "on-demand", "endMarginHours": 6})).key == "k3infra:capacity.endMarginHours"


def test_deep_health_checks_are_a_hyperpod_setting_off_by_default():
    assert parse_config(HYPERPOD, stack="t").aws.deep_health_checks is False  # type: ignore[union-attr]
    on = parse_config(with_(HYPERPOD, aws={"publicAccessCidrs": ["81.2.69.0/24"], "deepHealthChecks": True}), stack="t")
    assert on.aws is not None and on.aws.deep_health_checks is True
    assert on.sizing.cold_start.gpu_pool_seconds == (25 + 180) * 60
    eks = parse_config(with_(AWS, aws={"publicAccessCidrs": ["81.2.69.0/24"], "deepHealthChecks": True}), stack="t")
    assert "aws.deepHealthChecks is ignored: it applies to platform hyperpod" in eks.warnings
    assert eks.sizing.cold_start.gpu_pool_seconds == 25 * 60
