"""Azure built-in role definitions k3infra assigns, and the typed role assignment it builds them with.

The GUIDs are Azure's built-in role ids, identical in every tenant
(learn.microsoft.com/azure/role-based-access-control/built-in-roles).
"""

from enum import Enum

import pulumi
from pulumi_azure_native import authorization


class BuiltInRole(str, Enum):
    """Built-in roles by id."""

    CONTRIBUTOR = "b24988ac-6180-42a0-ab88-20f7382dd24c"
    """On the Capacity Reservation Group's resource group, for the AKS cluster identity (AKS docs)."""
    STORAGE_BLOB_DATA_READER = "2a2b9908-6ea1-4ae2-8e65-a410df84e7d1"
    """Read blobs: the model server."""
    STORAGE_BLOB_DATA_CONTRIBUTOR = "ba92f5b4-2d11-453d-a403-e96b0029c9fe"
    """Read and write blobs: the weight sync Job only."""
    ACR_PULL = "7f951dda-4ed3-4680-a7ca-43fe172d538d"
    """Pull images from a container registry: the cluster's kubelet identity (what ``--attach-acr`` grants)."""
    AKS_RBAC_CLUSTER_ADMIN = "b1ff04bb-8a4e-4dc4-8eb5-8693973ce19b"
    """Azure Kubernetes Service RBAC Cluster Admin: every Kubernetes resource of the cluster under Azure RBAC, for the
    identity running Pulumi (aks/manage-azure-rbac)."""
    MONITORING_DATA_READER = "b0d8363b-8ddd-447d-831f-62ca05bff136"
    """Query an Azure Monitor workspace's Prometheus data: KEDA's operator (Azure Monitor docs "Integrate KEDA
    with your Azure Kubernetes Service cluster")."""


def role_definition_id(role: BuiltInRole) -> pulumi.Output[str]:
    """The full role definition id in the subscription Pulumi deploys to."""
    client = authorization.get_client_config_output()
    return client.subscription_id.apply(
        lambda sub: f"/subscriptions/{sub}/providers/Microsoft.Authorization/roleDefinitions/{role.value}")


def assign(
    name: str,
    *,
    role: BuiltInRole,
    principal_id: pulumi.Input[str],
    scope: pulumi.Input[str],
    description: str,
    opts: pulumi.ResourceOptions,
    principal_type: authorization.PrincipalType = authorization.PrincipalType.SERVICE_PRINCIPAL,
) -> authorization.RoleAssignment:
    """Assign ``role`` to a principal at ``scope``: by default a managed identity's service principal.

    ``principal_type`` is stated so a fresh identity's assignment does not fail on Entra ID replication delay (the
    SDK would send ``User`` for none).
    """
    return authorization.RoleAssignment(
        name,
        authorization.RoleAssignmentArgs(
            principal_id=principal_id,
            principal_type=principal_type,
            role_definition_id=role_definition_id(role),
            scope=scope,
            description=description,
        ),
        opts=opts,
    )
