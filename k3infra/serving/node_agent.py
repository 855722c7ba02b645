"""NodeAgent: one pod per GPU node that keeps the weights on the node's local NVMe and carries the engine's caches
through the bucket (issue 40), so a restarted or new server pod on the node reads its weights from the node and
warms up from the caches of the first warm-up.

Its one container runs the copier's ``node-agent`` (k3infra.weightcopy.copier.agent) as the bucket's writer identity:
once the sync's marker is in the bucket it copies the complete revision into ``NODE_DIR/weights/PATH``, verified
against the bucket's manifest, the bucket's marker written last (a change of revision drops it first); it restores
the caches saved for the stack's key (the engine release, the image, the GPU model and the layout) into the node's
empty engine cache directory, and saves that directory once a server on the node has served (the warm flag the
engine container writes after ``/health`` answers). A server pod chooses the node copy at start only when its
marker equals the bucket's (``marker_wait``), else the bucket: a copy that does not match is never fatal.

The agent runs on every node of the pool, where the pre-pull runs (serving.prepull): the nodes a scaler adds a
replica on hold the weights and the caches before it does. Its node directories are hostPaths: the serving
namespace is privileged with them (``pod_security_level``).
"""

import json
from typing import Mapping, Optional, Sequence, TypedDict

import pulumi
import pulumi_kubernetes as k8s

from . import pods, scan
from .contract import GpuPool, WeightsMarker, WeightStore
from .copier_pods import auth_window_args, copier_container
from .options import child_options, parent_depends_on

core = k8s.core.v1
meta = k8s.meta.v1

NODE_MOUNT = "/var/lib/k3infra-node"
"""Where the agent and the server pods see the node's directory on its local NVMe."""
CACHE_MOUNT = "/var/lib/k3infra-engine-cache"
"""Where the agent sees the node's engine cache directory (the server's ``engine_cache``)."""
ROUND_SECONDS = 60
"""How often the agent looks again (the bucket's revision, a warm flag to save)."""
RESOURCES = ("500m", "1Gi", "4", "8Gi")
"""Requests and limits: the copy streams one file at a time, in 8 MiB reads."""




class NodeAgentArgs(TypedDict):
    """Arguments of NodeAgent."""

    namespace: str
    """Namespace of the DaemonSet (the writer's service account is in it)."""
    pool: GpuPool
    """The GPU pool: its selector and tolerations place one agent per GPU node."""
    store: WeightStore
    """The bucket: the agent runs as its writer (the caches are saved into it)."""
    marker: WeightsMarker
    """The sync's markers: the first repository is the model the node keeps."""
    node_dir: str
    """The host directory on the node's local NVMe for the weights ("" : the agent carries the caches only)."""
    cache_root: str
    """The node's engine cache root, whose directory per key the servers mount (their ``engine_cache``'s parent; "" :
    the agent keeps the weights only)."""
    caches: Sequence[Mapping[str, str]]
    """Each key's parts (the engine release, the image, the GPU model, the layout; a role's name): one for a replica,
    one per role of a topology."""


def agent_args(args: NodeAgentArgs) -> list[pulumi.Input[str]]:
    """The copier's ``node-agent`` arguments."""
    out: list[pulumi.Input[str]] = ["node-agent", "--repo", args["marker"]["repos"][0], "--interval",
                                    str(ROUND_SECONDS), *auth_window_args(args["store"])]
    if args["node_dir"]:
        out += ["--node-dir", NODE_MOUNT]
    if args["cache_root"]:
        out += ["--cache-dir", CACHE_MOUNT]
        for parts in args["caches"]:
            out += ["--cache", json.dumps(dict(parts), sort_keys=True)]
    return out


class NodeAgent(pulumi.ComponentResource):
    """A DaemonSet on the GPU pool that keeps the weights and the engine's caches on every node."""

    daemon_set: k8s.apps.v1.DaemonSet
    """The DaemonSet."""

    def __init__(self, name: str, args: NodeAgentArgs, opts: Optional[pulumi.ResourceOptions] = None):
        super().__init__("k3infra:index:NodeAgent", name, None, opts)
        pool, store = args["pool"], args["store"]
        mounts, host = _host_directories(args)
        container, volumes = copier_container("node-agent", agent_args(args), store, args["marker"]["config_map"],
                                              pods.small_resources(*RESOURCES), mounts=mounts)
        selector = pods.selector(name, "node-agent")
        self.daemon_set = k8s.apps.v1.DaemonSet(
            f"{name}-daemon-set",
            metadata=meta.ObjectMetaArgs(name=name, namespace=args["namespace"], labels=pods.labels(name, "node-agent"),
                                         annotations=scan.skip_annotations(scan.NODE_AGENT_SKIPS)),
            spec=k8s.apps.v1.DaemonSetSpecArgs(
                selector=meta.LabelSelectorArgs(match_labels=selector),
                template=core.PodTemplateSpecArgs(
                    metadata=meta.ObjectMetaArgs(labels={**pods.labels(name, "node-agent"),
                                                         **(store["writer"].get("pod_labels") or {})}),
                    spec=core.PodSpecArgs(
                        service_account_name=store["writer"]["name"], automount_service_account_token=False,
                        enable_service_links=False, node_selector=dict(pool["node_selector"]),
                        tolerations=pods.tolerations(pool), security_context=pods.pod_security(),
                        termination_grace_period_seconds=10, containers=[container], volumes=[*volumes, *host]),
                ),
            ),
            opts=child_options(self, parent_depends_on(opts), custom_timeouts=pulumi.CustomTimeouts(create="10m")))
        # the agent listens on nothing
        pods.deny_all_ingress(name, args["namespace"], "node-agent", child_options(self, parent_depends_on(opts)))
        self.register_outputs({})


def _host_directories(args: NodeAgentArgs) -> tuple[list[core.VolumeMountArgs], list[core.VolumeArgs]]:
    """The node's weights directory and engine cache directory (hostPaths, created if missing), where given."""
    mounts, volumes = [], []
    for vname, path, mount in (("node-weights", args["node_dir"], NODE_MOUNT),
                               ("engine-cache", args["cache_root"], CACHE_MOUNT)):
        if path:
            volumes.append(core.VolumeArgs(name=vname, host_path=core.HostPathVolumeSourceArgs(
                path=path, type="DirectoryOrCreate")))
            mounts.append(core.VolumeMountArgs(name=vname, mount_path=mount))
    return mounts, volumes


__all__ = ["CACHE_MOUNT", "NODE_MOUNT", "NodeAgent", "NodeAgentArgs", "agent_args"]
