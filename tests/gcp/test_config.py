"""Google Cloud misconfigurations fail validation, before any resource, with the key, the value and a reason."""

import pytest

from k3infra import planning
from k3infra.catalog.gke import GKE_MACHINES, GkeVersion, floor
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


A4X_MAX_FLOOR = ("A4X Max node pools need GKE 1.34.3-gke.1318000 or later on 1.34 and 1.35.0-gke.2745000 or later "
                 "from 1.35")


@pytest.mark.parametrize("version", ["1.33", "1.34", "1.34.2", "1.34.3-gke.1317999",
                                     # 1.35.0-gke.1000 is newer than the 1.34 minimum but below its own branch's
                                     "1.35", "1.35.0", "1.35.0-gke.2744999"])
def test_a4x_max_needs_its_gke_floor_on_each_branch(version: str) -> None:
    with pytest.raises(ConfigError) as e:
        validate("gcp-a4xmax", f'cluster.kubernetesVersion="{version}"')
    [problem] = e.value.problems
    assert problem.key == "k3infra:cluster.kubernetesVersion" and problem.reason.startswith(A4X_MAX_FLOOR)
    assert problem.allowed == "1.34.3-gke.1318000 or later on 1.34, 1.35.0-gke.2745000 or later from 1.35"
    assert ("also names older patches" in problem.reason) == (version in ("1.34", "1.35", "1.35.0"))


@pytest.mark.parametrize("version", ["1.34.3-gke.1318000", "1.34.4", "1.35.0-gke.2745000", "1.35.1", "1.36"])
def test_a4x_max_accepts_versions_at_or_above_its_floor(version: str) -> None:
    assert validate("gcp-a4xmax", f'cluster.kubernetesVersion="{version}"').cluster.kubernetes_version == version


def test_a4x_max_floors_are_the_machine_s_per_branch_and_dranet_s() -> None:
    machine = GKE_MACHINES["a4x-maxgpu-4g-metal"]
    assert sorted(f.requirement for f in machine.min_gke_versions) == [
        "1.34.0 or later", "1.34.1-gke.1829001 or later",
        "1.34.3-gke.1318000 or later on 1.34, 1.35.0-gke.2745000 or later from 1.35"]
    assert GKE_MACHINES["a4-highgpu-8g"].min_gke_versions == ()


def test_a_per_branch_floor_takes_the_minimum_of_the_version_s_own_branch() -> None:
    """NVIDIA/aicr's constraint ">= 1.34.3-gke.1318000 < 1.35 || >= 1.35.0-gke.2745000", branch by branch."""
    f = floor("1.34.3-gke.1318000", "why", later_branches=("1.35.0-gke.2745000",))
    admitted = {v: f.admits(GkeVersion.parse(v)) for v in (  # type: ignore[arg-type]
        "1.33.9-gke.9999999", "1.34.3-gke.1317999", "1.34.3-gke.1318000", "1.34.9", "1.35.0-gke.2744999",
        "1.35.0-gke.2745000", "1.35.1-gke.1", "1.36.0-gke.1", "2.0")}
    assert admitted == {"1.33.9-gke.9999999": False, "1.34.3-gke.1317999": False, "1.34.3-gke.1318000": True,
                        "1.34.9": True, "1.35.0-gke.2744999": False, "1.35.0-gke.2745000": True,
                        "1.35.1-gke.1": True, "1.36.0-gke.1": True, "2.0": True}
    with pytest.raises(AssertionError, match="oldest first"):
        floor("1.35.0-gke.2745000", "why", later_branches=("1.34.3-gke.1318000",))


def test_kubernetes_version_must_be_a_gke_version() -> None:
    got = problems("gcp-a4xmax", 'cluster.kubernetesVersion="1.35.1-eks.2"')
    assert got == {"k3infra:cluster.kubernetesVersion": "is not a GKE version"}


def test_gateway_needs_gke_1_32() -> None:
    got = problems("gcp-a4-sglang", "endpoint.gateway=true", 'cluster.kubernetesVersion="1.32.2-gke.1000"')
    assert got == {"k3infra:cluster.kubernetesVersion": "the GKE Inference Gateway needs GKE 1.32.3 or later"}
    assert validate("gcp-a4-sglang", "endpoint.gateway=false",
                    'cluster.kubernetesVersion="1.31"').cluster.kubernetes_version == "1.31"


def test_upgrade_settings_default_to_the_references() -> None:
    g = validate("gcp-a4xmax").gcp
    assert g is not None
    assert (g.release_channel, g.upgrade_exclusion, g.upgrade_exclusion_start, g.maintenance_window_start) == (
        "REGULAR", "NO_MINOR_OR_NODE_UPGRADES", "2026-01-01T00:00:00Z", "09:00")
    assert (g.authorized_networks, g.private_endpoint) == ((), False)  # the template: yours to set before `pulumi up`


@pytest.mark.parametrize(("scope", "says"), [("none", "GKE upgrades the GPU pool's nodes on its own"),
                                             ("NO_MINOR_UPGRADES", "still applies node patch upgrades")])
def test_weaker_upgrade_exclusions_warn(scope: str, says: str) -> None:
    cfg = validate("gcp-a4xmax", f"gcp.upgradeExclusion={scope}")
    assert any(says in w and "1.56 TB" in w for w in cfg.warnings)
    assert cfg.gcp is not None and cfg.gcp.upgrade_exclusion == (None if scope == "none" else scope)


@pytest.mark.parametrize(("key", "value"), [("gcp.maintenanceWindowStart", "9am"), ("gcp.upgradeExclusion", "NO_UPGRADES"),
                                            ("gcp.upgradeExclusionStart", "2026-01-01"),
                                            ("gcp.authorizedNetworks", '["10.0.0.0"]')])
def test_upgrade_and_access_keys_reject_malformed_values(key: str, value: str) -> None:
    got = problems("gcp-a4xmax", f"{key}={value}")
    assert len(got) == 1 and next(iter(got)).startswith(f"k3infra:{key}")


def test_cluster_name_longer_than_gke_allows() -> None:
    got = problems("gcp-a4xmax", "cluster.name=k3-" + "a" * 40)
    assert "at most 40" in got["k3infra:cluster.name"]


def test_driver_installation_disabled_warns() -> None:
    cfg = validate("gcp-a4xmax", "gcp.gpuDriverVersion=INSTALLATION_DISABLED")
    assert any("installs no NVIDIA driver" in w for w in cfg.warnings)


def test_gcp_project_id_format() -> None:
    got = problems("gcp-a4xmax", 'gcp:project="123456789012"')
    assert "looks like a project number" in got["gcp:project"]
