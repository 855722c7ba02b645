"""The engine image pulled onto every HyperPod instance of the endpoint's type ahead of a scale-out.

The HyperPod Inference Operator builds the server's pods itself and pulls the image when one starts (5 minutes,
sizing.budgets IMAGE_PULL_SECONDS), but the cluster is EKS-orchestrated: a DaemonSet of k3infra's runs on its
instances as AWS's own agents do, selected by the label the instances carry, ``node.kubernetes.io/instance-type:
ml.<type>`` (aws/sagemaker-hyperpod-cli helm_chart/HyperPodHelmChart/charts/health-monitoring-agent: its
DaemonSet's nodeAffinity on that label). serving.prepull's ImagePrePull, selecting those instances, leaves the image
on every instance the operator's autoscaler may place a replica on (the instance group is fixed: HyperPod adds no
instance on its own), so a new replica starts without the pull (issue 40, "images ahead of scale-out").
"""

from typing import Sequence

import pulumi

from ..serving.contract import GpuPool
from ..serving.prepull import ImagePrePull, ImagePrePullArgs

INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"
"""The label a HyperPod instance carries with its ``ml.`` instance type."""


def instance_pool(instance_type: str, gpus: int, instances: int) -> GpuPool:
    """The HyperPod instances of ``instance_type`` as serving's GPU pool (no taints to tolerate: the operator's pods
    set none)."""
    return GpuPool(node_selector={INSTANCE_TYPE_LABEL: instance_type}, tolerations=[], gpus_per_node=gpus,
                   node_count=instances)


def image_pre_pull(name: str, *, namespace: str, image: str, instance_type: str, gpus: int, instances: int,
                   parent: pulumi.Resource, depends_on: Sequence[pulumi.Resource]) -> ImagePrePull:
    """The pre-pull DaemonSet on the endpoint's instances, in its namespace."""
    return ImagePrePull(f"{name}-pre-pull", ImagePrePullArgs(
        namespace=namespace, image=image, pool=instance_pool(instance_type, gpus, instances)),
        opts=pulumi.ResourceOptions(parent=parent, depends_on=list(depends_on)))


__all__ = ["INSTANCE_TYPE_LABEL", "image_pre_pull", "instance_pool"]
