"""ImagePrePull: the engine image pulled onto every GPU node as soon as the node exists, while the weights sync.

Without it the server's pods, created once the sync Job is done, pull the ~20 GB engine image only then: the pull
sits on the critical path after the sync (Sizing.cold_start). A DaemonSet on the GPU pool whose one container is
the engine image, sleeping, makes the kubelet pull it when each node joins; the server's pods find it there
(``IfNotPresent``). The container holds no GPU (``NVIDIA_VISIBLE_DEVICES=void``: the NVIDIA runtime would otherwise
expose every GPU to an image that sets ``all``), runs as nobody with nothing writable, and asks for almost nothing.
Pulumi waits for it for the pull's budget, so a wrong image or registry access fails before the sync is done.
"""

import math
from typing import Optional, TypedDict

import pulumi
import pulumi_kubernetes as k8s

from ..catalog import PROBE_SAFETY_FACTOR
from ..sizing import IMAGE_PULL_SECONDS, SCHEDULING_SECONDS
from . import pods, scan
from .contract import GpuPool
from .options import child_options, parent_depends_on

core = k8s.core.v1
meta = k8s.meta.v1

NOBODY = 65534
"""The pre-pull container's user and group."""
RESOURCES = ("10m", "16Mi", "100m", "64Mi")
"""Requests and limits of the sleeping container."""


def timeout_seconds() -> int:
    """Pulumi's wait for the DaemonSet: 1.5 x the image pull, plus scheduling, in whole minutes."""
    return math.ceil((PROBE_SAFETY_FACTOR * IMAGE_PULL_SECONDS + SCHEDULING_SECONDS) / 60) * 60


class ImagePrePullArgs(TypedDict):
    """Arguments of ImagePrePull."""

    namespace: str
    """Namespace of the DaemonSet."""
    image: str
    """The engine image the server runs."""
    pool: GpuPool
    """The GPU pool: its selector and tolerations place one pod per GPU node."""


class ImagePrePull(pulumi.ComponentResource):
    """A DaemonSet that leaves the engine image on every GPU node."""

    daemon_set: k8s.apps.v1.DaemonSet
    """The DaemonSet."""

    def __init__(self, name: str, args: ImagePrePullArgs, opts: Optional[pulumi.ResourceOptions] = None):
        super().__init__("k3infra:index:ImagePrePull", name, None, opts)
        pool, selector = args["pool"], pods.selector(name, "image-pre-pull")
        timeout = timeout_seconds()
        self.daemon_set = k8s.apps.v1.DaemonSet(
            f"{name}-daemon-set",
            metadata=meta.ObjectMetaArgs(name=name, namespace=args["namespace"],
                                         labels=pods.labels(name, "image-pre-pull"),
                                         annotations={"pulumi.com/timeoutSeconds": str(timeout),
                                                      **scan.skip_annotations(scan.PREPULL_SKIPS)}),
            spec=k8s.apps.v1.DaemonSetSpecArgs(
                selector=meta.LabelSelectorArgs(match_labels=selector),
                template=core.PodTemplateSpecArgs(
                    metadata=meta.ObjectMetaArgs(labels=pods.labels(name, "image-pre-pull")),
                    spec=core.PodSpecArgs(
                        automount_service_account_token=False,
                        enable_service_links=False,
                        node_selector=dict(pool["node_selector"]),
                        tolerations=pods.tolerations(pool),
                        security_context=pods.pod_security(NOBODY),
                        termination_grace_period_seconds=1,
                        containers=[core.ContainerArgs(
                            name="engine-image", image=args["image"], image_pull_policy="IfNotPresent",
                            command=["sleep", "infinity"],
                            env=[core.EnvVarArgs(name="NVIDIA_VISIBLE_DEVICES", value="void")],
                            resources=pods.small_resources(*RESOURCES),
                            security_context=pods.container_security(read_only_root=True))],
                    ),
                ),
            ),
            opts=child_options(self, parent_depends_on(opts),
                               custom_timeouts=pulumi.CustomTimeouts(create=f"{timeout}s", update=f"{timeout}s")))
        # the pods listen on nothing
        pods.deny_all_ingress(name, args["namespace"], "image-pre-pull", child_options(self, parent_depends_on(opts)))
        self.register_outputs({})


__all__ = ["ImagePrePull", "ImagePrePullArgs", "timeout_seconds"]
