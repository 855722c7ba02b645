"""Pull access to the Azure Container Registry that holds the stack's image.

``az aks update --attach-acr`` assigns AcrPull on the registry to the cluster's kubelet identity (AKS docs,
cluster-container-registry-integration); this is that assignment, made by Pulumi so that the GPU nodes can pull
a private arm64 engine image on the first ``pulumi up``.
"""

import pulumi
from pulumi_azure_native import containerservice as aks

from . import roles


def kubelet_object_id(cluster: aks.ManagedCluster) -> pulumi.Output[str]:
    """Object id of the identity the cluster's kubelets pull images with (``identityProfile.kubeletidentity``)."""
    def object_id(profile: object) -> str:
        kubelet = profile.get("kubeletidentity") if isinstance(profile, dict) else None
        oid = getattr(kubelet, "object_id", None) or (kubelet.get("objectId") if isinstance(kubelet, dict) else None)
        if not oid:
            raise ValueError("the AKS cluster reports no kubelet identity (identityProfile.kubeletidentity)")
        return str(oid)
    return cluster.identity_profile.apply(object_id)


def acr_pull(name: str, *, registry_id: str, cluster: aks.ManagedCluster,
             opts: pulumi.ResourceOptions) -> pulumi.Resource:
    """AcrPull on ``registry_id`` for the cluster's kubelet identity."""
    return roles.assign(name, role=roles.BuiltInRole.ACR_PULL, principal_id=kubelet_object_id(cluster),
                        scope=registry_id, description="AKS kubelet identity: pull the serving image", opts=opts)
