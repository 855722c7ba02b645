"""AksCluster: exact inventory, a user-assigned identity by construction, OIDC + Workload Identity, Blob CSI,
the system pool, and a Kubernetes provider from the user kubeconfig (secret)."""

import typing

import pulumi
import pytest
import yaml

from k3infra import offline
from k3infra.azure import AksCluster, AksClusterArgs
from k3infra.offline_state.azure import client_config
from tests.support import inventory, record

ARGS: AksClusterArgs = {"resource_group_name": "rg-k3", "location": "eastus2", "cluster_name": "k3-test"}


def run(**extra: object) -> offline.Recording:
    def program() -> None:
        c = AksCluster("k3", typing.cast(AksClusterArgs, {**ARGS, **extra}))
        pulumi.export("kubeconfig", c.kubeconfig)
        pulumi.export("issuer", c.oidc_issuer_url)
    return record(program)


@pytest.fixture(scope="module")
def rec() -> offline.Recording:
    return run()


def test_inventory(rec: offline.Recording) -> None:
    assert inventory(rec) == [
        ("k3infra:index:AksCluster", "k3", None),
        ("azure-native:authorization:RoleAssignment", "k3-deployer-cluster-admin", "k3infra:index:AksCluster"),
        ("azure-native:containerservice:MaintenanceConfiguration", "k3-maintenance-cluster", "k3infra:index:AksCluster"),
        ("azure-native:containerservice:MaintenanceConfiguration", "k3-maintenance-default", "k3infra:index:AksCluster"),
        ("azure-native:containerservice:MaintenanceConfiguration", "k3-maintenance-node-os", "k3infra:index:AksCluster"),
        ("azure-native:containerservice:ManagedCluster", "k3-aks", "k3infra:index:AksCluster"),
        ("azure-native:managedidentity:UserAssignedIdentity", "k3-identity", "k3infra:index:AksCluster"),
        ("azure-native:resources:ResourceGroup", "k3-rg", "k3infra:index:AksCluster"),
        ("pulumi:providers:kubernetes", "k3-k8s", "k3infra:index:AksCluster"),
        ("time:index/sleep:Sleep", "k3-deployer-cluster-admin-propagation", "k3infra:index:AksCluster"),
    ]


def test_control_plane_identity_is_user_assigned(rec: offline.Recording) -> None:
    uami = rec.one("azure-native:managedidentity:UserAssignedIdentity")
    assert uami.inputs["resourceName"] == "k3-test-control-plane"
    cluster = rec.one("azure-native:containerservice:ManagedCluster")
    assert cluster.inputs["identity"] == {
        "type": "UserAssigned",
        "userAssignedIdentities": ["/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg-k3/providers/"
                                   "Microsoft.ManagedIdentity/userAssignedIdentities/k3-test-control-plane"],
    }
    assert uami.urn in cluster.dependencies


def test_no_argument_can_make_the_identity_system_assigned() -> None:
    """A reservation group association needs a user-assigned identity: there is no identity-type knob."""
    assert not {k for k in AksClusterArgs.__annotations__ if "identity" in k}
    with pytest.raises(pulumi.InputPropertyError, match="AksClusterArgs has no argument 'identity_type'"):
        run(identity_type="SystemAssigned")  # refused, not silently dropped


def test_cluster_features(rec: offline.Recording) -> None:
    i = rec.one("azure-native:containerservice:ManagedCluster").inputs
    assert i["resourceName"] == "k3-test" and i["location"] == "eastus2" and i["dnsPrefix"] == "k3-test"
    assert i["oidcIssuerProfile"] == {"enabled": True}
    assert i["securityProfile"] == {"workloadIdentity": {"enabled": True}}
    assert i["storageProfile"] == {"blobCSIDriver": {"enabled": True}}
    assert i["enableRBAC"] is True
    net = i["networkProfile"]
    assert (net["networkPlugin"], net["networkPluginMode"], net["networkDataplane"], net["networkPolicy"]) == (
        "azure", "overlay", "cilium", "cilium")  # NetworkPolicies are enforced
    assert net["podCidr"] == "10.244.0.0/16" and net["loadBalancerSku"] == "standard"
    assert i["agentPoolProfiles"] == [{
        "name": "system", "mode": "System", "vmSize": "Standard_D8s_v5", "count": 2, "osType": "Linux",
        "osSKU": "Ubuntu", "type": "VirtualMachineScaleSets",
    }]


def test_cluster_is_protected_by_default(rec: offline.Recording) -> None:
    assert rec.one("azure-native:containerservice:ManagedCluster").protect is True
    assert run(deletion_protection=False).one("azure-native:containerservice:ManagedCluster").protect is False


def test_system_pool_size_and_version() -> None:
    i = run(system_vm_size="Standard_D4s_v5", system_node_count=3, kubernetes_version="1.34").one(
        "azure-native:containerservice:ManagedCluster").inputs
    assert i["agentPoolProfiles"][0]["vmSize"] == "Standard_D4s_v5" and i["agentPoolProfiles"][0]["count"] == 3
    assert i["kubernetesVersion"] == "1.34"


def test_kubeconfig_is_secret_and_drives_the_provider(rec: offline.Recording) -> None:
    assert isinstance(rec.outputs["kubeconfig"], offline.Secret)
    provider = rec.one("pulumi:providers:kubernetes", "k3-k8s")
    assert isinstance(provider.inputs["kubeconfig"], offline.Secret)
    kubeconfig = yaml.safe_load(offline.unwrap(rec.outputs["kubeconfig"]))
    assert kubeconfig["current-context"] == "k3-test"
    (call,) = [c for c in rec.invocations if c.token.endswith("listManagedClusterUserCredentials")]
    assert call.args == {"resourceGroupName": "rg-k3", "resourceName": "k3-test", "format": "exec"}


AKS_RBAC_CLUSTER_ADMIN = "b1ff04bb-8a4e-4dc4-8eb5-8693973ce19b"


def test_entra_id_authenticates_every_caller_and_local_accounts_are_off(rec: offline.Recording) -> None:
    """Issue 36 item 11, the secure default: AKS-managed Entra ID with Azure RBAC, local accounts disabled, the
    identity running Pulumi cluster admin, the provider waiting the documented five minutes for that grant, and a
    kubeconfig that logs in with the Azure CLI through kubelogin (never a device code, never a certificate)."""
    cluster = rec.one("azure-native:containerservice:ManagedCluster")
    assert cluster.inputs["aadProfile"] == {"managed": True, "enableAzureRBAC": True}
    assert cluster.inputs["disableLocalAccounts"] is True
    grant = rec.one("azure-native:authorization:RoleAssignment", "k3-deployer-cluster-admin")
    g = offline.plain(grant.inputs)
    assert g["roleDefinitionId"].endswith(f"/roleDefinitions/{AKS_RBAC_CLUSTER_ADMIN}")
    assert g["scope"] == ("/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg-k3/providers/"
                          "Microsoft.ContainerService/managedClusters/k3-test")
    assert g["principalType"] == "User"  # `pulumi up` from a workstation; CI says ServicePrincipal
    assert g["principalId"] == client_config({})["objectId"]
    wait = rec.one("time:index/sleep:Sleep", "k3-deployer-cluster-admin-propagation")
    assert wait.inputs["createDuration"] == "5m" and grant.urn in wait.dependencies
    assert wait.urn in rec.one("pulumi:providers:kubernetes", "k3-k8s").dependencies
    (user,) = yaml.safe_load(offline.unwrap(rec.outputs["kubeconfig"]))["users"]
    assert "client-certificate-data" not in user["user"] and "token" not in user["user"]
    assert user["user"]["exec"]["command"] == "kubelogin"
    assert user["user"]["exec"]["args"] == ["get-token", "--login", "azurecli", "--server-id",
                                            "6dae42f8-4368-4678-94ff-3960e28e3630"]


def test_entra_admin_groups_and_the_local_accounts_opt_out() -> None:
    groups = run(admin_group_object_ids=["0f0ba375-aaf1-4ac8-a579-a3b180d47de5"])
    assert groups.one("azure-native:containerservice:ManagedCluster").inputs["aadProfile"] == {
        "managed": True, "enableAzureRBAC": True, "adminGroupObjectIDs": ["0f0ba375-aaf1-4ac8-a579-a3b180d47de5"]}
    ci = run(deployer_principal_type="ServicePrincipal").one("azure-native:authorization:RoleAssignment")
    assert ci.inputs["principalType"] == "ServicePrincipal"
    local = run(local_accounts=True, api_authorized_cidrs=["81.2.69.0/24"])
    i = local.one("azure-native:containerservice:ManagedCluster").inputs
    assert "aadProfile" not in i and i["disableLocalAccounts"] is False
    assert not local.by_type("azure-native:authorization:RoleAssignment") and not local.by_type("time:index/sleep:Sleep")
    (call,) = [c for c in local.invocations if c.token.endswith("listManagedClusterUserCredentials")]
    assert "format" not in call.args
    with pytest.raises(pulumi.InputPropertyError, match="0.0.0.0/0 with local accounts"):
        run(local_accounts=True, api_authorized_cidrs=["0.0.0.0/0"])
    with pytest.raises(pulumi.InputPropertyError, match="Entra admin groups need the Entra integration"):
        run(local_accounts=True, admin_group_object_ids=["0f0ba375-aaf1-4ac8-a579-a3b180d47de5"])


def test_oidc_issuer_is_exposed(rec: offline.Recording) -> None:
    assert str(rec.outputs["issuer"]).startswith("https://eastus2.oic.prod-aks.azure.com/")


def test_system_pool_needs_a_node() -> None:
    with pytest.raises(pulumi.InputPropertyError, match="at least 1 node"):
        run(system_node_count=0)


def test_load_balancer_settings_make_endpoints_internal_to_the_vnet() -> None:
    made: list[AksCluster] = []
    record(lambda: made.append(AksCluster("k3", ARGS)))
    assert made[0].load_balancer == {
        "internal_annotations": {"service.beta.kubernetes.io/azure-load-balancer-internal": "true"},
        "public_annotations": {},
        "internal_source_ranges": ["10.224.0.0/12"],
        "health_check_ranges": [],  # Azure probes the node's health-check port, not the pods
        "install_gateway": True,  # AKS has no inference gateway of its own: serving installs agentgateway (issue 38)
    }


def test_a_kubeconfig_without_kubelogin_is_no_entra_one() -> None:
    """The rewrite expects AKS's Entra kubeconfig: a certificate one means the cluster has no Entra integration."""
    from k3infra.azure.entra import azurecli_kubeconfig
    from k3infra.offline_state.azure import OFFLINE_KUBECONFIG

    with pytest.raises(ValueError, match="no Entra integration"):
        azurecli_kubeconfig(OFFLINE_KUBECONFIG.format(name="k3", rg="rg"))
