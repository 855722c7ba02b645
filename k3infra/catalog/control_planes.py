"""What each cloud's managed control plane can reach on the nodes: the ports an admission webhook may listen on.

The API server calls a webhook at its Service's endpoint, a pod on a node, on the Service's ``targetPort``
(Kubernetes "Dynamic Admission Control"). Whether that call arrives is the cloud's network: k3infra.webhook_reach
holds every webhook a stack's charts serve (catalog.charts) against these facts and the rules the stack creates.
"""

from dataclasses import dataclass
from types import MappingProxyType
from typing import Mapping

from .types import Cloud


@dataclass(frozen=True)
class ControlPlaneReach:
    """The node ports a cloud's control plane reaches without a rule of the stack's."""

    cloud: Cloud
    ports: frozenset[int] | None
    """TCP ports admitted from the control plane to the nodes; None: every port."""
    condition: str
    """What must hold of the stack's nodes for ``ports`` to be what they get."""
    source: str


CONTROL_PLANE_REACH: Mapping[Cloud, ControlPlaneReach] = MappingProxyType({r.cloud: r for r in (
    ControlPlaneReach(
        Cloud.GCP, frozenset({443, 10250}),
        "private nodes: GKE's own gke-CLUSTER-HASH-master rule; every other port needs an ingress firewall rule from "
        "the control plane's range (privateClusterConfig.masterIpv4CidrBlock) to the nodes",
        "cloud.google.com/kubernetes-engine/docs/concepts/firewall-rules (the control plane rule of a private cluster "
        "admits TCP 443 and 10250 only); the same gotcha in cert-manager's, Linkerd's and Cloud Service Mesh's GKE "
        "notes, and cloud.google.com/kubernetes-engine/docs/how-to/private-clusters (\"Adding firewall rules for "
        "specific use cases\")"),
    ControlPlaneReach(
        Cloud.AWS, None,
        "the nodes carry the cluster security group (a managed node group's launch template, HyperPod's "
        "instance groups): it admits all traffic from itself, and the control plane's ENIs carry it",
        "docs.aws.amazon.com/eks/latest/userguide/sec-group-reqs.html (the cluster security group's default inbound "
        "rule: all protocols, all ports, source the security group itself)"),
    ControlPlaneReach(
        Cloud.AZURE, None,
        "the API server reaches the nodes through the konnectivity tunnel its agents in kube-system open from the "
        "nodes: no inbound rule is involved",
        "MicrosoftDocs/SupportArticles-docs support/azure/azure-kubernetes/connectivity/tunnel-connectivity-issues.md "
        "(AKS's tunnel between the control plane and the nodes, Konnectivity); tigera/operator#5212 (\"On AKS and "
        "GKE the apiserver proxies admission calls through those pods\")"),
    ControlPlaneReach(
        Cloud.ALICLOUD, None,
        "the node pools stay in the cluster's default security group (no security group of their own): ACK creates "
        "it with the recommended inbound rule, all protocols and ports from the group itself",
        "alibabacloud.com/help/en/ack/ack-managed-and-ack-dedicated/user-guide/configure-security-group-rules-to-"
        "enforce-access-control-on-ack-clusters (recommended inbound rule: all protocols -1/-1 from the cluster's "
        "default security group; the least-privilege rules list TCP 10250, 10255, 443, 6443, 8082 and \"the "
        "listener port of a container that provides a webhook service\")"),
)})
"""Per cloud: what reaches the nodes from the control plane, and its source."""

AKS_RBAC_PROPAGATION_MINUTES = 5
"""How long a new Azure RBAC role assignment on an AKS cluster takes to reach the API server's authorization:
learn.microsoft.com aks/manage-azure-rbac, "New role assignments can take up to five minutes to propagate and be
updated by the authorization server". The Kubernetes provider of an Entra cluster waits this long after the
deployer's cluster-admin grant (k3infra.azure.entra), so the cold start counts it before every Kubernetes object
(sizing.ColdStart.kubernetes_wait_seconds)."""

__all__ = ["AKS_RBAC_PROPAGATION_MINUTES", "CONTROL_PLANE_REACH", "ControlPlaneReach"]
