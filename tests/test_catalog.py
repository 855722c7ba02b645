"""The catalog against the seeds' numbers, and every fact citing a source."""

import dataclasses

import pytest

from k3infra.catalog import (
    ACCELERATORS,
    ENGINES,
    GB,
    IMAGES,
    KIMI_K3,
    CapacityType,
    Cloud,
    CpuArch,
    EngineName,
    accelerators_of,
)
from k3infra.catalog.gke import GKE_MACHINES, GkeVersion, GpuNetworkMode

FACT_FIELDS = {f.name for f in dataclasses.fields(next(iter(ACCELERATORS.values())))} - {
    "sku", "cloud", "sources", "kubernetes_accelerator", "quota_family"}


def test_kimi_k3_matches_seed_002_section_1_and_2():
    m = KIMI_K3
    assert m.hf_id == "moonshotai/Kimi-K3"
    assert m.total_params == 2_800_000_000_000
    assert m.active_params == 104_000_000_000
    assert (m.experts, m.active_experts) == (896, 16)
    assert m.context_tokens == 1_000_000
    assert m.weight_format == "MXFP4"
    assert m.weight_bytes == 1_560 * GB
    assert m.gpu_memory_needed_gb == 1_680
    # The minimum KV cache and runtime overhead are an assumption that must add up to the seed's 1,680 GB at 8 GPUs.
    assert m.weight_bytes / GB + 8 * m.runtime_overhead_gb_per_gpu + m.min_kv_cache_gb == m.gpu_memory_needed_gb
    assert m.served_model_name == "Kimi-K3"
    assert (m.tool_call_parser, m.reasoning_parser) == ("kimi_k3", "kimi_k3")
    assert dict(m.vllm_env) == {"VLLM_ENABLE_K3_LATENT_MOE_TAIL_FUSION": "1"}


def test_draft_models_match_seed_000_and_the_vllm_recipe():
    d = KIMI_K3.draft_model_for(EngineName.SGLANG)
    assert d is not None
    assert (d.hf_id, d.algorithm, d.block_size) == ("RadixArk/Kimi-K3-DSpark", "DSPARK", 7)
    assert "ESTIMATE" in d.sources["weight_bytes"]
    v = KIMI_K3.draft_model_for(EngineName.VLLM)
    assert v is not None
    assert (v.hf_id, v.algorithm, v.block_size) == ("RedHatAI/Kimi-K3-speculator.dspark", "dspark", 8)
    assert "Kimi-K3.yaml" in v.sources["hf_id"]
    assert KIMI_K3.draft_model in (d, v)


def test_every_model_fact_cites_a_source():
    cited = set(KIMI_K3.sources)
    facts = {f.name for f in dataclasses.fields(KIMI_K3)} - {"display_name", "draft_models", "sources"}
    assert facts <= cited, f"uncited: {sorted(facts - cited)}"


@pytest.mark.parametrize("sku", sorted(ACCELERATORS))
def test_every_accelerator_fact_cites_a_source(sku):
    a = ACCELERATORS[sku]
    missing = FACT_FIELDS - set(a.sources)
    assert not missing, f"{sku}: facts without a source: {sorted(missing)}"
    for field, source in a.sources.items():
        assert source.strip(), f"{sku}.{field} has an empty source"
    if a.price.estimate:
        assert "ESTIMATE" in a.sources["price"], f"{sku}: an estimated price must say so in its source"
    else:
        assert "ESTIMATE" not in a.sources["price"]


def test_the_skus_the_issue_names_are_all_there_named_as_their_cloud_names_them():
    assert {a.sku for a in accelerators_of(Cloud.AWS)} == {"p6-b300.48xlarge", "ml.p6-b300.48xlarge", "p5en.48xlarge"}
    assert {a.sku for a in accelerators_of(Cloud.AZURE)} == {"Standard_ND128isr_GB300_v6"}
    assert {a.sku for a in accelerators_of(Cloud.GCP)} == {
        "a4x-maxgpu-4g-metal", "a4x-highgpu-4g", "a4-highgpu-8g", "a3-ultragpu-8g"}
    assert {a.sku for a in accelerators_of(Cloud.ALICLOUD)} == {"ecs.ebmgn8v.48xlarge"}


@pytest.mark.parametrize(
    "sku, gpu, gpus, memory, arch, nvlink, max_nodes",
    [
        # 002 §2.3 and §3: AWS is x86_64 with 8 GPUs per node
        ("p6-b300.48xlarge", "B300", 8, 288, CpuArch.AMD64, 8, None),
        ("ml.p6-b300.48xlarge", "B300", 8, 288, CpuArch.AMD64, 8, None),
        ("p5en.48xlarge", "H200", 8, 141, CpuArch.AMD64, 8, None),
        # 002 §4.1: 4x GB300 288 GB, Grace arm64, 18 VMs per NVL72 rack
        ("Standard_ND128isr_GB300_v6", "GB300", 4, 288, CpuArch.ARM64, 72, 18),
        # 002 §5.1: 4x GB300 arm64, 18 nodes per pool; Google states 279 GB per GPU
        ("a4x-maxgpu-4g-metal", "GB300", 4, 279, CpuArch.ARM64, 72, 18),
        # 000: 16 GB200 on 4 A4X VMs in one NVL72 domain; Google states 186 GB per GPU
        ("a4x-highgpu-4g", "GB200", 4, 186, CpuArch.ARM64, 72, 18),
        # 000 / 002 §2.2: B200 180 GB, x86_64
        ("a4-highgpu-8g", "B200", 8, 180, CpuArch.AMD64, 8, None),
        ("a3-ultragpu-8g", "H200", 8, 141, CpuArch.AMD64, 8, None),
        # 96 GB H20-class, not H200 (docs/catalog-research.md C1)
        ("ecs.ebmgn8v.48xlarge", "H20-class (96 GB)", 8, 96, CpuArch.AMD64, 8, None),
    ],
)
def test_accelerator_facts(sku, gpu, gpus, memory, arch, nvlink, max_nodes):
    a = ACCELERATORS[sku]
    assert (a.gpu_model, a.gpus_per_node, a.gpu_memory_gb, a.cpu_arch, a.nvlink_domain_gpus, a.max_nodes_per_pool) == (
        gpu, gpus, memory, arch, nvlink, max_nodes)


def test_capacity_methods_follow_the_seeds():
    assert ACCELERATORS["p6-b300.48xlarge"].capacity_types[0] == CapacityType.CAPACITY_BLOCK  # 002 §3.2
    assert ACCELERATORS["ml.p6-b300.48xlarge"].capacity_types[0] == CapacityType.TRAINING_PLAN  # 002 §3.1
    assert ACCELERATORS["Standard_ND128isr_GB300_v6"].capacity_types[0] == CapacityType.CAPACITY_RESERVATION_GROUP
    assert ACCELERATORS["a4x-maxgpu-4g-metal"].capacity_types == (CapacityType.RESERVATION,)  # reservation mandatory
    assert CapacityType.ON_DEMAND not in ACCELERATORS["a4-highgpu-8g"].capacity_types  # Google sells no on-demand A4


def test_b300_price_is_the_seeds():
    for sku in ("p6-b300.48xlarge", "ml.p6-b300.48xlarge"):
        p = ACCELERATORS[sku].price
        assert (p.low, p.high, p.estimate) == (59.0, 142.0, False)  # 002 §8


def test_fabrics():
    assert ACCELERATORS["p6-b300.48xlarge"].fabric.total_gbps == 6_400  # 16 EFA cards x 400 Gbps
    assert ACCELERATORS["a4-highgpu-8g"].fabric.nics == 8  # 000: rdma-0 .. rdma-7
    assert ACCELERATORS["Standard_ND128isr_GB300_v6"].fabric.name == "InfiniBand"
    assert all(a.fabric.rdma for a in ACCELERATORS.values())


def test_gke_accelerator_names_and_azure_quota_family():
    assert ACCELERATORS["a4x-maxgpu-4g-metal"].kubernetes_accelerator == "nvidia-gb300"  # 002 §5.2
    assert ACCELERATORS["a4-highgpu-8g"].kubernetes_accelerator == "nvidia-b200"  # 000 nodeSelector
    assert ACCELERATORS["a4x-highgpu-4g"].kubernetes_accelerator == "nvidia-gb200"  # cluster-toolkit gke-a4x
    assert ACCELERATORS["Standard_ND128isr_GB300_v6"].quota_family == "standardNDISRGB300V6Family"


def test_a4x_is_recorded_as_compute_engine_states_it():
    a = ACCELERATORS["a4x-highgpu-4g"]
    assert (a.vcpus, a.host_memory_gib, a.node_memory_gb, a.local_nvme_tb) == (140, 823, 744, 12.9)  # 884 GB = 823 GiB
    assert (a.fabric.nics, a.fabric.gbps_per_nic, a.fabric.total_gbps) == (4, 400, 1_600)  # 4 x CX-7
    assert a.capacity_types == (CapacityType.RESERVATION,)
    assert (a.price.low, a.price.high, a.price.estimate) == (28.35, 114.05, True)  # 4 x 7.088 .. Azure's 4 x GB200


def test_a4x_differs_from_a4x_max_where_google_says_it_does():
    a4x, a4x_max = GKE_MACHINES["a4x-highgpu-4g"], GKE_MACHINES["a4x-maxgpu-4g-metal"]
    # Both on managed DRANET (cluster-toolkit gke-a4x since #5822), with different labels, NICs and NCCL plugin.
    assert a4x.network_mode == a4x_max.network_mode == GpuNetworkMode.ACCELERATOR_PROFILE
    assert a4x.rdma_device_class == a4x_max.rdma_device_class == "mrdma.google.com"
    assert (a4x.rdma_nics, a4x_max.rdma_nics) == (4, 8)
    assert (a4x.bare_metal, a4x_max.bare_metal) == (False, True)
    assert (a4x.asapd_lite, a4x_max.asapd_lite) == (False, True)
    assert (a4x.gib_plugin, a4x_max.gib_plugin) == (True, False)
    assert (a4x.hugepages_2m, dict(a4x.node_labels)) == (None, {"cloud.google.com/gke-networking-dra-driver": "true"})
    assert dict(a4x_max.node_labels) == {"cloud.google.com/gke-networking-dra-driver": "true",
                                         "cloud.google.com/gke-dpv2-unified-cni": "cni-migration"}
    # The same NVL72 shape: one 1x72 sub-block, named by the same node label, Grace nodes, Hyperdisk boot disks.
    for m in (a4x, a4x_max):
        assert (m.accelerator_topology, m.nvlink_domain_label, m.arm64, m.boot_disk_type) == (
            "1x72", "cloud.google.com/gce-topology-subblock", True, "hyperdisk-balanced")
    assert "ASSUMPTION" in a4x.sources["bundled_local_ssds"]


@pytest.mark.parametrize("version, admitted", [
    ("1.32.4-gke.1533000", False),  # the R570 driver's floor, but no resource.k8s.io/v1 for ComputeDomains
    ("1.33.5-gke.100", False),
    ("1.34", False),  # names 1.34.0, older than managed DRANET's 1.34.1-gke.1829001
    ("1.34.1-gke.1829001", True),
    ("1.35.1-gke.200", True),
])
def test_a4x_gke_floors(version, admitted):
    given = GkeVersion.parse(version)
    assert given is not None
    assert all(f.admits(given) for f in GKE_MACHINES["a4x-highgpu-4g"].min_gke_versions) is admitted
    assert [str(f.version) for f in GKE_MACHINES["a4x-highgpu-4g"].min_gke_versions] == ["1.32.4-gke.1533000", "1.34.1-gke.1829001",
                                                                                           "1.34.0"]


def test_engines_match_the_seeds():
    v, s = ENGINES[EngineName.VLLM], ENGINES[EngineName.SGLANG]
    assert (v.default_image, v.port, v.default_load_format) == ("vllm/vllm-openai:kimi-k3", 8000, "fastsafetensors")
    assert (s.default_image, s.port, s.default_load_format) == ("docker.io/lmsysorg/sglang:kimi-k3", 30000, "runai_streamer")
    assert s.memory_fraction == 0.85  # 000 --mem-fraction-static
    assert "MXFP4" not in v.load_formats and "mxfp4" not in v.load_formats


def test_no_image_claims_an_unconfirmed_arm64_build():
    for ref, image in IMAGES.items():
        assert image.engine in ENGINES
        assert ENGINES[image.engine].default_image == ref
    # vLLM's day-0 tag: unconfirmed (002 caveat 2). SGLang's: the GB200 recipe 000 points to runs it on Grace nodes.
    assert CpuArch.ARM64 not in IMAGES["vllm/vllm-openai:kimi-k3"].platforms
    sglang = IMAGES["docker.io/lmsysorg/sglang:kimi-k3"]
    assert sglang.platforms == {CpuArch.AMD64, CpuArch.ARM64}
    assert "gpu-recipes" in sglang.sources["arm64"] and "a4x-highgpu-4g" in sglang.sources["arm64"]
