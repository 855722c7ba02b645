"""AksGpuNodePool: exact inventories for an existing and a created reservation group, the group wiring, the
cluster identity's access, the preview check of an existing group's region/zone, and what it hands to serving."""

import typing
from typing import Any, Iterator

import pulumi
import pytest

from k3infra import offline, offline_state
from k3infra.azure import AksGpuNodePool, AksGpuNodePoolArgs
from k3infra.azure.capacity import CapacityGroupError
from k3infra.azure.gpu_pool import NVL72_PLACEMENT_ADVICE
from tests.support import inventory, record

SUB = "00000000-0000-0000-0000-000000000000"
GROUP = f"/subscriptions/{SUB}/resourceGroups/rg-cap/providers/Microsoft.Compute/capacityReservationGroups/crg-k3"
UAMI = f"/subscriptions/{SUB}/resourceGroups/rg-k3/providers/Microsoft.ManagedIdentity/userAssignedIdentities/cp"
PRINCIPAL = "22222222-2222-2222-2222-222222222222"
CONTRIBUTOR = f"/subscriptions/{SUB}/providers/Microsoft.Authorization/roleDefinitions/b24988ac-6180-42a0-ab88-20f7382dd24c"
TOKEN = "azure-native:compute:getCapacityReservationGroup"
POOL = "k3infra:index:AksGpuNodePool"

BASE: dict[str, Any] = {
    "resource_group_name": "rg-k3", "cluster_name": "k3-test", "location": "eastus2",
    "cluster_identity": {"resource_id": UAMI, "principal_id": PRINCIPAL},
    "vm_size": "Standard_ND128isr_GB300_v6", "node_count": 2, "zone": "1", "gpus_per_node": 4,
    "agent_pool_name": "gb300pool",
}
CONFIG = {"azure-native:location": "eastus2", "k3infra:zone": "1"}
CHART = "kubernetes:helm.sh/v4:Chart"
NODE_SOFTWARE = [
    # GPUs: the NVIDIA device plugin (with feature discovery); multi-node NVLink: the NVIDIA DRA driver and its
    # namespace and quota; InfiniBand: DRANET and the DeviceClass of its RDMA devices
    ("kubernetes:core/v1:Namespace", "gpu-nvidia-dra-namespace", POOL),
    ("kubernetes:core/v1:ResourceQuota", "gpu-nvidia-dra-critical-pods", POOL),
    (CHART, "gpu-dranet", POOL),
    (CHART, "gpu-nvidia-device-plugin", POOL),
    (CHART, "gpu-nvidia-dra", POOL),
    ("kubernetes:resource.k8s.io/v1:DeviceClass", "gpu-rdma-class", POOL),
]


def run(**extra: Any) -> tuple[offline.Recording, list[AksGpuNodePool]]:
    made: list[AksGpuNodePool] = []

    def program() -> None:
        made.append(AksGpuNodePool("gpu", typing.cast(AksGpuNodePoolArgs, {**BASE, **extra})))
    return record(program, config=CONFIG), made


@pytest.fixture(scope="module")
def existing() -> tuple[offline.Recording, AksGpuNodePool]:
    rec, (pool,) = run(capacity_reservation_group_id=GROUP)
    return rec, pool


@pytest.fixture(scope="module")
def created() -> offline.Recording:
    return run(create_capacity_reservation=True)[0]


def test_inventory_with_an_existing_group(existing: tuple[offline.Recording, AksGpuNodePool]) -> None:
    rec, _ = existing
    assert inventory(rec) == [
        (POOL, "gpu", None),
        ("azure-native:authorization:RoleAssignment", "gpu-crg-access", POOL),
        ("azure-native:containerservice:AgentPool", "gpu-pool", POOL),
        *NODE_SOFTWARE,
        ("time:index/sleep:Sleep", "gpu-crg-access-propagation", POOL),
    ]


def test_pool_properties(existing: tuple[offline.Recording, AksGpuNodePool]) -> None:
    rec, _ = existing
    i = rec.one("azure-native:containerservice:AgentPool").inputs
    assert i == {
        "resourceGroupName": "rg-k3",
        "resourceName": "k3-test",
        "agentPoolName": "gb300pool",
        "mode": "User",
        "vmSize": "Standard_ND128isr_GB300_v6",
        "count": 2,
        "enableAutoScaling": False,
        "availabilityZones": ["1"],
        "capacityReservationGroupID": GROUP,
        "nodeTaints": ["nvidia.com/gpu=present:NoSchedule"],
        "nodeLabels": {"nvidia.com/gpu.present": "true"},
        "gpuProfile": {"driver": "Install"},
        "osType": "Linux",
        "osSKU": "Ubuntu",
        "type": "VirtualMachineScaleSets",
        "upgradeSettings": {"maxSurge": "0", "maxUnavailable": "1"},
        "tags": {},
    }


def test_existing_group_grants_the_cluster_identity_contributor_on_its_resource_group(
        existing: tuple[offline.Recording, AksGpuNodePool]) -> None:
    rec, _ = existing
    grant = rec.one("azure-native:authorization:RoleAssignment", "gpu-crg-access")
    assert grant.inputs["principalId"] == PRINCIPAL
    assert grant.inputs["principalType"] == "ServicePrincipal"
    assert grant.inputs["roleDefinitionId"] == CONTRIBUTOR
    assert grant.inputs["scope"] == f"/subscriptions/{SUB}/resourceGroups/rg-cap"
    assert grant.urn in rec.one("azure-native:containerservice:AgentPool").dependencies


def test_existing_group_is_read_at_preview(existing: tuple[offline.Recording, AksGpuNodePool]) -> None:
    rec, _ = existing
    assert [(c.token, c.args) for c in rec.invocations if c.token == TOKEN] == [
        (TOKEN, {"resourceGroupName": "rg-cap", "capacityReservationGroupName": "crg-k3"})]


def test_inventory_with_a_created_group(created: offline.Recording) -> None:
    assert inventory(created) == [
        (POOL, "gpu", None),
        ("azure-native:authorization:RoleAssignment", "gpu-crg-access", POOL),
        ("azure-native:compute:CapacityReservation", "gpu-reservation", POOL),
        ("azure-native:compute:CapacityReservationGroup", "gpu-crg", POOL),
        ("azure-native:containerservice:AgentPool", "gpu-pool", POOL),
        ("azure-native:resources:ResourceGroup", "gpu-capacity-rg", POOL),
        *NODE_SOFTWARE,
        ("time:index/sleep:Sleep", "gpu-crg-access-propagation", POOL),
    ]
    assert not [c for c in created.invocations if c.token == TOKEN]


def test_created_group_wiring(created: offline.Recording) -> None:
    rg = created.one("azure-native:resources:ResourceGroup", "gpu-capacity-rg")
    group = created.one("azure-native:compute:CapacityReservationGroup")
    reservation = created.one("azure-native:compute:CapacityReservation")
    pool = created.one("azure-native:containerservice:AgentPool")
    grant = created.one("azure-native:authorization:RoleAssignment")
    assert rg.inputs == {"resourceGroupName": "gpu-capacity", "location": "eastus2", "tags": {}}
    assert group.inputs == {"resourceGroupName": "gpu-capacity", "location": "eastus2", "zones": ["1"], "tags": {}}
    assert reservation.inputs == {
        "resourceGroupName": "gpu-capacity", "capacityReservationGroupName": "gpu-crg", "location": "eastus2",
        "sku": {"name": "Standard_ND128isr_GB300_v6", "capacity": 2}, "zones": ["1"], "tags": {},
    }
    assert pool.inputs["capacityReservationGroupID"] == (
        f"/subscriptions/{SUB}/resourceGroups/gpu-capacity/providers/Microsoft.Compute/capacityReservationGroups/gpu-crg")
    # The pool waits for the reservation (an empty group is associated with only a warning) and the grant.
    assert reservation.urn in pool.dependencies and grant.urn in pool.dependencies
    assert grant.inputs["scope"] == f"/subscriptions/{SUB}/resourceGroups/gpu-capacity"
    assert grant.inputs["roleDefinitionId"] == CONTRIBUTOR
    # They bill from creation, and destroy deletes them: nothing is retained or protected.
    assert not any(r.retain_on_delete or r.protect for r in created.resources)


def test_capacity_resource_group_name() -> None:
    rec, _ = run(create_capacity_reservation=True, capacity_resource_group_name="rg-k3-capacity")
    assert rec.one("azure-native:compute:CapacityReservationGroup").inputs["resourceGroupName"] == "rg-k3-capacity"


def test_without_a_group_there_is_no_grant() -> None:
    rec, _ = run()
    assert inventory(rec) == [(POOL, "gpu", None), ("azure-native:containerservice:AgentPool", "gpu-pool", POOL),
                              *NODE_SOFTWARE]
    assert "capacityReservationGroupID" not in rec.one("azure-native:containerservice:AgentPool").inputs


def test_gpu_driver_choice() -> None:
    from k3infra.azure import GpuDriver

    rec, _ = run(gpu_driver=GpuDriver.NONE)
    assert rec.one("azure-native:containerservice:AgentPool").inputs["gpuProfile"] == {"driver": "None"}


def test_what_serving_gets(existing: tuple[offline.Recording, AksGpuNodePool]) -> None:
    _, pool = existing
    assert pool.gpu_pool == {
        "node_selector": {"agentpool": "gb300pool"},
        "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
        "gpus_per_node": 4,
        "node_count": 2,
        "gpu_resource": "nvidia.com/gpu",
        "shm_size": "64Gi",
        "group_topology_label": "nvidia.com/gpu.clique",
        "placement_advice": NVL72_PLACEMENT_ADVICE,
        "compute_domains": True,
        "device_claims": [{"name": "rdma", "device_class": "dranet-rdma", "count": 4}],
        "capabilities": ["IPC_LOCK"],
    }
    assert "interconnect group" in NVL72_PLACEMENT_ADVICE and "azure.interconnectSubgroupId" in NVL72_PLACEMENT_ADVICE


SUBGROUP = "0F0BA375-AAF1-4AC8-A579-A3B180D47DE5"


def test_an_interconnect_subgroup_pins_every_rdma_nic_to_one_infiniband_fabric() -> None:
    """dranet examples/azure_aks_examples: ``ib-same-fabric`` selects the NICs by an azure.dra.net attribute; the
    README's CEL for one InterconnectBlock reads ``device.attributes["azure.dra.net"]["interconnectSubgroupId"]``."""
    _, (pool,) = run(capacity_reservation_group_id=GROUP, interconnect_subgroup_id=SUBGROUP)
    (claim,) = pool.gpu_pool["device_claims"]
    assert claim == {"name": "rdma", "device_class": "dranet-rdma", "count": 4, "selectors": [
        'device.attributes["azure.dra.net"]["interconnectSubgroupId"] == "0f0ba375-aaf1-4ac8-a579-a3b180d47de5"']}


@pytest.mark.parametrize("given,match", [
    (dict(interconnect_subgroup_id="block-1"), "is not a subgroup id"),
    (dict(interconnect_subgroup_id=SUBGROUP, rdma_nics=0), "claims none"),
])
def test_a_subgroup_is_a_guid_on_a_pool_that_claims_rdma_nics(given: dict[str, Any], match: str) -> None:
    with pytest.raises(pulumi.InputPropertyError, match=match):
        run(capacity_reservation_group_id=GROUP, **given)


def test_nvidia_com_gpu_is_advertised_by_the_device_plugin_chart(existing: tuple[offline.Recording, AksGpuNodePool]) -> None:
    """AKS's driver-only GPU profile advertises no nvidia.com/gpu (aks-managed-gpu-nodes.md; AgentBaker stops the
    baked plugin): the pool's ``gpu-nvidia-device-plugin`` chart does, on nodes its label selects."""
    rec, pool = existing
    plugin = rec.one(CHART, "gpu-nvidia-device-plugin")
    assert (plugin.inputs["chart"], plugin.inputs["version"], plugin.inputs["repositoryOpts"]) == (
        "nvidia-device-plugin", "0.17.4", {"repo": "https://nvidia.github.io/k8s-device-plugin"})
    assert plugin.inputs["namespace"] == "kube-system"
    values = plugin.inputs["values"]
    assert values["tolerations"] == [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
    # feature discovery labels nvidia.com/gpu.clique, the NVLink partition a replica's pods share
    assert values["gfd"] == {"enabled": True} and values["nfd"] == {"enabled": True}
    # the chart's default affinity selects nvidia.com/gpu.present=true: the pool's nodes carry it
    agent = rec.one("azure-native:containerservice:AgentPool").inputs
    assert agent["nodeLabels"]["nvidia.com/gpu.present"] == "true"
    assert agent["gpuProfile"] == {"driver": "Install"}
    assert pool.gpu_pool["gpu_resource"] == "nvidia.com/gpu"


def test_the_device_plugin_stays_off_a_node_running_aks_managed_gpu_stack(
        existing: tuple[offline.Recording, AksGpuNodePool]) -> None:
    """AKS's default GPU profile is the driver only (aks-managed-gpu-nodes.md: "The default is `Unmanaged`"), but a
    node bootstrapped with the managed stack (AgentBaker configureManagedGPUExperience) runs AKS's own device plugin
    and DCGM and is labelled kubernetes.azure.com/dcgm-exporter=enabled: the chart's pods never join it there."""
    rec, _ = existing
    affinity = rec.one(CHART, "gpu-nvidia-device-plugin").inputs["values"]["affinity"]
    (term,) = affinity["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert term["matchExpressions"] == [
        {"key": "nvidia.com/gpu.present", "operator": "In", "values": ["true"]},
        {"key": "kubernetes.azure.com/dcgm-exporter", "operator": "DoesNotExist"}]
    # the label the chart's default affinity selects is the one the pool sets
    assert rec.one("azure-native:containerservice:AgentPool").inputs["nodeLabels"]["nvidia.com/gpu.present"] == "true"


@pytest.mark.parametrize("tag", ["EnableManagedGPUExperience", "enablemanagedgpuexperience", "x-EnableManagedGPUExperience"])
def test_the_tag_that_turns_aks_managed_gpu_stack_on_is_refused(tag: str) -> None:
    """AgentBaker cse_helpers.sh get_imds_vm_tag_value matches the tag's name case-insensitively as a pattern."""
    with pytest.raises(pulumi.InputPropertyError) as e:
        run(tags={"team": "ml", tag: "true"})
    assert e.value.property_path == "tags" and "managed GPU stack" in e.value.reason
    run(tags={"team": "ml"})


def test_dra_driver_and_dranet_values_on_aks(existing: tuple[offline.Recording, AksGpuNodePool]) -> None:
    rec, _ = existing
    dra = rec.one(CHART, "gpu-nvidia-dra").inputs["values"]
    assert dra["nvidiaDriverRoot"] == "/"  # the GB image installs the driver on the host
    assert dra["resources"] == {"gpus": {"enabled": False}, "computeDomains": {"enabled": True}}
    terms = dra["kubeletPlugin"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert terms == {"nodeSelectorTerms": [{"matchExpressions": [
        {"key": "agentpool", "operator": "In", "values": ["gb300pool"]}]}]}
    dranet = rec.one(CHART, "gpu-dranet").inputs
    assert (dranet["chart"], dranet["version"], dranet["namespace"]) == (
        "oci://registry.k8s.io/networking/charts/dranet", "1.4.0", "kube-system")
    # ND GB300 v6 NICs are InfiniBand-only VFs: publish rdmaDevice, inject uverbs, move no IPoIB netdev
    assert dranet["values"] == {"nodeSelector": {"agentpool": "gb300pool"}, "args": {"moveIBInterfaces": False}}
    device_class = rec.one("kubernetes:resource.k8s.io/v1:DeviceClass").inputs
    assert device_class["metadata"]["name"] == "dranet-rdma"
    assert device_class["spec"]["selectors"] == [
        {"cel": {"expression": 'device.driver == "dra.net" && device.attributes["dra.net"].rdma == true'}}]


def test_gpu_operator_brings_its_own_plugin() -> None:
    from k3infra.azure import GpuDriver

    rec, (pool,) = run(gpu_driver=GpuDriver.NONE)
    assert [r.name for r in rec.by_type(CHART)] == ["gpu-dranet", "gpu-nvidia-dra"]
    assert rec.one(CHART, "gpu-nvidia-dra").inputs["values"]["nvidiaDriverRoot"] == "/run/nvidia/driver"
    assert "nodeLabels" not in rec.one("azure-native:containerservice:AgentPool").inputs


def test_pipeline_layout_installs_no_dra_driver() -> None:
    rec, (pool,) = run(multi_node_nvlink=False)
    assert [r.name for r in rec.by_type(CHART)] == ["gpu-dranet", "gpu-nvidia-device-plugin"]
    assert "compute_domains" not in pool.gpu_pool
    assert pool.gpu_pool["device_claims"] == [{"name": "rdma", "device_class": "dranet-rdma", "count": 4}]


def test_no_rdma_nics_no_dranet() -> None:
    rec, (pool,) = run(rdma_nics=0)
    assert "gpu-dranet" not in [r.name for r in rec.by_type(CHART)]
    assert not rec.by_type("kubernetes:resource.k8s.io/v1:DeviceClass")
    assert "device_claims" not in pool.gpu_pool and "capabilities" not in pool.gpu_pool


@pytest.fixture
def group_answer() -> Iterator[dict[str, Any]]:
    """Replace the offline answer of the group lookup (restored afterwards)."""
    answer: dict[str, Any] = {"location": "eastus2", "zones": ["1"],
                              "capacityReservations": [{"id": f"{GROUP}/capacityReservations/r"}]}
    original = offline_state._FUNCTIONS[TOKEN]  # noqa: SLF001 - the registry is the seam for this test
    offline_state._FUNCTIONS[TOKEN] = lambda args: {"id": GROUP, "name": "crg-k3", **answer}  # noqa: SLF001
    try:
        yield answer
    finally:
        offline_state._FUNCTIONS[TOKEN] = original  # noqa: SLF001


@pytest.mark.parametrize("answer, message", [
    ({"location": "westus3"}, "the group is in westus3, the cluster and pool in eastus2"),
    ({"location": "East US 2", "zones": ["2"]}, "the group reserves zone(s) 2, the pool is in zone 1"),
    ({"zones": []}, "the group is regional (no zones) and the pool is pinned to zone 1"),
    ({"capacityReservations": []}, "the group holds no capacity reservation"),
])
def test_a_group_elsewhere_stops_the_preview(group_answer: dict[str, Any], answer: dict[str, Any],
                                             message: str) -> None:
    group_answer.update(answer)
    with pytest.raises(CapacityGroupError) as e:
        run(capacity_reservation_group_id=GROUP)
    assert message in str(e.value) and GROUP in str(e.value)


def test_a_group_in_the_same_region_written_differently_passes(group_answer: dict[str, Any]) -> None:
    group_answer.update({"location": "East US 2"})
    rec, _ = run(capacity_reservation_group_id=GROUP)
    assert rec.one("azure-native:containerservice:AgentPool").inputs["capacityReservationGroupID"] == GROUP


def test_verification_can_be_turned_off_for_a_shared_group(group_answer: dict[str, Any]) -> None:
    group_answer.update({"location": "westus3"})
    rec, _ = run(capacity_reservation_group_id=GROUP, verify_capacity_reservation_group=False)
    assert not [c for c in rec.invocations if c.token == TOKEN]


@pytest.mark.parametrize("extra, path, reason", [
    ({"cluster_identity": None}, "cluster_identity", "system-assigned"),
    ({"cluster_identity": {"resource_id": UAMI}}, "cluster_identity", "principal_id"),
    ({"cluster_identity": {"principal_id": PRINCIPAL,
                           "resource_id": f"/subscriptions/{SUB}/resourceGroups/rg-k3/providers/"
                                          "Microsoft.ContainerService/managedClusters/k3-test"}},
     "cluster_identity.resource_id", "system-assigned identity cannot use"),
    ({"capacity_reservation_group_id": GROUP, "create_capacity_reservation": True},
     "capacity_reservation_group_id", "not both"),
    ({"capacity_reservation_group_id": "crg-k3"}, "capacity_reservation_group_id", "not a Capacity Reservation Group id"),
    ({"agent_pool_name": "GB300-pool"}, "agent_pool_name", "1-12"),
    ({"zone": "eastus2-1"}, "zone", "1, 2 or 3"),
    ({"node_count": 0}, "node_count", "at least 1"),
    ({"identity_type": "SystemAssigned"}, "identity_type", "has no argument"),
])
def test_bad_arguments_fail_early(extra: dict[str, Any], path: str, reason: str) -> None:
    with pytest.raises(pulumi.InputPropertyError) as e:
        run(**extra)
    assert e.value.property_path == path and reason in e.value.reason


def test_nothing_relies_on_the_gb_images_unconfirmed_driver(existing: tuple[offline.Recording, AksGpuNodePool]) -> None:
    """AgentBaker's gb-mai-bom.json (driver 580.159.04) was first committed on 2026-05-28, after the frozen GB image
    202602.19.0 was built: the image's driver is UNCONFIRMED (issue 23 item 17)."""
    import re

    from tests.support import ROOT

    _, pool = existing
    assert "driver_version" not in pool.gpu_pool  # so the plan states no driver for an AKS pool
    doc = (ROOT / "docs" / "azure.md").read_text()
    paragraphs = re.split(r"\n\s*\n|\n(?=\d+\. )", doc)
    for version in ("580.159.04", "0.17.3", "13.0.2"):
        stating = [p for p in paragraphs if version in p]
        assert stating and all("UNCONFIRMED" in p for p in stating), version
    from k3infra.azure import gpu_pool
    from k3infra.serving import gpu_addons

    for module in (gpu_pool, gpu_addons):
        source = (ROOT / module.__file__).read_text() if module.__file__ else ""
        for line_no, line in enumerate(source.splitlines()):
            if "gb-mai-bom.json" in line:
                window = "\n".join(source.splitlines()[max(0, line_no - 3):line_no + 3])
                assert "UNCONFIRMED" in window, (module.__name__, line)
