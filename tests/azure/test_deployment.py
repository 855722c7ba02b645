"""The azure-gb300 stack as a whole: inventory, outputs, billing notes, preview-time checks, and its golden plan."""

import json
import os
from pathlib import Path
from typing import Any

import pytest

from k3infra import offline, offline_state, planning
from k3infra.azure.capacity import CapacityGroupError
from k3infra.azure.deployment import agent_pool_name
from tests.support import ROOT, inventory, plan

GOLDEN = ROOT / "tests" / "golden" / "azure-gb300.json"
GROUP = ("/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg-k3-capacity/providers/"
         "Microsoft.Compute/capacityReservationGroups/crg-k3-gb300")
CLUSTER, POOL, BUCKET = "k3infra:index:AksCluster", "k3infra:index:AksGpuNodePool", "k3infra:index:BlobWeightBucket"


def _without_group(*sets: str) -> planning.Plan:
    sf = planning.load("azure-gb300", sets, root=ROOT)
    capacity = {k: v for k, v in sf.config["k3infra:capacity"].items() if k != "groupId"}
    sf = planning.StackFile(path=sf.path, stack=sf.stack, project=sf.project,
                            config={**sf.config, "k3infra:capacity": capacity}, secret_keys=sf.secret_keys,
                            notes=sf.notes)
    return planning.Plan(stack_file=sf, config=planning.validate(sf), recording=planning.record(sf))


def test_inventory() -> None:
    rec = plan("azure-gb300").recording
    assert inventory(rec) == [
        (CLUSTER, "k3-azure-gb300", None),
        ("azure-native:containerservice:ManagedCluster", "k3-azure-gb300-aks", CLUSTER),
        ("azure-native:managedidentity:UserAssignedIdentity", "k3-azure-gb300-identity", CLUSTER),
        ("azure-native:resources:ResourceGroup", "k3-azure-gb300-rg", CLUSTER),
        ("pulumi:providers:kubernetes", "k3-azure-gb300-k8s", CLUSTER),
        (POOL, "k3-azure-gb300-gpu", None),
        ("azure-native:authorization:RoleAssignment", "k3-azure-gb300-gpu-crg-access", POOL),
        ("azure-native:containerservice:AgentPool", "k3-azure-gb300-gpu-pool", POOL),
        (BUCKET, "k3-azure-gb300-weights", None),
        ("azure-native:authorization:RoleAssignment", "k3-azure-gb300-weights-reader-access", BUCKET),
        ("azure-native:authorization:RoleAssignment", "k3-azure-gb300-weights-writer-access", BUCKET),
        ("azure-native:managedidentity:FederatedIdentityCredential", "k3-azure-gb300-weights-reader-federation", BUCKET),
        ("azure-native:managedidentity:FederatedIdentityCredential", "k3-azure-gb300-weights-writer-federation", BUCKET),
        ("azure-native:managedidentity:UserAssignedIdentity", "k3-azure-gb300-weights-reader", BUCKET),
        ("azure-native:managedidentity:UserAssignedIdentity", "k3-azure-gb300-weights-writer", BUCKET),
        ("azure-native:resources:ResourceGroup", "k3-azure-gb300-weights-rg", BUCKET),
        ("azure-native:storage:BlobContainer", "k3-azure-gb300-weights-container", BUCKET),
        ("azure-native:storage:StorageAccount", "k3-azure-gb300-weights-account", BUCKET),
    ]


def test_seed_values() -> None:
    rec = plan("azure-gb300").recording
    pool = rec.one("azure-native:containerservice:AgentPool").inputs
    assert (pool["vmSize"], pool["count"], pool["agentPoolName"], pool["mode"]) == (
        "Standard_ND128isr_GB300_v6", 2, "gb300pool", "User")
    assert pool["nodeTaints"] == ["nvidia.com/gpu=present:NoSchedule"]
    assert pool["availabilityZones"] == ["1"] and pool["capacityReservationGroupID"] == GROUP
    assert pool["gpuProfile"] == {"driver": "Install"}
    cluster = rec.one("azure-native:containerservice:ManagedCluster").inputs
    assert cluster["resourceGroupName"] == "rg-k3-azure-gb300" and cluster["location"] == "eastus2"
    assert cluster["agentPoolProfiles"][0]["vmSize"] == "Standard_D8s_v5"
    assert cluster["identity"]["type"] == "UserAssigned"
    grant = rec.one("azure-native:authorization:RoleAssignment", "k3-azure-gb300-gpu-crg-access").inputs
    assert grant["scope"] == "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg-k3-capacity"
    account = rec.one("azure-native:storage:StorageAccount").inputs
    assert (account["accountName"], account["resourceGroupName"]) == ("myorgk3weights", "rg-k3-azure-gb300-weights")
    assert rec.one("azure-native:storage:BlobContainer").inputs["containerName"] == "kimi-k3-weights"
    subjects = sorted(r.inputs["subject"] for r in rec.by_type("azure-native:managedidentity:FederatedIdentityCredential"))
    assert subjects == ["system:serviceaccount:kimi-k3:k3-server", "system:serviceaccount:kimi-k3:k3-weight-sync"]


def test_the_existing_group_is_looked_up() -> None:
    rec = plan("azure-gb300").recording
    calls = [c.args for c in rec.invocations if c.token == "azure-native:compute:getCapacityReservationGroup"]
    assert calls == [{"resourceGroupName": "rg-k3-capacity", "capacityReservationGroupName": "crg-k3-gb300"}]


def test_outputs() -> None:
    out = plan("azure-gb300").recording.outputs
    assert isinstance(out["kubeconfig"], offline.Secret)
    assert out["bucketUri"] == "az://kimi-k3-weights/models/moonshotai/Kimi-K3"
    assert out["storageAccount"] == "myorgk3weights"
    assert out["reservationGroup"] == GROUP
    assert out["gpuPool"] == "gb300pool"
    assert out["servedModelName"] == "Kimi-K3"
    assert out["quota"] == {"family": "standardNDISRGB300V6Family", "needVcpus": 256, "limitVcpus": 256,
                            "inUseVcpus": None, "source": "config"}
    assert out["startupBudgetSeconds"] == plan("azure-gb300").config.sizing.probe_budget_seconds
    assert out["sizing"]["nodes"] == 2 and out["monthlyCost"]["currency"] == "USD"


def test_billing_after_destroy_names_the_group_and_the_retained_storage() -> None:
    billing = plan("azure-gb300").recording.outputs["billingAfterDestroy"]
    assert len(billing) == 2
    assert GROUP in billing[0] and "until you delete it" in billing[0] and "002 §4.6" in billing[0]
    assert "myorgk3weights" in billing[1] and "rg-k3-azure-gb300-weights" in billing[1]


def test_no_retained_storage_note_when_opted_out() -> None:
    billing = plan("azure-gb300", "weights.retainOnDestroy=false").recording.outputs["billingAfterDestroy"]
    assert len(billing) == 1 and GROUP in billing[0]


def test_created_group_inventory_and_billing() -> None:
    p = _without_group("capacity.create=true")
    pool_children = [(t, n) for t, n, parent in inventory(p.recording) if parent == POOL]
    assert pool_children == [
        ("azure-native:authorization:RoleAssignment", "k3-azure-gb300-gpu-crg-access"),
        ("azure-native:compute:CapacityReservation", "k3-azure-gb300-gpu-reservation"),
        ("azure-native:compute:CapacityReservationGroup", "k3-azure-gb300-gpu-crg"),
        ("azure-native:containerservice:AgentPool", "k3-azure-gb300-gpu-pool"),
        ("azure-native:resources:ResourceGroup", "k3-azure-gb300-gpu-capacity-rg"),
    ]
    rg = p.recording.one("azure-native:resources:ResourceGroup", "k3-azure-gb300-gpu-capacity-rg")
    assert rg.inputs["resourceGroupName"] == "rg-k3-azure-gb300-capacity"
    reservation = p.recording.one("azure-native:compute:CapacityReservation").inputs
    assert reservation["sku"] == {"name": "Standard_ND128isr_GB300_v6", "capacity": 2} and reservation["zones"] == ["1"]
    assert all(GROUP not in b for b in p.recording.outputs["billingAfterDestroy"])
    assert any("bill from creation" in w for w in p.recording.outputs["warnings"])


def test_a_group_in_another_region_stops_the_plan(monkeypatch: pytest.MonkeyPatch) -> None:
    token = "azure-native:compute:getCapacityReservationGroup"
    real = offline_state._FUNCTIONS[token]  # noqa: SLF001 - the registry is the seam for this test
    monkeypatch.setitem(offline_state._FUNCTIONS, token, lambda args: {**real(args), "location": "westus3"})  # noqa: SLF001
    with pytest.raises(CapacityGroupError, match="the group is in westus3, the cluster and pool in eastus2"):
        planning.plan("azure-gb300", root=ROOT)


def test_group_shared_from_another_subscription_is_not_looked_up() -> None:
    rec = plan("azure-gb300", "azure-native:subscriptionId=11111111-1111-1111-1111-111111111111").recording
    assert not [c for c in rec.invocations if c.token == "azure-native:compute:getCapacityReservationGroup"]


def test_without_a_stated_quota_the_offline_plan_warns() -> None:
    sf = planning.load("azure-gb300", (), root=ROOT)
    azure = {k: v for k, v in sf.config["k3infra:azure"].items() if k != "quotaVcpus"}
    sf = planning.StackFile(path=sf.path, stack=sf.stack, project=sf.project,
                            config={**sf.config, "k3infra:azure": azure}, secret_keys=sf.secret_keys, notes=sf.notes)
    out = planning.record(sf).outputs
    assert out["quota"]["source"] == "skipped"
    assert any("standardNDISRGB300V6Family quota not checked (offline plan" in w for w in out["warnings"])


def test_serving_gap_is_stated() -> None:
    assert any("serving is not composed yet" in w for w in plan("azure-gb300").warnings)


@pytest.mark.parametrize("gpu, name", [("GB300", "gb300pool"), ("H100 NVL", "h100nvlpool"), ("300X", "gpu300xpool")])
def test_agent_pool_name(gpu: str, name: str) -> None:
    assert agent_pool_name(gpu) == name[:12]


def test_golden_plan() -> None:
    """`k3infra plan azure-gb300 --format json` equals tests/golden/azure-gb300.json.

    Regenerate after an intended change with ``K3INFRA_UPDATE_GOLDEN=1 pytest tests/azure/test_deployment.py``.
    """
    text = json.dumps(plan("azure-gb300").to_json(), indent=2, ensure_ascii=False) + "\n"
    if os.environ.get("K3INFRA_UPDATE_GOLDEN") == "1":
        GOLDEN.write_text(text, encoding="utf-8")
    assert GOLDEN.is_file(), f"{GOLDEN} is missing: run with K3INFRA_UPDATE_GOLDEN=1 to create it"
    expected: Any = json.loads(GOLDEN.read_text(encoding="utf-8"))
    assert json.loads(text) == expected


def test_golden_matches_the_cli(tmp_path: Path) -> None:
    """The golden file is byte-for-byte what the CLI prints."""
    from typer.testing import CliRunner

    from k3infra.cli import app

    result = CliRunner().invoke(app, ["plan", str(ROOT / "stacks" / "Pulumi.azure-gb300.yaml"), "--format", "json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output) == json.loads(GOLDEN.read_text(encoding="utf-8"))
