"""Microsoft Entra ID in front of the AKS API server, local accounts off: the secure default of AksCluster.

- AKS-managed Entra integration with Azure RBAC for Kubernetes authorization (``aadProfile``: ``managed``,
  ``enableAzureRBAC``; learn.microsoft.com aks/manage-azure-rbac) and ``disableLocalAccounts`` (aks/manage-local-
  accounts-managed-azure-ad): every call carries an Entra token of a named identity, under the tenant's MFA and
  conditional access, revocable by removing a role; no cluster-admin client certificate exists to leak (a local
  account's certificate is valid until the cluster's certificates are rotated, and anyone who may call
  listClusterAdminCredential gets it).
- The identity running Pulumi gets ``Azure Kubernetes Service RBAC Cluster Admin`` on the cluster: it creates the
  namespaces, CRDs and cluster roles of the stack. "New role assignments can take up to five minutes to propagate and
  be updated by the authorization server" (aks/manage-azure-rbac): the Kubernetes provider waits that long after the
  grant (a ``time:Sleep`` of catalog.control_planes.AKS_RBAC_PROPAGATION_MINUTES, created once, so only the first
  `pulumi up` waits; the plan's cold start counts it before every Kubernetes object). The grant names the identity's
  kind, a user by default (`pulumi up` from a workstation) or a service principal (CI, a managed identity).
  ``adminGroupObjectIDs`` adds Entra groups whose members are cluster-admin through Kubernetes RBAC.
- The kubeconfig is the cluster user's in exec form (``listClusterUserCredential`` format ``exec``), its kubelogin
  switched to the Azure CLI's login (what ``kubelogin convert-kubeconfig -l azurecli`` writes; Azure/kubelogin
  docs/book/src/cli/get-token.md): `pulumi up` and kubectl need ``kubelogin`` on the PATH and an ``az login``, the
  login Pulumi's azure-native provider already uses by default. The returned kubeconfig asks for a device-code login,
  which no unattended run can answer.
"""

import json
from typing import Any, Sequence

import pulumi
import pulumiverse_time as time
import yaml
from pulumi_azure_native import authorization
from pulumi_azure_native import containerservice as aks

from . import roles
from ..catalog.control_planes import AKS_RBAC_PROPAGATION_MINUTES

KUBELOGIN_LOGIN = "azurecli"
"""The kubelogin login the kubeconfig uses: the token of the Azure CLI's signed-in identity."""


def aad_profile(admin_groups: Sequence[str]) -> aks.ManagedClusterAADProfileArgs:
    """AKS-managed Entra integration, Azure RBAC authorizing, ``admin_groups`` cluster-admin."""
    return aks.ManagedClusterAADProfileArgs(managed=True, enable_azure_rbac=True,
                                            admin_group_object_ids=list(admin_groups) or None)


def deployer_access(name: str, cluster: aks.ManagedCluster, parent: pulumi.Resource,
                    principal_type: authorization.PrincipalType) -> time.Sleep:
    """The identity running Pulumi as cluster admin under Azure RBAC, and the wait for that grant to reach the
    authorization server; the Kubernetes provider depends on the wait. ``principal_type``: what that identity is, a
    user or a service principal (a managed identity is one); ARM refuses an assignment whose type does not match the
    principal's (UnmatchedPrincipalType), and getClientConfig does not say which it is."""
    client = authorization.get_client_config_output(opts=pulumi.InvokeOutputOptions(parent=parent))
    grant = roles.assign(
        f"{name}-deployer-cluster-admin",
        role=roles.BuiltInRole.AKS_RBAC_CLUSTER_ADMIN,
        principal_id=client.object_id,
        scope=cluster.id,
        description="The identity running Pulumi: create the stack's Kubernetes objects (Entra ID, Azure RBAC)",
        principal_type=principal_type,
        opts=pulumi.ResourceOptions(parent=parent),
    )
    return time.Sleep(f"{name}-deployer-cluster-admin-propagation", time.SleepArgs(
        create_duration=f"{AKS_RBAC_PROPAGATION_MINUTES}m",
        # another deployer or cluster is a new grant: wait again; nothing else re-creates the wait
        triggers={"principal_id": client.object_id, "scope": cluster.id}),
        opts=pulumi.ResourceOptions(parent=parent, depends_on=[grant]))


def azurecli_kubeconfig(text: str) -> str:
    """The cluster user kubeconfig AKS returns for an Entra cluster, its kubelogin users logging in with the Azure
    CLI, as JSON (valid YAML). Raises ValueError when no user runs kubelogin: the cluster is not an Entra one."""
    doc: dict[str, Any] = yaml.safe_load(text)
    found = False
    for user in doc.get("users") or []:
        exec_ = (user.get("user") or {}).get("exec") or {}
        if exec_.get("command") != "kubelogin":
            continue
        args = list(exec_.get("args") or [])
        if "--server-id" not in args or args.index("--server-id") + 1 >= len(args):
            raise ValueError(f"kubeconfig user {user.get('name')!r} runs kubelogin without --server-id")
        server_id = args[args.index("--server-id") + 1]
        exec_["args"] = ["get-token", "--login", KUBELOGIN_LOGIN, "--server-id", server_id]
        found = True
    if not found:
        raise ValueError("the cluster user kubeconfig has no kubelogin user: the cluster has no Entra integration")
    return json.dumps(doc, sort_keys=True)
