"""The node profiles themselves (no cluster needed): exact nodes, labels, taints, resources and slices per stack."""

import pytest

from tests import support

from .profiles import profile

GKE_GB300_NODE_LABELS = {
    "cloud.google.com/gke-os-distribution": "cos", "cloud.google.com/gke-boot-disk": "hyperdisk-balanced",
    "cloud.google.com/gke-nodepool": "gpu", "gke.networks.io/accelerator-network-profile": "auto",
    "kubernetes.io/arch": "arm64", "kubernetes.io/os": "linux", "kubernetes.io/hostname": "gpu-0",
    "node.kubernetes.io/instance-type": "a4x-maxgpu-4g-metal", "topology.kubernetes.io/zone": "us-central1-b",
    "topology.kubernetes.io/region": "us-central1", "type": "kwok",
    "cloud.google.com/gke-accelerator": "nvidia-gb300", "cloud.google.com/gke-gpu": "true",
    "cloud.google.com/machine-family": "a4x",
    "cloud.google.com/gce-topology-block": "k3-a4xmax-block-0001",
    "cloud.google.com/gce-topology-subblock": "k3-a4xmax-block-0001-subblock-0001",
    "cloud.google.com/gce-topology-host": "k3-a4xmax-block-0001-subblock-0001-gpu-0",
    "cloud.google.com/gke-dpv2-unified-cni": "cni-migration", "cloud.google.com/gke-networking-dra-driver": "true",
    "k3infra.dev/pool": "gpu",
}


def test_gke_a4x_max_gpu_node() -> None:
    p = profile(support.plan("gcp-a4xmax"))
    node = next(n for n in p.nodes if n["metadata"]["name"] == "gpu-0")
    assert node["metadata"]["labels"] == GKE_GB300_NODE_LABELS
    assert node["metadata"]["annotations"] == {"kwok.x-k8s.io/node": "fake"}
    assert node["spec"]["taints"] == [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"},
                                      {"key": "kubernetes.io/arch", "value": "arm64", "effect": "NoSchedule"}]
    # 144 vCPU, 894 GiB (960 GB) under GKE's reservation tiers; 4 x 3,000 GiB Titanium SSD; 4,096 huge pages.
    assert node["status"]["capacity"] == {"cpu": "144", "memory": "865105Mi", "ephemeral-storage": "12014Gi",
                                          "pods": "110", "hugepages-2Mi": "8192Mi", "hugepages-1Gi": "0",
                                          "nvidia.com/gpu": "4"}
    assert node["status"]["allocatable"] == {"cpu": "143570m", "memory": "831582Mi", "ephemeral-storage": "10812Gi",
                                             "pods": "110", "hugepages-2Mi": "8192Mi", "hugepages-1Gi": "0",
                                             "nvidia.com/gpu": "4"}
    assert node["status"]["nodeInfo"]["architecture"] == "arm64"


def test_gke_a4x_max_slices_and_classes() -> None:
    p = profile(support.plan("gcp-a4xmax"))
    assert [(s["spec"]["nodeName"], s["spec"]["driver"], [d["name"] for d in s["spec"]["devices"]])
            for s in p.slices] == [
        (n, d, devs) for n in ("gpu-0", "gpu-1") for d, devs in (
            ("mrdma.google.com", [f"nic-{i}" for i in range(8)]),
            ("compute-domain.nvidia.com", ["channel-0", "daemon-0"]))]
    assert [c["metadata"]["name"] for c in p.device_classes] == [
        "mrdma.google.com", "compute-domain-default-channel.nvidia.com", "compute-domain-daemon.nvidia.com"]


def test_aks_gb300_dranet_devices() -> None:
    p = profile(support.plan("azure-gb300"))
    dranet = [s for s in p.slices if s["spec"]["driver"] == "dra.net"]
    assert [s["spec"]["nodeName"] for s in dranet] == ["gb300pool-0", "gb300pool-1"]
    device = dranet[0]["spec"]["devices"][0]
    assert device["name"] == "pci-0101-00-00-0"
    assert sorted(device["attributes"]) == [
        "azure.dra.net/interconnectGroupId", "azure.dra.net/interconnectSubgroupId", "azure.dra.net/placementGroupId",
        "azure.dra.net/vmSize", "dra.net/numaNode", "dra.net/pciAddress", "dra.net/pciDevice", "dra.net/pciSubsystem",
        "dra.net/pciVendor", "dra.net/rdma", "dra.net/rdmaDevice"]
    assert [len(s["spec"]["devices"]) for s in dranet] == [4, 4]
    # one rack: every node of the pool in one NVLink clique and one InfiniBand subgroup
    labels = [n["metadata"]["labels"] for n in p.nodes if n["metadata"]["name"] in p.gpu_nodes]
    assert len({lab["nvidia.com/gpu.clique"] for lab in labels}) == 1
    assert len({s["spec"]["devices"][0]["attributes"]["azure.dra.net/interconnectSubgroupId"]["string"]
                for s in dranet}) == 1


@pytest.mark.parametrize("stack, system, gpu, gpus, efa", [
    ("alicloud-ack", ["system-0", "system-1"], ["k3-gpu-0", "k3-gpu-1", "k3-gpu-2"], "8", None),
    ("aws-eks", ["k3-sync-nodes-pool-0", "k3-sync-nodes-pool-1", "k3-system-0", "k3-system-1"], ["k3-gpu-nodes-0"],
     "8", None),
    ("aws-hyperpod", ["k3-sync-nodes-pool-0", "k3-sync-nodes-pool-1", "k3-system-0", "k3-system-1"], ["gpu-0"], "8",
     "16"),
    ("azure-gb300", ["sync-0", "sync-1", "system-0", "system-1"], ["gb300pool-0", "gb300pool-1"], "4", None),
    ("gcp-a4-sglang", ["sync-0", "sync-1", "system-0", "system-1"], ["gpu-0", "gpu-1"], "8", None),
    ("gcp-a4x-sglang", ["sync-0", "sync-1", "system-0", "system-1"], ["gpu-0", "gpu-1", "gpu-2", "gpu-3"], "4", None),
    ("gcp-a4xmax", ["sync-0", "sync-1", "system-0", "system-1"], ["gpu-0", "gpu-1"], "4", None),
])
def test_every_stack_profile(stack: str, system: list[str], gpu: list[str], gpus: str, efa: str | None) -> None:
    """The CPU nodes include the sync pool's, at its maximum, where the stack has one (GKE, AKS, EKS, HyperPod): the cluster
    autoscaler that would add them for the sync Job's pods does not run here."""
    p = profile(support.plan(stack))
    assert (p.system_nodes, p.gpu_nodes) == (system, gpu)
    for node in p.nodes:
        alloc = node["status"]["allocatable"]
        on_gpu = node["metadata"]["name"] in gpu
        assert alloc.get("nvidia.com/gpu") == (gpus if on_gpu else None)
        assert alloc.get("vpc.amazonaws.com/efa") == (efa if on_gpu else None)
