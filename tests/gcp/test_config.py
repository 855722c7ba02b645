"""Google Cloud misconfigurations fail validation, before any resource, with the key, the value and a reason."""

import pytest

from k3infra import planning
from k3infra.config import ConfigError, StackConfig
from tests.support import ROOT


def validate(stack: str, *sets: str) -> StackConfig:
    return planning.validate(planning.load(stack, sets, root=ROOT))


def problems(stack: str, *sets: str) -> dict[str, str]:
    with pytest.raises(ConfigError) as e:
        validate(stack, *sets)
    return {p.key: p.reason for p in e.value.problems}


def test_both_stacks_validate() -> None:
    a4x = validate("gcp-a4xmax")
    assert (a4x.accelerator.sku, a4x.nodes, a4x.capacity.sub_block) == (
        "a4x-maxgpu-4g-metal", 2, "k3-a4xmax-block-0001-subblock-0001")
    a4 = validate("gcp-a4-sglang")
    assert (a4.accelerator.sku, a4.nodes, a4.sizing.layout.tensor_parallel, a4.speculative_decoding) == (
        "a4-highgpu-8g", 2, 16, True)
    assert a4x.gcp is not None and a4x.gcp.check_reservation is True


def test_sub_block_without_block() -> None:
    got = problems("gcp-a4-sglang", "capacity.subBlock=k3-a4-block-0001-subblock-0001")
    assert got == {"k3infra:capacity.block": "is required: a reservation path names both the block and its sub-block"}


@pytest.mark.parametrize("missing", ["block", "subBlock"])
def test_a4x_max_needs_block_and_sub_block(missing: str) -> None:
    got = problems("gcp-a4xmax", f"capacity.{missing}=null")
    assert list(got) == [f"k3infra:capacity.{missing}"]
    assert "002 §5.2" in got[f"k3infra:capacity.{missing}"]


def test_a4x_max_without_a_reservation() -> None:
    got = problems("gcp-a4xmax", "capacity.type=on-demand", "capacity.reservation=null", "capacity.block=null",
                   "capacity.subBlock=null")
    assert got == {"k3infra:capacity.type": "a4x-maxgpu-4g-metal capacity cannot be obtained that way"}
    with pytest.raises(ConfigError) as e:
        validate("gcp-a4xmax", "capacity.type=on-demand", "capacity.reservation=null", "capacity.block=null",
                 "capacity.subBlock=null")
    assert "(given: 'on-demand'; allowed: reservation)" in str(e.value)


def test_x86_only_image_on_a4x_max() -> None:
    got = problems("gcp-a4xmax", "image=vllm/vllm-openai:kimi-k3", "imagePlatforms=null")
    assert got == {"k3infra:image": "has no known arm64 build (known: amd64), and a4x-maxgpu-4g-metal nodes are arm64 "
                                    "(Grace); build the engine for arm64 (002 appendix item 1)"}
    got = problems("gcp-a4xmax", "imagePlatforms=[amd64]")
    assert "has no known arm64 build" in got["k3infra:image"]


def test_zone_outside_the_region() -> None:
    got = problems("gcp-a4xmax", "zone=us-east1-b")
    assert got == {"k3infra:zone": "is not a zone of us-central1: Google Cloud zones of us-central1 are us-central1-a, "
                                   "us-central1-b, ..."}


@pytest.mark.parametrize(("sets", "key"), [(("nodes=19",), "k3infra:nodes"), (("nodes=10", "replicas=2"), "k3infra:replicas")])
def test_more_than_18_nodes(sets: tuple[str, ...], key: str) -> None:
    got = problems("gcp-a4xmax", *sets)
    assert list(got) == [key] and "at most" not in got[key] and "one NVL72 rack" in got[key]


def test_reservation_names_not_paths() -> None:
    got = problems("gcp-a4xmax", "capacity.reservation=projects/p/reservations/r")
    assert got["k3infra:capacity.reservation"].startswith("is a path; give the name only")
    got = problems("gcp-a4xmax", "capacity.block=Block_1")
    assert "not a Compute Engine name" in got["k3infra:capacity.block"]


def test_reservation_project_format() -> None:
    got = problems("gcp-a4xmax", 'capacity.project="123456789012"')
    assert got == {"k3infra:capacity.project": "is a project number; reservation paths name the project id"}
    got = problems("gcp-a4xmax", "capacity.project=My_Project")
    assert "not a Google Cloud project id" in got["k3infra:capacity.project"]


@pytest.mark.parametrize("version", ["1.33", "1.34.2", "1.34.1-gke.1829001", "1.34.3-gke.1317999"])
def test_a4x_max_needs_gke_1_34_3_gke_1318000(version: str) -> None:
    got = problems("gcp-a4xmax", f'cluster.kubernetesVersion="{version}"')
    assert list(got) == ["k3infra:cluster.kubernetesVersion"]
    assert got["k3infra:cluster.kubernetesVersion"].startswith("A4X Max node pools need GKE 1.34.3-gke.1318000 or "
                                                               "later")
    assert "resource.k8s.io/v1" in got["k3infra:cluster.kubernetesVersion"]


@pytest.mark.parametrize("version", ["1.34", "1.34.3", "1.34.3-gke.1318000", "1.35.0-gke.1", "1.36"])
def test_a4x_max_accepts_gke_from_the_floor(version: str) -> None:
    assert validate("gcp-a4xmax", f'cluster.kubernetesVersion="{version}"').cluster.kubernetes_version == version


def test_stable_channel_on_a4x_max_warns() -> None:
    cfg = validate("gcp-a4xmax", "gcp.releaseChannel=STABLE")
    assert any(w.startswith("gcp.releaseChannel STABLE: A4X Max node pools need GKE 1.34.3-gke.1318000") for w in cfg.warnings)


def test_gateway_needs_gke_1_32() -> None:
    got = problems("gcp-a4xmax", 'cluster.kubernetesVersion="1.31"')
    assert "the GKE Inference Gateway needs GKE 1.32.3 or later" in got.values()


def test_cluster_name_longer_than_gke_allows() -> None:
    got = problems("gcp-a4xmax", "cluster.name=k3-" + "a" * 40)
    assert "at most 40" in got["k3infra:cluster.name"]


def test_driver_installation_disabled_warns() -> None:
    cfg = validate("gcp-a4xmax", "gcp.gpuDriverVersion=INSTALLATION_DISABLED")
    assert any("installs no NVIDIA driver" in w for w in cfg.warnings)


def test_gcp_project_id_format() -> None:
    got = problems("gcp-a4xmax", 'gcp:project="123456789012"')
    assert "looks like a project number" in got["gcp:project"]
