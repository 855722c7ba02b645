"""The pure parts of k3infra.aws: IAM documents, EFA layouts, the VPC layout, Capacity Block checks, kubeconfig."""

import json

import pytest

from k3infra.aws import capacity as cb
from k3infra.aws import efa, network, policies
from k3infra.aws.kubeconfig import kubeconfig, kubeconfig_json

BUCKET = "arn:aws:s3:::weights"


# --- IAM -----------------------------------------------------------------------------------------------


def test_read_only_role_really_is_read_only():
    doc = policies.s3_read_only(BUCKET)
    assert policies.actions_of(doc) == {"s3:ListBucket", "s3:GetObject"}
    by_sid = {s["Sid"]: s for s in doc["Statement"]}
    assert by_sid["ListWeights"]["Resource"] == BUCKET
    assert by_sid["ReadWeights"]["Resource"] == BUCKET + "/*"
    assert all(s["Effect"] == "Allow" for s in doc["Statement"])
    assert not any("*" in a.split(":")[1] for a in policies.actions_of(doc))


def test_writer_writes_deletes_only_completion_markers_and_never_reconfigures():
    doc = policies.s3_read_write(BUCKET)
    acts = policies.actions_of(doc)
    assert acts == {"s3:ListBucket", "s3:ListBucketMultipartUploads", "s3:GetObject", "s3:PutObject",
                    "s3:AbortMultipartUpload", "s3:ListMultipartUploadParts", "s3:DeleteObject"}
    assert not {a for a in acts if "Bucket" in a.split(":")[1] and a.startswith(("s3:Put", "s3:Delete"))}
    assert [st["Resource"] for st in doc["Statement"] if "s3:DeleteObject" in st["Action"]] == [
        f"{BUCKET}/*/.k3infra/complete-*"]


def test_pod_identity_trust_allows_assume_and_tag_session_from_eks_pods_only():
    (st,) = policies.pod_identity_trust()["Statement"]
    assert st == {"Effect": "Allow", "Principal": {"Service": "pods.eks.amazonaws.com"},
                  "Action": ["sts:AssumeRole", "sts:TagSession"]}


def test_irsa_trust_names_one_service_account_and_the_sts_audience():
    doc = policies.irsa_trust("arn:aws:iam::1:oidc-provider/oidc.eks.us-west-2.amazonaws.com/id/ABC",
                              "https://oidc.eks.us-west-2.amazonaws.com/id/ABC", "ns", "sa",
                              also_services=("sagemaker.amazonaws.com",))
    web, svc = doc["Statement"]
    assert web["Action"] == "sts:AssumeRoleWithWebIdentity"
    assert web["Condition"]["StringEquals"] == {
        "oidc.eks.us-west-2.amazonaws.com/id/ABC:sub": "system:serviceaccount:ns:sa",
        "oidc.eks.us-west-2.amazonaws.com/id/ABC:aud": "sts.amazonaws.com",
    }
    assert svc["Principal"] == {"Service": "sagemaker.amazonaws.com"} and svc["Action"] == "sts:AssumeRole"


def test_bucket_policy_denies_everything_without_tls():
    (st,) = policies.deny_insecure_transport(BUCKET)["Statement"]
    assert st["Effect"] == "Deny" and st["Action"] == "s3:*"
    assert st["Resource"] == [BUCKET, BUCKET + "/*"]
    assert st["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}


def test_policy_documents_are_json():
    for doc in (policies.keda_operator(), policies.load_balancer_controller("v2.13.2"), policies.tls_bucket_access(BUCKET),
                policies.service_trust("eks.amazonaws.com")):
        assert json.loads(json.dumps(doc))["Version"] == "2012-10-17"


# --- EFA -----------------------------------------------------------------------------------------------


def test_p6_b300_card_zero_is_ena_and_sixteen_cards_are_efa_only():
    ifaces = efa.interfaces("p6-b300.48xlarge")
    assert len(ifaces) == 17
    assert ifaces[0] == efa.Interface(device_index=0, network_card_index=0, interface_type=None)
    assert [(i.device_index, i.network_card_index, i.interface_type) for i in ifaces[1:]] == [
        (1, card, "efa-only") for card in range(1, 17)]
    assert efa.EFA_LAYOUTS["p6-b300.48xlarge"].efa_devices == 16


def test_p5en_card_zero_carries_efa():
    ifaces = efa.interfaces("p5en.48xlarge")
    assert len(ifaces) == 16 and ifaces[0].interface_type == "efa"
    assert efa.EFA_LAYOUTS["p5en.48xlarge"].efa_devices == 16


def test_unknown_instance_type_has_no_layout():
    with pytest.raises(KeyError, match="no EFA layout for g6.xlarge"):
        efa.interfaces("g6.xlarge")


# --- network -------------------------------------------------------------------------------------------


def test_subnet_plan_of_a_slash_16():
    p = network.subnet_plan("10.0.0.0/16")
    assert (p.private_capacity, p.private_other, p.public_capacity, p.public_other) == (
        "10.0.0.0/18", "10.0.64.0/18", "10.0.128.0/24", "10.0.129.0/24")


def test_subnet_plan_of_a_slash_20():
    p = network.subnet_plan("172.16.0.0/20")
    assert (p.private_capacity, p.private_other, p.public_capacity, p.public_other) == (
        "172.16.0.0/22", "172.16.4.0/22", "172.16.8.0/28", "172.16.8.16/28")


def test_subnet_plan_refuses_a_small_vpc():
    with pytest.raises(ValueError, match="smaller than /20"):
        network.subnet_plan("10.0.0.0/24")


def test_the_second_zone_is_the_first_other_available_one():
    assert network.other_zone("us-west-2a", ["us-west-2c", "us-west-2a", "us-west-2b"]) == "us-west-2b"
    with pytest.raises(ValueError):
        network.other_zone("us-west-2a", ["us-west-2a"])


# --- Capacity Blocks -----------------------------------------------------------------------------------

BLOCK = cb.BlockFacts(id="cr-0123456789abcdef0", availability_zone="us-west-2a", instance_type="p6-b300.48xlarge",
                      instance_count=1, start_date="2026-12-01T11:30:00Z", end_date="2026-12-15T11:30:00Z", state="active")


def test_a_block_that_fits_has_no_problem():
    assert cb.problems(BLOCK, zone="us-west-2a", instance_type="p6-b300.48xlarge", nodes=1, purchase=False) == []


def test_a_block_in_another_zone_than_the_subnets():
    (p,) = cb.problems(BLOCK, zone="us-west-2b", instance_type="p6-b300.48xlarge", nodes=1, purchase=False)
    assert p.key == "k3infra:zone"
    assert p.reason == ("Capacity Block cr-0123456789abcdef0 is in us-west-2a, and the GPU subnet is in us-west-2b: "
                        "instances launch only in the block's availability zone")
    assert p.given == "'us-west-2b'"
    assert p.allowed == "us-west-2a (the block's zone), or a reservationId of a block in us-west-2b"


def test_an_offering_in_another_zone_names_the_purchase():
    offer = cb.BlockFacts(id="cb-1", availability_zone="us-west-2c", instance_type="p6-b300.48xlarge",
                          instance_count=1, start_date="a", end_date="b", duration_hours=24, upfront_fee="1.00")
    (p,) = cb.problems(offer, zone="us-west-2a", instance_type="p6-b300.48xlarge", nodes=1, purchase=True)
    assert p.key == "k3infra:zone" and "the Capacity Block offering cb-1 is in us-west-2c" in p.reason
    assert p.allowed == "us-west-2c (the block's zone)"
    assert cb.window(offer) == "24 hours between a and b"


def test_wrong_type_too_small_and_expired_blocks():
    bad = cb.BlockFacts(id="cr-1", availability_zone="us-west-2a", instance_type="p5en.48xlarge", instance_count=1,
                        start_date="s", end_date="e", state="expired")
    found = cb.problems(bad, zone="us-west-2a", instance_type="p6-b300.48xlarge", nodes=2, purchase=False)
    assert [p.key for p in found] == ["k3infra:capacity.reservationId"] * 3
    assert [p.reason for p in found] == [
        "Capacity Block cr-1 holds p5en.48xlarge, and the stack runs p6-b300.48xlarge",
        "Capacity Block cr-1 holds 1 instance(s), and the stack needs 2",
        "Capacity Block cr-1 is expired (it ended e)",
    ]


@pytest.mark.parametrize("given, end, expected", [
    ("2026-12-01", False, "2026-12-01T00:00:00Z"),
    ("2026-12-08", True, "2026-12-08T23:59:59Z"),
    ("2026-12-01T10:00Z", False, "2026-12-01T10:00:00Z"),
    ("2026-12-01T10:00:30", False, "2026-12-01T10:00:30Z"),
])
def test_window_dates_become_rfc3339(given, end, expected):
    assert cb.rfc3339(given, end_of_day=end) == expected


# --- kubeconfig ----------------------------------------------------------------------------------------


def test_kubeconfig_uses_aws_eks_get_token_and_no_static_credential():
    kc = kubeconfig("k3", "https://x.eks.amazonaws.com", "Q0E=", "us-west-2")
    user = kc["users"][0]["user"]
    assert set(user) == {"exec"}
    assert user["exec"]["command"] == "aws"
    assert user["exec"]["args"] == ["eks", "get-token", "--cluster-name", "k3", "--region", "us-west-2", "--output", "json"]
    assert kc["clusters"][0]["cluster"] == {"server": "https://x.eks.amazonaws.com", "certificate-authority-data": "Q0E="}
    assert json.loads(kubeconfig_json("k3", "s", "c", "r"))["current-context"] == "k3"
