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
