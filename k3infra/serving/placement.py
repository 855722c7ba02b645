"""PlacementCheck: before a multi-node server is created, prove the GPU pool's nodes can hold each replica inside one
topology domain, or fail fast saying which nodes report which domain and what to do.

A replica whose tensor parallelism spans nodes needs them in one NVLink domain; the server's pods require it with
a pod affinity on the pool's ``group_topology_label`` (``dra.group_affinity``). Nothing in a node pool's API
guarantees it: two ND GB300 v6 VMs of one AKS pool can land in different racks ("each in its own placement group
... Cross-node NCCL all_reduce_perf (different placement groups): hangs", kubernetes-sigs/dranet
``examples/azure_aks_examples/gb300/README.md``), and then the worker pod stays Pending until the LeaderWorkerSet's
await runs out, half an hour later. This component runs k3infra.serving.placement_check in a Job on the pool:

- in the engine image (the pool's nodes pull it for the server anyway; its python3 runs a standard-library
  script from a ConfigMap: nothing else is downloaded), as a service account whose ClusterRole may get and list
  nodes and nothing else;
- ``backoffLimit: 0``: a verdict is a verdict; the reason goes to the log and the pod's termination message;
- Pulumi awaits the Job (image pull, scheduling and the label's appearance, ``timeout_seconds``); the server
  depends on it. A pool whose capacity has not started gets no check (its nodes cannot be inspected yet).

Nothing here branches on the cloud: the label and the advice come from the pool (``GpuPool.group_topology_label``,
``GpuPool.placement_advice``).
"""

from pathlib import Path
from typing import NotRequired, Optional, TypedDict

import pulumi
import pulumi_kubernetes as k8s

from ..component_args import reject_unknown
from ..sizing import IMAGE_PULL_SECONDS, SCHEDULING_SECONDS
from . import pods, scan
from .contract import GpuPool
from .options import child_options, parent_depends_on

core = k8s.core.v1
meta = k8s.meta.v1
rbac = k8s.rbac.v1

CODE_MOUNT = "/opt/k3infra-placement"
SCRIPT = "placement_check.py"
RUN_AS = 10001
LABEL_SECONDS = 900
"""ESTIMATE: the node software that sets the topology label starts and labels a new node (GPU feature discovery
after the device plugin chart's pods schedule and the driver loads; GKE sets its sub-block label at creation)."""
DEFAULT_TIMEOUT_SECONDS = IMAGE_PULL_SECONDS + SCHEDULING_SECONDS + LABEL_SECONDS
"""How long the check waits for the pool's nodes and their label: the engine image's pull, scheduling, the label."""
POLL_SECONDS = 10
RESOURCES = ("50m", "64Mi", "500m", "256Mi")
DEFAULT_ADVICE = "Recreate the pool's nodes inside one NVLink domain (the cloud's placement for it)."
"""What to do when the pool names no cloud-specific way."""

SKIPS = {
    "CKV_K8S_38": "the check lists the GPU pool's nodes through the Kubernetes API with this token; its ClusterRole "
                  "allows get and list on nodes only",
    "CKV_K8S_43": "the image is the engine image of k3infra:image, which the GPU nodes pull for the server anyway; "
                  "pin it by digest there",
    "CKV_K8S_15": "the engine image is pulled once per node (IfNotPresent) and kept for the server; it is pinned in "
                  "k3infra:image, not by re-pulling",
}
"""checkov checks the placement Job does not satisfy, with the reason."""


def needed(pool: GpuPool, nodes: int) -> bool:
    """A check is due when a replica spans nodes of a pool that names its topology label and has its nodes."""
    return nodes > 1 and bool(pool.get("group_topology_label")) and not pool.get("capacity_pending")


def source() -> str:
    """The check's code (k3infra/serving/placement_check.py), byte for byte."""
    return (Path(__file__).resolve().parent / SCRIPT).read_text()


class PlacementCheckArgs(TypedDict):
    """Arguments of PlacementCheck."""

    namespace: str
    """Namespace of the Job (the server's)."""
    pool: GpuPool
    """The GPU pool: its selector finds the nodes, its ``group_topology_label`` names the domain, its
    ``placement_advice`` says what to do; the Job runs on its nodes (selector and tolerations)."""
    nodes: int
    """Nodes per replica."""
    replicas: int
    """Replicas that must each fit inside one domain."""
    image: pulumi.Input[str]
    """The engine image (it has python3 and is pulled onto the pool's nodes for the server anyway)."""
    timeout_seconds: NotRequired[int]
    """How long the check waits for the nodes and their label before it fails. Default: the engine image's pull,
    scheduling and 15 minutes for the label (``DEFAULT_TIMEOUT_SECONDS``)."""


class PlacementCheck(pulumi.ComponentResource):
    """A Job that waits until the GPU pool's nodes can hold every replica inside one topology domain, or fails."""

    job_name: pulumi.Output[str]
    """Name of the Job (its log says why it failed)."""

    def __init__(self, name: str, args: PlacementCheckArgs, opts: Optional[pulumi.ResourceOptions] = None):
        super().__init__("k3infra:index:PlacementCheck", name, None, opts)
        reject_unknown(args, PlacementCheckArgs)
        label = _checked(args)
        ns = args["namespace"]
        timeout = int(args.get("timeout_seconds") or DEFAULT_TIMEOUT_SECONDS)
        inherited = parent_depends_on(opts)
        child = child_options(self, inherited)
        lbl = pods.labels(name, "placement-check")
        config = core.ConfigMap(f"{name}-code", metadata=meta.ObjectMetaArgs(name=f"{name}-code", namespace=ns,
                                                                             labels=lbl),
                                data={SCRIPT: source()}, opts=child)
        account, role, binding = self._access(name, ns, lbl, child)
        job = k8s.batch.v1.Job(
            f"{name}-job",
            metadata=meta.ObjectMetaArgs(
                name=name, namespace=ns, labels=lbl,
                annotations={"pulumi.com/timeoutSeconds": str(timeout + 120), **scan.skip_annotations(SKIPS)}),
            spec=k8s.batch.v1.JobSpecArgs(
                backoff_limit=0,
                active_deadline_seconds=timeout + 60,
                template=_pod_template(name, args, label, lbl, timeout),
            ),
            opts=child_options(self, inherited, config, binding, role, account,
                               # A Job's template cannot change in place and its name is fixed: a new pool, label or
                               # layout replaces it (deleting first), which checks again.
                               delete_before_replace=True,
                               custom_timeouts=pulumi.CustomTimeouts(create=f"{timeout + 120}s",
                                                                     update=f"{timeout + 120}s")),
        )
        pods.deny_all_ingress(name, ns, "placement-check", child)  # the pod listens on nothing
        self.job = job
        self.job_name = job.metadata.apply(lambda m: m.name or name)
        self.timeout_seconds = timeout
        self.register_outputs({"job_name": self.job_name})

    def _access(self, name: str, ns: str, lbl: dict[str, str], child: pulumi.ResourceOptions) -> tuple[
            core.ServiceAccount, rbac.ClusterRole, rbac.ClusterRoleBinding]:
        """The pod's service account, allowed to get and list nodes and nothing else."""
        account = core.ServiceAccount(f"{name}-account", metadata=meta.ObjectMetaArgs(name=name, namespace=ns,
                                                                                      labels=lbl),
                                      automount_service_account_token=False, opts=child)
        # Nodes are cluster-scoped: a ClusterRole, named after the namespace too (one per server).
        role_name = f"{ns}-{name}"
        role = rbac.ClusterRole(f"{name}-role", metadata=meta.ObjectMetaArgs(name=role_name, labels=lbl),
                                rules=[rbac.PolicyRuleArgs(api_groups=[""], resources=["nodes"], verbs=["get", "list"])],
                                opts=child)
        binding = rbac.ClusterRoleBinding(
            f"{name}-binding", metadata=meta.ObjectMetaArgs(name=role_name, labels=lbl),
            role_ref=rbac.RoleRefArgs(api_group="rbac.authorization.k8s.io", kind="ClusterRole", name=role_name),
            subjects=[rbac.SubjectArgs(kind="ServiceAccount", name=name, namespace=ns)], opts=child)
        return account, role, binding


def _checked(args: PlacementCheckArgs) -> str:
    """The pool's topology label, once the pool has one, a replica spans nodes and the pool holds every replica."""
    pool = args["pool"]
    label = pool.get("group_topology_label")
    if not label:
        raise pulumi.InputPropertyError("pool.group_topology_label", "the check groups the pool's nodes by this "
                                        "label; a pool that is one domain needs no check")
    nodes, replicas = int(args["nodes"]), int(args["replicas"])
    if nodes < 2 or replicas < 1:
        raise pulumi.InputPropertyError("nodes", f"{nodes} node(s) x {replicas} replica(s): the check is for "
                                        "replicas that span at least 2 nodes")
    if nodes * replicas > int(pool["node_count"]):
        raise pulumi.InputPropertyError("pool.node_count", f"{replicas} replica(s) of {nodes} nodes need "
                                        f"{nodes * replicas} nodes; the pool has {pool['node_count']}")
    return label


def _pod_template(name: str, args: PlacementCheckArgs, label: str, lbl: dict[str, str],
                  timeout: int) -> core.PodTemplateSpecArgs:
    """The check's pod: the engine image's python3 on the pool's nodes (no GPU), the script from the ConfigMap."""
    pool, ns = args["pool"], args["namespace"]
    nodes, replicas = int(args["nodes"]), int(args["replicas"])
    selector = ",".join(f"{k}={v}" for k, v in sorted(pool["node_selector"].items()))
    # A failed Job stays failed: say how to run the check again once the nodes are fixed.
    advice = (f"{pool.get('placement_advice') or DEFAULT_ADVICE} Then `kubectl -n {ns} delete job {name}` and "
              "`pulumi up --refresh` check again.")
    return core.PodTemplateSpecArgs(
        metadata=meta.ObjectMetaArgs(labels=lbl),
        spec=core.PodSpecArgs(
            service_account_name=name,
            automount_service_account_token=True,
            enable_service_links=False,
            restart_policy="Never",
            node_selector=dict(pool["node_selector"]),
            tolerations=pods.tolerations(pool) or None,
            security_context=pods.pod_security(RUN_AS),
            containers=[core.ContainerArgs(
                name="check", image=args["image"], image_pull_policy="IfNotPresent",
                command=["python3", f"{CODE_MOUNT}/{SCRIPT}"],
                args=["--selector", selector, "--label", label, "--nodes-per-replica", str(nodes),
                      "--replicas", str(replicas), "--pool-nodes", str(int(pool["node_count"])),
                      "--timeout", str(timeout), "--interval", str(POLL_SECONDS), "--advice", advice],
                # The engine images set NVIDIA_VISIBLE_DEVICES=all: without this the runtime would hand
                # this GPU-less pod every GPU of the node.
                env=pods.env_list({"NVIDIA_VISIBLE_DEVICES": "void", "PYTHONDONTWRITEBYTECODE": "1",
                                   "HOME": "/tmp"}),
                resources=pods.small_resources(*RESOURCES),
                security_context=pods.container_security(read_only_root=True),
                termination_message_policy="FallbackToLogsOnError",
                volume_mounts=[core.VolumeMountArgs(name="code", mount_path=CODE_MOUNT, read_only=True)],
            )],
            volumes=[core.VolumeArgs(name="code", config_map=core.ConfigMapVolumeSourceArgs(
                name=f"{name}-code"))],
        ),
    )


__all__ = ["DEFAULT_TIMEOUT_SECONDS", "PlacementCheck", "PlacementCheckArgs", "needed", "source"]
