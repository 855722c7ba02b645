"""Azure-specific configuration checks: they fail (or warn) before any resource is registered."""

import pytest

from k3infra import planning
from k3infra.config import ConfigError
from tests.support import ROOT

FAMILY = "standardNDISRGB300V6Family"


def validate(*sets: str):
    return planning.validate(planning.load("azure-gb300", sets, root=ROOT))


def problems(*sets: str) -> dict[str, str]:
    with pytest.raises(ConfigError) as e:
        validate(*sets)
    return {p.key: str(p) for p in e.value.problems}


def test_the_stack_validates() -> None:
    cfg = validate()
    assert cfg.azure is not None and cfg.azure.quota_vcpus == 256 and cfg.total_nodes == 2


def test_quota_below_need_names_family_need_and_limit() -> None:
    found = problems("azure.quotaVcpus=128")
    assert list(found) == ["k3infra:azure.quotaVcpus"]
    msg = found["k3infra:azure.quotaVcpus"]
    assert FAMILY in msg
    assert "2 x Standard_ND128isr_GB300_v6 x 128 vCPUs = 256 vCPUs" in msg
    assert "quota of 128 vCPUs in eastus2" in msg
    assert "(given: 128; allowed: at least 256" in msg


def test_default_quota_of_zero_is_refused() -> None:
    assert "quota of 0 vCPUs" in problems("azure.quotaVcpus=0")["k3infra:azure.quotaVcpus"]


def test_quota_need_follows_the_node_count() -> None:
    msg = problems("nodes=3", "azure.quotaVcpus=256")["k3infra:azure.quotaVcpus"]
    assert "3 x Standard_ND128isr_GB300_v6 x 128 vCPUs = 384 vCPUs" in msg


def test_image_without_arm64_is_refused() -> None:
    found = problems("image=vllm/vllm-openai:kimi-k3", "imagePlatforms=[amd64]")
    msg = found["k3infra:image"]
    assert "no known arm64 build" in msg and "Standard_ND128isr_GB300_v6 nodes are arm64" in msg
    assert "002 appendix item 1" in msg


def test_catalog_image_without_declared_platforms_is_refused() -> None:
    """The seed's vllm/vllm-openai:kimi-k3 has no confirmed arm64 build (002 caveat 2)."""
    with pytest.raises(ConfigError) as e:
        planning.validate(_without("k3infra:imagePlatforms", "image=vllm/vllm-openai:kimi-k3"))
    assert "k3infra:image" in {p.key for p in e.value.problems}


def _without(key: str, *sets: str):
    sf = planning.load("azure-gb300", sets, root=ROOT)
    config = {k: v for k, v in sf.config.items() if k != key}
    return planning.StackFile(path=sf.path, stack=sf.stack, project=sf.project, config=config,
                              secret_keys=sf.secret_keys, notes=sf.notes)


def test_group_id_and_create_are_exclusive() -> None:
    found = problems("capacity.create=true")
    assert "k3infra:capacity.groupId" in found and "either references a group or creates one" in found[
        "k3infra:capacity.groupId"]


def test_create_warns_that_it_bills() -> None:
    cfg = planning.validate(_without_group("capacity.create=true"))
    assert any("bill from creation" in w for w in cfg.warnings)


def _without_group(*sets: str):
    sf = planning.load("azure-gb300", sets, root=ROOT)
    capacity = {k: v for k, v in sf.config["k3infra:capacity"].items() if k != "groupId"}
    config = {**sf.config, "k3infra:capacity": capacity}
    return planning.StackFile(path=sf.path, stack=sf.stack, project=sf.project, config=config,
                              secret_keys=sf.secret_keys, notes=sf.notes)


def test_group_from_another_subscription_warns_that_it_is_not_checked() -> None:
    cfg = validate("azure-native:subscriptionId=11111111-1111-1111-1111-111111111111")
    assert any("in subscription 00000000-0000-0000-0000-000000000000, the stack in 11111111" in w
               for w in cfg.warnings)


def test_gpu_driver_none_warns_about_the_operator() -> None:
    cfg = validate("azure.gpuDriver=None")
    assert cfg.azure is not None and cfg.azure.gpu_driver == "None"
    assert any("NVIDIA GPU Operator" in w for w in cfg.warnings)


def test_gpu_driver_takes_install_or_none() -> None:
    assert "k3infra:azure.gpuDriver" in problems("azure.gpuDriver=Skip")


def test_fuse_loader_warns_about_token_mounts() -> None:
    cfg = validate("weights.loader=fuse")
    assert any("mountWithWorkloadIdentityToken" in w for w in cfg.warnings)


REGISTRY = ("/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg-k3-registry/providers/"
            "Microsoft.ContainerRegistry/registries/{name}")


def test_the_stack_grants_pull_on_its_images_registry() -> None:
    cfg = validate()
    assert cfg.azure is not None and cfg.azure.container_registry == REGISTRY.format(name="myregistry")
    assert not any("AcrPull" in w for w in cfg.warnings)


def test_registry_must_be_the_images() -> None:
    found = problems(f"azure.containerRegistry={REGISTRY.format(name='otherregistry')}")
    assert list(found) == ["k3infra:azure.containerRegistry"]
    assert "names registry otherregistry, and the image is in myregistry.azurecr.io" in found[
        "k3infra:azure.containerRegistry"]
    assert "allowed: the resource id of registry myregistry" in found["k3infra:azure.containerRegistry"]
    found = problems(f"azure.containerRegistry={REGISTRY.format(name='myregistry')}", "image=vllm/vllm-openai:v0.33.0")
    assert "is not in an Azure Container Registry" in found["k3infra:azure.containerRegistry"]


def test_registry_id_format() -> None:
    found = problems("azure.containerRegistry=myregistry")
    assert list(found) == ["k3infra:azure.containerRegistry"]


def test_an_acr_image_without_its_registry_warns() -> None:
    sf = planning.load("azure-gb300", (), root=ROOT)
    azure = {k: v for k, v in sf.config["k3infra:azure"].items() if k != "containerRegistry"}
    sf = planning.StackFile(path=sf.path, stack=sf.stack, project=sf.project, config={**sf.config, "k3infra:azure": azure},
                            secret_keys=sf.secret_keys, notes=sf.notes)
    cfg = planning.validate(sf)
    assert any(w.startswith("the image is in myregistry.azurecr.io and azure.containerRegistry is not set") for w in
               cfg.warnings)


@pytest.mark.parametrize("version", ["1.33", "1.34", "1.34.2"])
def test_gb300_needs_kubernetes_1_35_for_ubuntu_24_04(version: str) -> None:
    found = problems(f'cluster.kubernetesVersion="{version}"')
    assert list(found) == ["k3infra:cluster.kubernetesVersion"]
    assert "Ubuntu 24.04 GB node image" in found["k3infra:cluster.kubernetesVersion"]


def test_gb300_defaults_to_kubernetes_1_35() -> None:
    """The GB300 node image is arm64 Ubuntu 24.04, which osSKU Ubuntu is from 1.35: the stack states no version."""
    assert validate().cluster.kubernetes_version is None
    cluster = planning.record(planning.load("azure-gb300", (), root=ROOT)).one(
        "azure-native:containerservice:ManagedCluster").inputs
    assert cluster["kubernetesVersion"] == "1.35"


@pytest.mark.parametrize("version", ["1.35", "1.36", "1.35.2"])
def test_gb300_accepts_kubernetes_from_1_35(version: str) -> None:
    assert validate(f'cluster.kubernetesVersion="{version}"').cluster.kubernetes_version == version


def test_gb300_with_an_upgrade_channel_keeps_aks_default_version_and_says_what_it_must_be() -> None:
    sf = planning.load("azure-gb300", ("azure.upgradeChannel=stable",), root=ROOT)
    cfg = planning.validate(sf)
    assert any(w.startswith("azure.upgradeChannel stable without cluster.kubernetesVersion") for w in cfg.warnings)
    cluster = planning.record(sf).one("azure-native:containerservice:ManagedCluster").inputs
    assert "kubernetesVersion" not in cluster
