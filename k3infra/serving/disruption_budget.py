"""The PodDisruptionBudget of a ModelServer (none for one replica)."""

from typing import Mapping

import pulumi
import pulumi_kubernetes as k8s

meta = k8s.meta.v1


def disruption_budget(name: str, namespace: str, replicas: int, selector: Mapping[str, str],
                      labels: Mapping[str, str], child: pulumi.ResourceOptions
                      ) -> k8s.policy.v1.PodDisruptionBudget | None:
    """One replica: no budget. A budget on a single replica either allows its eviction (and protects nothing) or
    blocks every eviction, so node drains, managed node group updates and capacity-window scale-downs fail
    (EKS managed-node-update-behavior: "Aggressive PDB" -> PodEvictionFailure). Several replicas: one pod (so
    one replica's group) down at a time, and pods of a group that is already down may always be evicted."""
    if replicas <= 1:
        return None
    return k8s.policy.v1.PodDisruptionBudget(
        f"{name}-pdb",
        metadata=meta.ObjectMetaArgs(name=name, namespace=namespace, labels=dict(labels)),
        spec=k8s.policy.v1.PodDisruptionBudgetSpecArgs(
            max_unavailable=1, unhealthy_pod_eviction_policy="AlwaysAllow",
            selector=meta.LabelSelectorArgs(match_labels=dict(selector))),
        opts=child,
    )
