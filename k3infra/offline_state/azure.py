"""Computed outputs of Azure resources and functions.

Ids follow Azure's resource id layout (``/subscriptions/SUB/resourceGroups/RG/providers/NAMESPACE/TYPE/NAME``)
so that inputs built from them (role assignment scopes, reservation group ids, identity ids) look as they
would in a real preview. Client and principal ids are UUIDs derived from the resource name.
"""

import base64
import uuid
from typing import Any

import pulumi

from .registry import FAKE_SUBSCRIPTION, function, provider_default, resource

FAKE_TENANT = "11111111-1111-1111-1111-111111111111"
"""Microsoft Entra tenant id in offline plans."""

_NAMESPACE = uuid.UUID("6f1d2f57-3a1e-4c55-9c51-0c8d5b1c8a10")

#: Resource type token to the ARM provider path of its id (the resource's own name is appended).
_ARM_TYPES: dict[str, str] = {
    "azure-native:containerservice:ManagedCluster": "Microsoft.ContainerService/managedClusters",
    "azure-native:managedidentity:UserAssignedIdentity": "Microsoft.ManagedIdentity/userAssignedIdentities",
    "azure-native:storage:StorageAccount": "Microsoft.Storage/storageAccounts",
    "azure-native:compute:CapacityReservationGroup": "Microsoft.Compute/capacityReservationGroups",
}


def _uuid(*parts: str) -> str:
    return str(uuid.uuid5(_NAMESPACE, "/".join(parts)))


def _rg(inputs: dict[str, Any]) -> str:
    return str(inputs.get("resourceGroupName") or "offline-rg")


def _rg_id(rg: str) -> str:
    return f"/subscriptions/{FAKE_SUBSCRIPTION}/resourceGroups/{rg}"


@provider_default("azure-native:")
def azure_resource(name: str, inputs: dict[str, Any]) -> dict[str, Any]:
    """Every Azure resource has a resource id under a resource group."""
    return {"id": f"{_rg_id(_rg(inputs))}/providers/offline/{name}", "name": name}


def _arm_id(typ: str, name: str, inputs: dict[str, Any]) -> str:
    return f"{_rg_id(_rg(inputs))}/providers/{_ARM_TYPES[typ]}/{name}"


@resource("azure-native:resources:ResourceGroup")
def resource_group(name: str, inputs: dict[str, Any]) -> dict[str, Any]:
    """A resource group's id is the subscription plus its name."""
    rg = str(inputs.get("resourceGroupName") or name)
    return {"id": _rg_id(rg), "name": rg}


@resource("azure-native:managedidentity:UserAssignedIdentity")
def user_assigned_identity(name: str, inputs: dict[str, Any]) -> dict[str, Any]:
    """An identity has a client id (what pods present) and a principal id (what role assignments name)."""
    own = str(inputs.get("resourceName") or name)
    return {
        "id": _arm_id("azure-native:managedidentity:UserAssignedIdentity", own, inputs),
        "name": own,
        "clientId": _uuid("client", _rg(inputs), own),
        "principalId": _uuid("principal", _rg(inputs), own),
        "tenantId": FAKE_TENANT,
    }


@resource("azure-native:containerservice:ManagedCluster")
def managed_cluster(name: str, inputs: dict[str, Any]) -> dict[str, Any]:
    """A cluster has an API server FQDN and, with the OIDC issuer on, an issuer URL."""
    own = str(inputs.get("resourceName") or name)
    out: dict[str, Any] = {
        "id": _arm_id("azure-native:containerservice:ManagedCluster", own, inputs),
        "name": own,
        "fqdn": f"{inputs.get('dnsPrefix') or own}-offline.hcp.{inputs.get('location') or 'offline'}.azmk8s.io",
        "nodeResourceGroup": f"MC_{_rg(inputs)}_{own}_{inputs.get('location') or 'offline'}",
    }
    identity = inputs.get("identity")
    if isinstance(identity, dict):
        # The input lists identity ids; the response maps each id to its client and principal ids.
        ids = identity.get("userAssignedIdentities") or []
        out["identity"] = {
            "type": identity.get("type"),
            "tenantId": FAKE_TENANT,
            "userAssignedIdentities": {
                str(i): {"clientId": _uuid("client", str(i)), "principalId": _uuid("principal", str(i))}
                for i in (ids if isinstance(ids, list) else [])
            },
        }
    # AKS creates the kubelet identity in the node resource group unless one is given.
    kubelet = f"{own}-agentpool"
    out["identityProfile"] = {"kubeletidentity": {
        "resourceId": f"{_rg_id(out['nodeResourceGroup'])}/providers/Microsoft.ManagedIdentity/userAssignedIdentities/"
                      f"{kubelet}",
        "clientId": _uuid("client", out["nodeResourceGroup"], kubelet),
        "objectId": _uuid("principal", out["nodeResourceGroup"], kubelet),
    }}
    oidc = inputs.get("oidcIssuerProfile") or {}
    if oidc.get("enabled"):
        out["oidcIssuerProfile"] = {
            "enabled": True,
            "issuerURL": f"https://{inputs.get('location') or 'offline'}.oic.prod-aks.azure.com/{FAKE_TENANT}/"
                         f"{_uuid('issuer', own)}/",
        }
    return out


@resource("azure-native:storage:StorageAccount")
def storage_account(name: str, inputs: dict[str, Any]) -> dict[str, Any]:
    """A storage account has a blob endpoint named after it."""
    own = str(inputs.get("accountName") or name)
    return {
        "id": _arm_id("azure-native:storage:StorageAccount", own, inputs),
        "name": own,
        "primaryEndpoints": {"blob": f"https://{own}.blob.core.windows.net/"},
    }


@resource("azure-native:storage:BlobContainer")
def blob_container(name: str, inputs: dict[str, Any]) -> dict[str, Any]:
    """A container's id sits under its account's default blob service (the scope role assignments use)."""
    own = str(inputs.get("containerName") or name)
    account = str(inputs.get("accountName") or "offlineaccount")
    return {
        "id": f"{_arm_id('azure-native:storage:StorageAccount', account, inputs)}/blobServices/default/containers/{own}",
        "name": own,
    }


@resource("azure-native:compute:CapacityReservationGroup")
def capacity_reservation_group(name: str, inputs: dict[str, Any]) -> dict[str, Any]:
    """A reservation group's id is what an agent pool's capacityReservationGroupID takes."""
    own = str(inputs.get("capacityReservationGroupName") or name)
    return {"id": _arm_id("azure-native:compute:CapacityReservationGroup", own, inputs), "name": own}


@resource("azure-native:compute:CapacityReservation")
def capacity_reservation(name: str, inputs: dict[str, Any]) -> dict[str, Any]:
    """A reservation sits under its group."""
    own = str(inputs.get("capacityReservationName") or name)
    group = str(inputs.get("capacityReservationGroupName") or "offline-group")
    return {
        "id": f"{_arm_id('azure-native:compute:CapacityReservationGroup', group, inputs)}/capacityReservations/{own}",
        "name": own,
    }


@resource("azure-native:authorization:RoleAssignment")
def role_assignment(name: str, inputs: dict[str, Any]) -> dict[str, Any]:
    """A role assignment's id sits under its scope."""
    scope = str(inputs.get("scope") or _rg_id("offline-rg"))
    guid = _uuid("role-assignment", name)
    return {"id": f"{scope}/providers/Microsoft.Authorization/roleAssignments/{guid}", "name": guid}


@function("azure-native:authorization:getClientConfig")
def client_config(args: dict[str, Any]) -> dict[str, Any]:
    """The identity Pulumi runs as."""
    return {"subscriptionId": FAKE_SUBSCRIPTION, "tenantId": FAKE_TENANT, "clientId": _uuid("client", "pulumi"),
            "objectId": _uuid("principal", "pulumi")}


_KUBECONFIG_HEAD = """apiVersion: v1
kind: Config
clusters:
- cluster:
    certificate-authority-data: T0ZGTElORQ==
    server: https://{name}-offline.hcp.offline.azmk8s.io:443
  name: {name}
contexts:
- context:
    cluster: {name}
    user: clusterUser_{rg}_{name}
  name: {name}
current-context: {name}
users:
- name: clusterUser_{rg}_{name}
  user:
"""
"""The cluster, context and user name of an offline AKS kubeconfig; the user's credentials follow."""

OFFLINE_KUBECONFIG = _KUBECONFIG_HEAD + """    client-certificate-data: T0ZGTElORQ==
    client-key-data: T0ZGTElORQ==
    token: offline-token
"""
"""The kubeconfig ``listManagedClusterUserCredentials`` returns offline for a cluster with local accounts
(base64-encoded, as Azure returns it)."""

OFFLINE_EXEC_KUBECONFIG = _KUBECONFIG_HEAD + """    exec:
      apiVersion: client.authentication.k8s.io/v1beta1
      args:
      - get-token
      - --environment
      - AzurePublicCloud
      - --server-id
      - 6dae42f8-4368-4678-94ff-3960e28e3630
      - --client-id
      - 80faf920-1908-4b52-b5ef-a8e7bedfc67a
      - --tenant-id
      - {tenant}
      - --login
      - devicecode
      command: kubelogin
      env: null
      provideClusterInfo: false
"""
"""The kubeconfig it returns in ``exec`` format for an Entra cluster: kubelogin with AKS's Entra server and client
applications and a device-code login (the form Azure/kubelogin docs/book/src/cli/get-token.md shows)."""


@function("azure-native:containerservice:listManagedClusterUserCredentials")
def cluster_user_credentials(args: dict[str, Any]) -> dict[str, Any]:
    """A base64-encoded kubeconfig for the cluster, as the real function returns it."""
    name = str(args.get("resourceName") or "offline-cluster")
    form = OFFLINE_EXEC_KUBECONFIG if args.get("format") == "exec" else OFFLINE_KUBECONFIG
    text = form.format(name=name, rg=args.get("resourceGroupName") or "offline-rg", tenant=FAKE_TENANT)
    return {"kubeconfigs": [{"name": "clusterUser", "value": base64.b64encode(text.encode()).decode()}]}


def _prometheus_query_endpoint(name: str, location: str) -> str:
    """A workspace's query endpoint as Azure forms it: ``https://NAME-SUFFIX.LOCATION.prometheus.monitor.azure.com``
    (the suffix is Azure's; offline it is derived from the name)."""
    return f"https://{name}-{_uuid('amw', name)[:8]}.{location}.prometheus.monitor.azure.com"


@resource("azure-native:monitor:AzureMonitorWorkspace")
def azure_monitor_workspace(name: str, inputs: dict[str, Any]) -> dict[str, Any]:
    """A workspace has a Prometheus query endpoint (``metrics.prometheusQueryEndpoint``)."""
    own = str(inputs.get("azureMonitorWorkspaceName") or name)
    return {"id": f"{_rg_id(_rg(inputs))}/providers/Microsoft.Monitor/accounts/{own}", "name": own,
            "metrics": {"internalId": _uuid("amw-internal", own),
                        "prometheusQueryEndpoint": _prometheus_query_endpoint(own, str(inputs.get("location") or
                                                                                       "offline"))}}


@function("azure-native:monitor:getAzureMonitorWorkspace")
def get_azure_monitor_workspace(args: dict[str, Any]) -> dict[str, Any]:
    """An existing workspace (``k3infra:observability.workspace``), assumed in the stack's location."""
    own = str(args.get("azureMonitorWorkspaceName") or "offline-workspace")
    location = pulumi.Config("azure-native").get("location") or "offline"
    return {"id": f"{_rg_id(str(args.get('resourceGroupName') or 'offline-rg'))}/providers/Microsoft.Monitor/accounts/"
                  f"{own}", "name": own, "location": location,
            "metrics": {"internalId": _uuid("amw-internal", own),
                        "prometheusQueryEndpoint": _prometheus_query_endpoint(own, location)}}


@function("azure-native:compute:getCapacityReservationGroup")
def get_capacity_reservation_group(args: dict[str, Any]) -> dict[str, Any]:
    """An existing reservation group, assumed to be where the stack says.

    Offline there is no Azure to ask, so the group is reported in the stack's ``azure-native:location`` and
    ``k3infra:zone`` with one reservation: the plan shows the lookup, and ``pulumi preview`` makes the real
    one (``AksGpuNodePool`` rejects a group in another region or zone there). Tests replace this answer to
    exercise the rejection.
    """
    rg = str(args.get("resourceGroupName") or "offline-rg")
    name = str(args.get("capacityReservationGroupName") or "offline-group")
    location = pulumi.Config("azure-native").get("location") or "offline"
    zone = pulumi.Config("k3infra").get("zone") or "1"
    gid = f"{_rg_id(rg)}/providers/Microsoft.Compute/capacityReservationGroups/{name}"
    return {
        "id": gid,
        "name": name,
        "location": location,
        "zones": [zone],
        "capacityReservations": [{"id": f"{gid}/capacityReservations/{name}-reservation"}],
        "virtualMachinesAssociated": [],
        "type": "Microsoft.Compute/capacityReservationGroups",
    }
