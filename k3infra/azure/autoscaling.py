"""AKS: the managed KEDA add-on scaling the serving workload on the engine's metrics in the stack's Azure Monitor
workspace.

- KEDA: AKS's add-on (``AksCluster`` ``keda``: ``workloadAutoScalerProfile.keda.enabled``; AKS docs "Install the
  KEDA add-on"), not the chart the other clouds install: AKS runs and upgrades it with the cluster (the KEDA minor
  AKS pairs with the Kubernetes version) and forbids a second KEDA beside it. The operator runs in ``kube-system``
  as the service account ``keda-operator`` (AKS docs "Securely scale your applications using the KEDA add-on and
  workload identity").
- The operator's identity: a user-assigned managed identity with a federated credential for
  ``system:serviceaccount:kube-system:keda-operator`` on the cluster's OIDC issuer, holding Monitoring Data Reader
  on the workspace only (Azure Monitor docs "Integrate KEDA with your Azure Kubernetes Service cluster").
- A TriggerAuthentication with ``podIdentity.provider: azure-workload`` and that identity's client id: KEDA
  exchanges the operator's service account token for an Entra token of ``https://prometheus.monitor.azure.com``
  (kedacore/keda v2.20.2 ``pkg/scalers/azure/azure_managed_prometheus_http_round_tripper.go``) and queries the
  workspace's Prometheus query endpoint (``metrics.prometheusQueryEndpoint``).
- The operator restarted once its federated credential exists: the AKS page above, "Enable Workload Identity on
  KEDA operator": "After creating the federated credential for the keda-operator ServiceAccount, you will need to
  manually restart the keda-operator pods to ensure Workload Identity environment variables are injected". The
  add-on's operator starts with the cluster, before the credential, so the stack patches its pod template with an
  annotation naming the credential (a server-side apply patch, ``DeploymentPatch``): the Deployment rolls its pods
  after the credential is created, and again only if the credential is replaced.
"""

import pulumi
import pulumi_kubernetes as k8s
from pulumi_azure_native import managedidentity

from .. import names
from ..config import StackConfig
from ..serving.autoscaling import workload_target
from ..serving.keda import scaler_objects
from ..serving.stack import Serving
from .cluster import AksCluster
from .monitoring import MonitorWorkspace
from .roles import BuiltInRole, assign
from .storage import WORKLOAD_IDENTITY_AUDIENCE

KEDA_ADDON_NAMESPACE = "kube-system"
KEDA_ADDON_SERVICE_ACCOUNT = "keda-operator"
"""Where AKS's KEDA add-on runs its operator, and as which service account: the subject its federated credential
trusts (AKS docs, "Securely scale your applications using the KEDA add-on and workload identity")."""
TRIGGER_AUTH = f"{names.PREFIX}-keda-azure"
KEDA_ADDON_DEPLOYMENT = "keda-operator"
"""The add-on operator's Deployment in KEDA_ADDON_NAMESPACE (the AKS page's `kubectl rollout restart`)."""
CREDENTIAL_ANNOTATION = "k3infra.dev/keda-federated-credential"
"""The operator's pod-template annotation whose value is the federated credential's id: set, it rolls the pods."""


def keda_subject() -> str:
    """The federated credential's subject: the add-on operator's service account."""
    return f"system:serviceaccount:{KEDA_ADDON_NAMESPACE}:{KEDA_ADDON_SERVICE_ACCOUNT}"


def wants_keda(cfg: StackConfig) -> bool:
    """True when the stack scales its workload (the cluster then runs the KEDA add-on)."""
    a = cfg.autoscaling
    return bool(a is not None and a.enabled and workload_target(cfg.workload) is not None)


def keda(cfg: StackConfig, cluster: AksCluster, serving: Serving, workspace: MonitorWorkspace | None,
         tags: dict[str, str]) -> list[pulumi.Resource]:
    """The operator's identity, its grant and the scaler objects of a stack with autoscaling on (nothing otherwise;
    config validation requires observability with autoscaling on AKS, so the workspace is there)."""
    if not wants_keda(cfg) or workspace is None:
        return []
    assert cfg.azure is not None
    identity = managedidentity.UserAssignedIdentity(
        f"{names.PREFIX}-keda-identity", resource_group_name=cluster.resource_group_name,
        resource_name_=f"{cfg.cluster.name}-keda", location=cfg.azure.location, tags=tags)
    credential = managedidentity.FederatedIdentityCredential(
        f"{names.PREFIX}-keda-federation", resource_group_name=cluster.resource_group_name,
        resource_name_=identity.name, federated_identity_credential_resource_name="keda-operator",
        issuer=cluster.oidc_issuer_url, subject=keda_subject(), audiences=[WORKLOAD_IDENTITY_AUDIENCE])
    grant = assign(f"{names.PREFIX}-keda-metrics-reader", role=BuiltInRole.MONITORING_DATA_READER,
                   principal_id=identity.principal_id, scope=workspace.id,
                   description="KEDA (AKS add-on) queries the engine's metrics to scale the Kimi K3 server (k3infra)",
                   opts=pulumi.ResourceOptions())
    restart = k8s.apps.v1.DeploymentPatch(
        f"{names.PREFIX}-keda-operator-restart",
        metadata=k8s.meta.v1.ObjectMetaPatchArgs(name=KEDA_ADDON_DEPLOYMENT, namespace=KEDA_ADDON_NAMESPACE),
        spec=k8s.apps.v1.DeploymentSpecPatchArgs(template=k8s.core.v1.PodTemplateSpecPatchArgs(
            metadata=k8s.meta.v1.ObjectMetaPatchArgs(annotations={CREDENTIAL_ANNOTATION: credential.id}))),
        opts=pulumi.ResourceOptions(provider=cluster.provider, depends_on=[cluster.managed_cluster, credential]))
    return [identity, credential, grant, restart, *scaler_objects(
        cfg, serving, provider=cluster.provider, auth_name=TRIGGER_AUTH,
        auth_spec={"podIdentity": {"provider": "azure-workload", "identityId": identity.client_id}},
        server_address=workspace.query_endpoint, labels={"namespace": cfg.namespace},
        depends_on=[cluster.managed_cluster, credential, grant, restart])]
