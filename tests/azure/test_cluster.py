"""AksCluster: exact inventory, a user-assigned identity by construction, OIDC + Workload Identity, Blob CSI,
the system pool, and a Kubernetes provider from the user kubeconfig (secret)."""

import typing

import pulumi
import pytest
import yaml

from k3infra import offline
from k3infra.azure import AksCluster, AksClusterArgs
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
        ("azure-native:containerservice:MaintenanceConfiguration", "k3-maintenance-cluster", "k3infra:index:AksCluster"),
        ("azure-native:containerservice:MaintenanceConfiguration", "k3-maintenance-default", "k3infra:index:AksCluster"),
        ("azure-native:containerservice:MaintenanceConfiguration", "k3-maintenance-node-os", "k3infra:index:AksCluster"),
        ("azure-native:containerservice:ManagedCluster", "k3-aks", "k3infra:index:AksCluster"),
        ("azure-native:managedidentity:UserAssignedIdentity", "k3-identity", "k3infra:index:AksCluster"),
        ("azure-native:resources:ResourceGroup", "k3-rg", "k3infra:index:AksCluster"),
        ("pulumi:providers:kubernetes", "k3-k8s", "k3infra:index:AksCluster"),
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
    assert call.args == {"resourceGroupName": "rg-k3", "resourceName": "k3-test"}


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
        "scratch_storage_class": "managed-csi-premium",
    }
