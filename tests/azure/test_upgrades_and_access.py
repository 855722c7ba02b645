"""AKS on its first and every later `pulumi up`: the GPU pool waits for its reservation-group grant to propagate,
nothing upgrades a GPU node outside a maintenance window (or at all, by default), and the API server admits only
the stated ranges or is private."""

import typing
from typing import Any

import pulumi
import pytest

from k3infra import offline, planning
from k3infra.azure import AksCluster, AksClusterArgs, AksGpuNodePool, AksGpuNodePoolArgs
from k3infra.config import ConfigError, parse_config
from tests.azure.test_gpu_pool import BASE, CONFIG, GROUP, PRINCIPAL
from tests.support import ROOT, plan, record

SLEEP = "time:index/sleep:Sleep"
CLUSTER_ARGS: AksClusterArgs = {"resource_group_name": "rg-k3", "location": "eastus2", "cluster_name": "k3-test"}


def pool(**extra: Any) -> offline.Recording:
    return record(lambda: AksGpuNodePool("gpu", typing.cast(AksGpuNodePoolArgs, {**BASE, **extra})), config=CONFIG)


def cluster(**extra: Any) -> offline.Recording:
    return record(lambda: AksCluster("k3", typing.cast(AksClusterArgs, {**CLUSTER_ARGS, **extra})))


def warnings_of(*sets: str) -> list[str]:
    return list(plan("azure-gb300", *sets).recording.outputs["warnings"])


def problems(*sets: str) -> dict[str, str]:
    with pytest.raises(ConfigError) as e:
        planning.validate(planning.load("azure-gb300", sets, root=ROOT))
    return {p.key: p.reason for p in e.value.problems}


# ------------------------------------------------------------------ 3. the reservation-group grant propagates


def test_the_pool_waits_60_minutes_after_the_grant_by_default() -> None:
    rec = pool(capacity_reservation_group_id=GROUP)
    grant = rec.one("azure-native:authorization:RoleAssignment", "gpu-crg-access")
    wait = rec.one(SLEEP, "gpu-crg-access-propagation")
    agent_pool = rec.one("azure-native:containerservice:AgentPool")
    assert wait.inputs == {"createDuration": "60m", "triggers": {
        "principal_id": PRINCIPAL,
        "scope": "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg-cap"}}
    assert grant.urn in wait.dependencies  # the wait starts when the grant exists
    assert wait.urn in agent_pool.dependencies  # and the pool is created only after it


def test_zero_minutes_makes_no_wait_and_the_grant_still_comes_first() -> None:
    rec = pool(capacity_reservation_group_id=GROUP, role_propagation_minutes=0)
    assert not [r for r in rec.resources if r.type == SLEEP and "crg" in r.name]
    grant = rec.one("azure-native:authorization:RoleAssignment", "gpu-crg-access")
    assert grant.urn in rec.one("azure-native:containerservice:AgentPool").dependencies


def test_without_a_group_there_is_no_grant_and_no_wait() -> None:
    rec = pool()
    assert not [r for r in rec.resources if r.type in (SLEEP, "azure-native:authorization:RoleAssignment")]


def test_a_wait_out_of_range_is_refused() -> None:
    with pytest.raises(pulumi.InputPropertyError, match="role_propagation_minutes"):
        pool(capacity_reservation_group_id=GROUP, role_propagation_minutes=-1)


def test_the_plan_says_which_ordering_is_used() -> None:
    waits = [w for w in warnings_of() if "crg-access" in w]
    assert waits == ["the cluster identity's Contributor grant on the reservation group's resource group "
                     "(k3-gpu-crg-access) can take up to 60 minutes to propagate (aks/use-capacity-reservation-groups): "
                     "the GPU pool waits 60 minutes after it (k3-gpu-crg-access-propagation, time:Sleep); only the "
                     "first `pulumi up`, or a new identity or group, waits"]
    ordered = [w for w in warnings_of("azure.rolePropagationMinutes=0") if "crg-access" in w]
    assert len(ordered) == 1 and ordered[0].startswith("azure.rolePropagationMinutes is 0: the GPU pool does not wait")
    assert "`pulumi up --target`" in ordered[0]
    rec = plan("azure-gb300", "azure.rolePropagationMinutes=0").recording
    assert not [r for r in rec.resources if r.type == SLEEP and "crg" in r.name]


# ------------------------------------------------------------------ 4. planned upgrades


def test_channels_default_to_security_patches_in_the_window_and_no_version_upgrade() -> None:
    # None would leave every node unpatched ("you are responsible for your security updates", the API's enum);
    # AKS's own default, NodeImage, would reimage the GPU nodes weekly.
    i = cluster().one("azure-native:containerservice:ManagedCluster").inputs
    assert i["autoUpgradeProfile"] == {"upgradeChannel": "none", "nodeOSUpgradeChannel": "SecurityPatch"}
    stack = plan("azure-gb300").recording
    assert stack.one("azure-native:containerservice:ManagedCluster").inputs["autoUpgradeProfile"] == {
        "upgradeChannel": "none", "nodeOSUpgradeChannel": "SecurityPatch"}


def test_the_default_channel_reaches_the_gpu_pool_and_the_plan_says_what_that_costs() -> None:
    (w,) = [w for w in warnings_of() if "nodeOsUpgradeChannel" in w]
    assert w.startswith("azure.nodeOsUpgradeChannel SecurityPatch: AKS applies tested security updates to every node "
                        "on Sundays 02:00 UTC for 4 h")
    assert "no per-pool channel" in w and "stops the server" in w
    # the GPU pool reimages in place: a capacity reservation has no node to surge onto
    rec = plan("azure-gb300").recording
    gpu = rec.one("azure-native:containerservice:AgentPool", "k3-gpu-pool").inputs
    assert gpu["upgradeSettings"] == {"maxSurge": "0", "maxUnavailable": "1"}


def test_pinned_api_has_no_per_pool_node_os_channel() -> None:
    from pulumi_azure_native import containerservice as aks_sdk

    assert "node_os_upgrade_channel" in aks_sdk.ManagedClusterAutoUpgradeProfileArgs.__init__.__code__.co_varnames
    assert "node_os_upgrade_channel" not in aks_sdk.AgentPoolArgs.__init__.__code__.co_varnames
    assert "node_os_upgrade_channel" not in aks_sdk.AgentPoolUpgradeSettingsArgs.__init__.__code__.co_varnames


def test_channel_none_is_warned_as_no_security_patching() -> None:
    (w,) = [w for w in warnings_of("azure.nodeOsUpgradeChannel=None") if "nodeOsUpgradeChannel" in w]
    assert w.startswith("azure.nodeOsUpgradeChannel None: AKS applies no OS security updates to any node")


def test_every_maintenance_configuration_takes_the_window() -> None:
    rec = cluster()
    configs = {r.inputs["configName"]: r for r in rec.resources
               if r.type == "azure-native:containerservice:MaintenanceConfiguration"}
    assert sorted(configs) == ["aksManagedAutoUpgradeSchedule", "aksManagedNodeOSUpgradeSchedule", "default"]
    aks = rec.one("azure-native:containerservice:ManagedCluster")
    for c in configs.values():
        assert c.inputs["maintenanceWindow"] == {
            "schedule": {"weekly": {"dayOfWeek": "Sunday", "intervalWeeks": 1}},
            "startTime": "02:00", "durationHours": 4, "utcOffset": "+00:00"}
        assert c.inputs["resourceName"] == "k3-test" and aks.urn in c.dependencies


def test_channels_and_window_from_the_stack() -> None:
    rec = plan("azure-gb300", "azure.upgradeChannel=patch", "azure.nodeOsUpgradeChannel=SecurityPatch",
               "azure.maintenanceWindow.day=Saturday", "azure.maintenanceWindow.startTime='22:30'",
               "azure.maintenanceWindow.durationHours=6").recording
    aks = rec.one("azure-native:containerservice:ManagedCluster").inputs
    assert aks["autoUpgradeProfile"] == {"upgradeChannel": "patch", "nodeOSUpgradeChannel": "SecurityPatch"}
    window = rec.one("azure-native:containerservice:MaintenanceConfiguration", "k3-maintenance-node-os").inputs
    assert window["maintenanceWindow"]["schedule"] == {"weekly": {"dayOfWeek": "Saturday", "intervalWeeks": 1}}
    assert (window["maintenanceWindow"]["startTime"], window["maintenanceWindow"]["durationHours"]) == ("22:30", 6)


def test_a_reimaging_node_channel_is_warned_with_what_it_does() -> None:
    found = [w for w in warnings_of("azure.nodeOsUpgradeChannel=NodeImage") if "nodeOsUpgradeChannel" in w]
    assert found == ["azure.nodeOsUpgradeChannel NodeImage: AKS reimages the GPU nodes one at a time on Sundays 02:00 "
                     "UTC for 4 h; nothing holds the drain (one replica has no disruption budget), so each reimage "
                     "stops the server until the node is back and the weights are reloaded"]
    # the claim holds: no stack renders a PodDisruptionBudget
    assert not plan("azure-gb300").recording.by_type("kubernetes:policy/v1:PodDisruptionBudget")
    assert not [w for w in warnings_of() if "upgradeChannel " in w]  # the cluster channel stays none


def test_an_upgrade_channel_cannot_fight_a_pinned_version() -> None:
    found = problems("azure.upgradeChannel=stable", "cluster.kubernetesVersion='1.33'")
    assert list(found) == ["k3infra:cluster.kubernetesVersion"]
    assert found["k3infra:cluster.kubernetesVersion"].startswith("azure.upgradeChannel stable moves the Kubernetes "
                                                                  "version")


@pytest.mark.parametrize("sets, key", [
    (("azure.upgradeChannel=node-image",), "k3infra:azure.upgradeChannel"),  # legacy: forces NodeImage
    (("azure.nodeOsUpgradeChannel=nodeimage",), "k3infra:azure.nodeOsUpgradeChannel"),
    (("azure.maintenanceWindow.durationHours=2",), "k3infra:azure.maintenanceWindow.durationHours"),
    (("azure.maintenanceWindow.day=Sun",), "k3infra:azure.maintenanceWindow.day"),
    (("azure.maintenanceWindow.startTime=2am",), "k3infra:azure.maintenanceWindow.startTime"),
])
def test_bad_channels_and_windows_are_config_errors(sets: tuple[str, ...], key: str) -> None:
    assert list(problems(*sets)) == [key]


def test_the_component_refuses_a_bad_channel_or_window() -> None:
    with pytest.raises(pulumi.InputPropertyError, match="upgrade_channel"):
        cluster(upgrade_channel="node-image")
    with pytest.raises(pulumi.InputPropertyError, match="maintenance_window.duration_hours"):
        cluster(maintenance_window={"day": "Sunday", "start_time": "02:00", "duration_hours": 1})


# ------------------------------------------------------------------ 5. the API server


def test_a_private_cluster_and_how_to_reach_it() -> None:
    with pytest.raises(ConfigError, match="authorized IP ranges apply to a public API server"):
        planning.validate(planning.load("azure-gb300", ("azure.privateCluster=true",
                                                        "azure.authorizedIpRanges=[81.2.69.0/24]"), root=ROOT))
    rec = cluster(private_api_server=True)
    assert rec.one("azure-native:containerservice:ManagedCluster").inputs["apiServerAccessProfile"] == {
        "enablePrivateCluster": True}
    with pytest.raises(pulumi.InputPropertyError, match="api_authorized_cidrs"):
        cluster(private_api_server=True, api_authorized_cidrs=["203.0.113.0/24"])


def test_a_private_cluster_states_how_pulumi_reaches_it() -> None:
    sf = planning.load("azure-gb300", ("azure.privateCluster=true",), root=ROOT)
    raw = {**sf.config, "k3infra:azure": {k: v for k, v in sf.config["k3infra:azure"].items()
                                          if k != "authorizedIpRanges"}}
    cfg = parse_config(raw, stack="azure-gb300")
    from k3infra.azure.deployment import _statements

    assert [s for s in _statements(cfg) if "privateCluster" in s] == [
        "azure.privateCluster is true: the AKS API server has only an address in the cluster's virtual network "
        "(created by AKS in its node resource group), so the Kubernetes objects are created only when Pulumi runs "
        "from a network peered with it or connected by VPN; the first `pulumi up` from elsewhere stops after the "
        "Azure resources"]


def test_a_host_address_is_not_an_authorized_range() -> None:
    assert list(problems("azure.authorizedIpRanges=['203.0.113.7/24']")) == ["k3infra:azure.authorizedIpRanges[0]"]


def _only_problem(*sets: str) -> Any:
    with pytest.raises(ConfigError) as e:
        planning.validate(planning.load("azure-gb300", sets, root=ROOT))
    (problem,) = e.value.problems
    return problem


def test_an_open_range_is_refused_with_local_accounts_and_allowed_behind_entra_id() -> None:
    """Issue 36 item 11: with local accounts a cluster-admin certificate answers whoever reaches the API server, so
    0.0.0.0/0 is refused; behind Entra ID (the default, local accounts off) it is allowed, with the warning."""
    problem = _only_problem("azure.localAccounts=true", "azure.authorizedIpRanges=['81.2.69.0/24', '0.0.0.0/0']")
    assert (problem.key, problem.given) == ("k3infra:azure.authorizedIpRanges[1]", "'0.0.0.0/0'")
    assert problem.reason.startswith("opens the AKS API server to every internet address, and azure.localAccounts "
                                     "true keeps local accounts: a cluster-admin client certificate")
    assert problem.allowed == ("the CIDRs `pulumi up` and kubectl connect from (A.B.C.D/32); or azure.privateCluster: "
                               "true; or azure.localAccounts: false (Entra ID, local accounts disabled, the default) "
                               "to open it on purpose")
    p = plan("azure-gb300", "azure.authorizedIpRanges=['0.0.0.0/0']")
    i = p.recording.one("azure-native:containerservice:ManagedCluster").inputs
    assert i["disableLocalAccounts"] is True and i["aadProfile"] == {"managed": True, "enableAzureRBAC": True}
    assert any(w.startswith("azure.authorizedIpRanges lists 0.0.0.0/0") for w in p.recording.outputs["warnings"])
    local = plan("azure-gb300", "azure.localAccounts=true", "azure.authorizedIpRanges=['81.2.69.0/24']")
    i = local.recording.one("azure-native:containerservice:ManagedCluster").inputs
    assert i["disableLocalAccounts"] is False and "aadProfile" not in i


def test_entra_settings_are_refused_with_local_accounts() -> None:
    group = "0f0ba375-aaf1-4ac8-a579-a3b180d47de5"
    problem = _only_problem("azure.localAccounts=true", f"azure.entraAdminGroups=['{group}']")
    assert (problem.key, problem.allowed) == ("k3infra:azure.entraAdminGroups", "unset, or azure.localAccounts: false")
    problem = _only_problem("azure.localAccounts=true", "azure.deployerPrincipalType=ServicePrincipal")
    assert (problem.key, problem.given) == ("k3infra:azure.deployerPrincipalType", "'ServicePrincipal'")
    rec = plan("azure-gb300", f"azure.entraAdminGroups=['{group}']", "azure.deployerPrincipalType=ServicePrincipal"
               ).recording
    assert rec.one("azure-native:containerservice:ManagedCluster").inputs["aadProfile"]["adminGroupObjectIDs"] == [group]
    assert rec.one("azure-native:authorization:RoleAssignment", "k3-deployer-cluster-admin").inputs[
        "principalType"] == "ServicePrincipal"


# ------------------------------------------------------------------ 5. the weights' storage endpoint


def test_the_blob_account_states_its_public_endpoint_and_the_plan_says_why():
    account = plan("azure-gb300").recording.one("azure-native:storage:StorageAccount").inputs
    assert (account["publicNetworkAccess"], account["allowSharedKeyAccess"], account["allowBlobPublicAccess"]) == (
        "Enabled", False, False)
    (why,) = [w for w in warnings_of() if w.startswith("storage account myorgk3weights")]
    assert "no subnet to give the account a private endpoint or a service endpoint" in why
