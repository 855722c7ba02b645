"""FabricCheck: before a multi-node group loads its weights, prove the fabric between its pods with collectives across
exactly its ranks, or stop ``pulumi up`` saying what NCCL fell back to and what fixes it.

A group whose NCCL silently falls back to sockets (a missing RDMA claim, a wrong interface, an IMEX channel not
granted, a network plugin not found) still loads, passes its probes and serves, at a fraction of the speed the plan
costed; the placement check reads node labels only. This component runs k3infra.fabric_probe on the group's own
pods, built as the server's are:

- the same image (its torch and NCCL), node selector, tolerations, topology affinity (one NVLink domain per group),
  GPUs and per-pod fabric resources (EFA devices), DRA claims made by the same function from the same pool
  (``dra.server_claims``: the RDMA NIC claim, a ComputeDomain per group with its IMEX channel and NCCL's MNNVL
  settings), capabilities (IPC_LOCK), host mounts (NCCL plugins, driver libraries), ``/dev/shm``, the pool's
  environment and setup lines (interfaces, ``set_nccl_env.sh``) and the engine's collective settings;
- one pod per node, each starting one rank per GPU with ``torch.distributed.run``, the leader's address and the
  node's rank in the LeaderWorkerSet's own variables (``LWS_LEADER_ADDRESS``, ``LWS_WORKER_INDEX``,
  ``LWS_GROUP_SIZE``), so the probe launches as the server's ranks do;
- as an Indexed Job (``completions`` = nodes, ``backoffLimit: 0``) behind a headless Service that publishes the
  leader before it is ready, not a LeaderWorkerSet: Pulumi awaits a Job to completion and fails ``pulumi up`` when
  it fails, while a LeaderWorkerSet restarts its group for ever.

Its result is the stack output ``fabricCheck``: the probe's leader writes its report (per path, the bus bandwidth
measured, the transport NCCL used and the verdict) into an annotation of its own Job, which Pulumi reads back once
the Job has completed (``fabric_report`` says why an annotation, not the termination message). For that the pods
mount their service account's token, and a Role lets them ``patch`` the check's own Jobs and nothing else.

The server depends on it. It runs once, when the group is first created: a later ``pulumi up`` leaves the completed
Job alone (``ignore_changes``), since the server's pods then hold every GPU of the group and a new check could not
schedule. A pool whose capacity has not started gets no check (its nodes cannot run it yet).

A role of a disaggregated server is a group of its own: one FabricCheck per role, with that role's pool, node count
and paths (``FabricCheckArgs``). Nothing here branches on the cloud.
"""

import json
from pathlib import Path
from typing import Any, Mapping, NotRequired, Optional, Sequence, TypedDict

import pulumi
import pulumi_kubernetes as k8s

from ..component_args import reject_unknown
from ..sizing import IMAGE_PULL_SECONDS, SCHEDULING_SECONDS
from . import dra, pods, scan
from .contract import GpuPool
from .fabric_report import check_status, group_output, job_state
from .options import child_options, parent_depends_on

core = k8s.core.v1
meta = k8s.meta.v1
rbac = k8s.rbac.v1

CODE_MOUNT = "/opt/k3infra-fabric"
SCRIPT = "fabric_probe.py"
RENDEZVOUS_PORT = 29511
"""torch.distributed.run's static rendezvous on the leader pod (the engines use 29500 and 5000: not the server's)."""
JOB_NAME_LABEL = "batch.kubernetes.io/job-name"
"""Label the Job controller puts on its pods (Kubernetes 1.27+)."""
COMPLETION_INDEX = "metadata.annotations['batch.kubernetes.io/job-completion-index']"
"""An Indexed Job pod's index (the node's rank)."""
RENDEZVOUS_SECONDS = 900
"""ESTIMATE: how long the other nodes' pods may take to start after the first (pods of one group are scheduled
together, but each node pulls the image on its own if the pre-pull has not reached it)."""
COLLECTIVE_ENV_PREFIXES = ("NCCL_", "UCX_", "FI_", "GLOO_", "TP_SOCKET", "NVSHMEM_", "LD_LIBRARY_PATH")
"""The engine environment that shapes collectives: what the check takes of the server's."""

BATCH_SKIPS = {
    "CKV_K8S_8": "a batch pod that runs collectives once and exits: nothing to probe for liveness",
    "CKV_K8S_9": "a batch pod that runs collectives once and exits: it receives no traffic to be ready for",
    "CKV_K8S_38": "the probe's leader patches its report into its own Job's annotation with this token; its Role "
                  "allows patch on the check's Jobs only",
}


def _scan_skips(pool: GpuPool) -> dict[str, str]:
    """The checks the check's pods do not satisfy, with the reason: the server pods' own (the same image, GPUs,
    fabric and capabilities on the same pool), and a batch pod's (no probes)."""
    skips = {**scan.SERVER_SKIPS, **BATCH_SKIPS}
    if not (pool.get("cpu_request") and pool.get("memory_request")):
        skips.update(scan.SERVER_NO_CPU_MEMORY)
    if pool.get("capabilities"):
        skips[scan.ADDED_CAPABILITIES] = scan.capabilities_reason(list(pool.get("capabilities") or ()))
    return skips


def needed(pool: GpuPool, nodes: int, plan: object) -> bool:
    """A check is due when a group spans nodes, the sizing planned one and the pool has its nodes."""
    return nodes > 1 and plan is not None and not pool.get("capacity_pending")


def source() -> str:
    """The probe's code (k3infra/fabric_probe.py), byte for byte."""
    return (Path(__file__).resolve().parent.parent / SCRIPT).read_text()


class FabricCheckArgs(TypedDict):
    """Arguments of FabricCheck: one serving group (a replica, or a role of a disaggregated server)."""

    namespace: str
    """Namespace of the Job (the server's)."""
    pool: GpuPool
    """The group's GPU pool: nodes, GPUs, fabric resources, claims, environment, host mounts, topology label."""
    image: pulumi.Input[str]
    """The engine image (its torch and NCCL are what the server will use)."""
    nodes: int
    """Pods per group: one per node."""
    groups: int
    """Groups to check, all at once (a replica each): each gets its own claims and ComputeDomain."""
    tensor_parallel: int
    """The group's tensor-parallel size: whether its pods claim a ComputeDomain (``dra.uses_compute_domains``)."""
    plan: str
    """JSON of the paths, the GPUs per node and the threshold (``plan_json``)."""
    engine_env: NotRequired[Mapping[str, str]]
    """The engine container's collective settings (``COLLECTIVE_ENV_PREFIXES``). Default: none."""
    engine_setup: NotRequired[Sequence[str]]
    """Shell lines the engine's command runs before it starts (the CUDA forward-compatibility switch), run after the
    pool's setup lines. Default: none."""
    timeout_seconds: NotRequired[int]
    """How long the Job may run. Default: image pull, scheduling, rendezvous and the check (``default_timeout``)."""


def plan_json(paths: list[dict[str, object]], gpus_per_node: int, threshold: float, advice: str = "") -> str:
    """The probe's ``--plan``: the sizing's paths (each with ``advice``, what its failure message ends with), the GPUs
    per node and the threshold."""
    return json.dumps({"gpusPerNode": gpus_per_node, "threshold": threshold,
                       "paths": [{**p, "advice": advice} if advice else p for p in paths]}, sort_keys=True)


def advice(pool: GpuPool, namespace: str, name: str, groups: int) -> str:
    """What a failed check's message ends with: what this pool gives the pods for the fabric (the settings a fix
    changes), and how to run the check again."""
    given = [f"{c['count']} x {c['device_class']} per pod (GpuPool.device_claims, claim {c['name']})"
             for c in pool.get("device_claims") or ()]
    given += [f"{k}: {v} per pod (GpuPool.extra_resources)" for k, v in sorted((pool.get("extra_resources") or {}).items())]
    if pool.get("compute_domains"):
        given.append("a ComputeDomain per group whose IMEX channel every pod claims (GpuPool.compute_domains)")
    if pool.get("pod_annotations"):
        given.append(f"the annotations {', '.join(sorted(pool.get('pod_annotations') or {}))} (GpuPool.pod_annotations: "
                     "e.g. GKE's additional RDMA interfaces)")
    given += [f"the node's {m['host_path']} at {m['mount_path']} (GpuPool.host_mounts)" for m in pool.get("host_mounts") or ()]
    env = sorted(k for k in (pool.get("env") or {}) if k.startswith(COLLECTIVE_ENV_PREFIXES))
    if env or pool.get("setup_commands"):
        given.append("the pool's NCCL environment and setup lines (GpuPool.env, GpuPool.setup_commands"
                     + (f": {', '.join(env)}" if env else "") + ")")
    jobs = " ".join(f"{name}-{i}" for i in range(groups))
    return (("This pool gives the pods: " + "; ".join(given) + ". ") if given else
            "This pool gives the pods no RDMA device and no ComputeDomain. ") + (
        f"Once fixed, `kubectl -n {namespace} delete job {jobs}` and `pulumi up --refresh` check again.")


def default_timeout(check_seconds: int) -> int:
    """The image's pull, scheduling, the other pods' start and the check itself."""
    return IMAGE_PULL_SECONDS + SCHEDULING_SECONDS + RENDEZVOUS_SECONDS + check_seconds


class FabricCheck(pulumi.ComponentResource):
    """Indexed Jobs (one per group) that run collectives on the group's own pods and fail on a fabric fallback."""

    job_names: pulumi.Output[list[str]]
    """Names of the Jobs (their annotation, logs and termination messages hold the report)."""
    report: pulumi.Output[dict[str, object]]
    """The stack output ``fabricCheck``: its status, the threshold, each path's expected transport, bus bandwidth and
    floor with its basis, and per group (Job) what its leader measured (``fabric_report``)."""

    def __init__(self, name: str, args: FabricCheckArgs, opts: Optional[pulumi.ResourceOptions] = None):
        super().__init__("k3infra:index:FabricCheck", name, None, opts)
        reject_unknown(args, FabricCheckArgs)
        _checked(args)
        ns, pool = args["namespace"], args["pool"]
        timeout = int(args.get("timeout_seconds") or default_timeout(0))
        inherited = parent_depends_on(opts)
        child = child_options(self, inherited)
        lbl = pods.labels(name, "fabric-check")
        code = core.ConfigMap(f"{name}-code", metadata=meta.ObjectMetaArgs(name=f"{name}-code", namespace=ns, labels=lbl),
                              data={SCRIPT: source()}, opts=child)
        groups = int(args["groups"])
        names = [f"{name}-{i}" for i in range(groups)]
        account, role, binding = _access(name, ns, lbl, names, child)
        claims = dra.server_claims(name, namespace=ns, pool=pool, groups=groups,
                                   tensor_parallel=int(args["tensor_parallel"]), opts=child)
        self.network_policy = _network_policy(name, ns, lbl, child)
        jobs: list[k8s.batch.v1.Job] = []
        for i, group_claims in enumerate(claims.groups):
            job = f"{name}-{i}"
            svc = core.Service(f"{job}-leader", metadata=meta.ObjectMetaArgs(name=job, namespace=ns, labels=lbl),
                               spec=core.ServiceSpecArgs(
                                   cluster_ip="None", publish_not_ready_addresses=True,
                                   selector={JOB_NAME_LABEL: job},
                                   ports=[core.ServicePortArgs(name="rendezvous", port=RENDEZVOUS_PORT)]),
                               opts=child)
            template = check_pod_template(name, i, args, group_claims, claims.env, lbl)
            jobs.append(k8s.batch.v1.Job(
                f"{job}-job",
                metadata=meta.ObjectMetaArgs(
                    name=job, namespace=ns, labels=lbl,
                    annotations={"pulumi.com/timeoutSeconds": str(timeout + 120), **scan.skip_annotations(_scan_skips(pool))}),
                spec=k8s.batch.v1.JobSpecArgs(
                    completion_mode="Indexed", completions=int(args["nodes"]), parallelism=int(args["nodes"]),
                    backoff_limit=0, active_deadline_seconds=timeout + 60, template=template),
                opts=child_options(self, inherited, code, account, role, binding, svc, self.network_policy,
                                   *claims.resources,
                                   custom_timeouts=pulumi.CustomTimeouts(create=f"{timeout + 120}s"),
                                   # Runs once, before the group first loads: later the server holds the GPUs.
                                   ignore_changes=["spec", "metadata"]),
            ))
        self.jobs = jobs
        self.job_names = pulumi.Output.all(*[j.metadata.apply(lambda m: m.name or "") for j in jobs])
        self.timeout_seconds = timeout
        self.report = _report(ns, json.loads(args["plan"]), names, jobs)
        self.register_outputs({"job_names": self.job_names, "report": self.report})


def _access(name: str, ns: str, lbl: Mapping[str, str], jobs: list[str], opts: pulumi.ResourceOptions
            ) -> tuple[core.ServiceAccount, rbac.Role, rbac.RoleBinding]:
    """The pods' service account, allowed to patch the check's own Jobs (the report's annotation) and nothing else."""
    account = core.ServiceAccount(f"{name}-account", metadata=meta.ObjectMetaArgs(name=name, namespace=ns, labels=lbl),
                                  automount_service_account_token=False, opts=opts)
    role = rbac.Role(f"{name}-role", metadata=meta.ObjectMetaArgs(name=name, namespace=ns, labels=lbl),
                     rules=[rbac.PolicyRuleArgs(api_groups=["batch"], resources=["jobs"], verbs=["patch"],
                                                resource_names=jobs)], opts=opts)
    binding = rbac.RoleBinding(
        f"{name}-binding", metadata=meta.ObjectMetaArgs(name=name, namespace=ns, labels=lbl),
        role_ref=rbac.RoleRefArgs(api_group="rbac.authorization.k8s.io", kind="Role", name=name),
        subjects=[rbac.SubjectArgs(kind="ServiceAccount", name=name, namespace=ns)], opts=opts)
    return account, role, binding


def _report(ns: str, plan: dict[str, Any], names: list[str],
            jobs: Sequence[k8s.batch.v1.Job]) -> pulumi.Output[dict[str, object]]:
    """The stack output ``fabricCheck``: the plan's paths with their floor, and each Job's report (``fabric_report``)
    as Pulumi read the Job once it completed."""
    threshold = float(plan["threshold"])
    planned = {p["name"]: p for p in plan["paths"]}

    def shape(reads: list[Any]) -> dict[str, object]:
        groups = [group_output(getattr(m, "annotations", None), ns, job, job_state(st), planned, threshold)
                  for job, (m, st) in zip(names, reads)]
        return {"status": check_status(groups), "namespace": ns, "threshold": threshold,
                "jobs": [g["job"] for g in groups],
                "paths": [{k: p[k] for k in ("name", "collective", "expect", "expectedBusbwGBs", "basis")} | {
                    "ranks": len(p["ranks"]), "floorBusbwGBs": round(float(p["expectedBusbwGBs"]) * threshold, 2)}
                    for p in plan["paths"]],
                "groups": groups}
    return pulumi.Output.all(*[pulumi.Output.all(j.metadata, j.status) for j in jobs]).apply(shape)


def _checked(args: FabricCheckArgs) -> None:
    """A group of at least two nodes that the pool holds, and a plan the probe can read."""
    nodes, groups = int(args["nodes"]), int(args["groups"])
    if nodes < 2 or groups < 1:
        raise pulumi.InputPropertyError("nodes", f"{nodes} node(s) x {groups} group(s): the check is for groups that "
                                        "span at least 2 nodes")
    if nodes * groups > int(args["pool"]["node_count"]):
        raise pulumi.InputPropertyError("pool.node_count", f"{groups} group(s) of {nodes} nodes need {nodes * groups} "
                                        f"nodes; the pool has {args['pool']['node_count']}")
    plan = json.loads(args["plan"])
    if not plan.get("paths") or int(plan.get("gpusPerNode", 0)) != int(args["pool"]["gpus_per_node"]):
        raise pulumi.InputPropertyError("plan", "needs paths and the pool's GPUs per node")


def check_pod_template(name: str, index: int, args: FabricCheckArgs, claims: list[dra.PodClaim],
                       claim_env: Mapping[str, str], lbl: Mapping[str, str]) -> core.PodTemplateSpecArgs:
    """The pod of one node of group ``index`` of check ``name``: the server's pod on the pool (module docstring),
    running the probe."""
    pool, ns, nodes = args["pool"], args["namespace"], int(args["nodes"])
    job = f"{name}-{index}"
    gpus = int(pool["gpus_per_node"])
    env: dict[str, pulumi.Input[str]] = {**(pool.get("env") or {}), **(args.get("engine_env") or {}), **claim_env,
                                         "LWS_LEADER_ADDRESS": f"{job}-0.{job}.{ns}.svc.cluster.local",
                                         "LWS_GROUP_SIZE": str(nodes), "K3_FABRIC_PLAN": args["plan"],
                                         "K3_NAMESPACE": ns, "K3_JOB_NAME": job,
                                         "PYTHONDONTWRITEBYTECODE": "1", "HOME": "/tmp"}
    setup = [*(pool.get("setup_commands") or ()), *(args.get("engine_setup") or ())]
    launch = (f"exec python3 -m torch.distributed.run --nnodes=$LWS_GROUP_SIZE --nproc-per-node={gpus} "
              f"--node-rank=$LWS_WORKER_INDEX --master-addr=$LWS_LEADER_ADDRESS --master-port={RENDEZVOUS_PORT} "
              f"{CODE_MOUNT}/{SCRIPT} --plan \"$K3_FABRIC_PLAN\"")
    host_vols, host_mounts = pods.host_volumes(pool)
    topology = pool.get("group_topology_label")
    affinity = core.AffinityArgs(pod_affinity=core.PodAffinityArgs(
        required_during_scheduling_ignored_during_execution=[core.PodAffinityTermArgs(
            topology_key=topology, label_selector=meta.LabelSelectorArgs(match_labels={JOB_NAME_LABEL: job}))],
    )) if topology else None
    return core.PodTemplateSpecArgs(
        metadata=meta.ObjectMetaArgs(labels={**lbl, **(pool.get("pod_labels") or {})},
                                     annotations=dict(pool.get("pod_annotations") or {}) or None),
        spec=core.PodSpecArgs(
            service_account_name=name,
            automount_service_account_token=True,  # the leader patches its report into its Job (``_access``)
            enable_service_links=False,
            restart_policy="Never",
            subdomain=job,
            node_selector=dict(pool["node_selector"]),
            affinity=affinity,
            tolerations=pods.tolerations(pool) or None,
            security_context=pods.pod_security(),
            containers=[core.ContainerArgs(
                name="check", image=args["image"], image_pull_policy="IfNotPresent",
                command=["/bin/bash", "-c"], args=["\n".join(["set -eo pipefail", *setup, launch])],
                env=[*pods.env_list(env), pods.field_env("LWS_WORKER_INDEX", COMPLETION_INDEX)],
                ports=[core.ContainerPortArgs(name="rendezvous", container_port=RENDEZVOUS_PORT, protocol="TCP")],
                resources=pods.gpu_resources(pool, dra.container_claims(claims)),
                security_context=pods.container_security(pool.get("capabilities") or ()),
                termination_message_policy="FallbackToLogsOnError",
                volume_mounts=[core.VolumeMountArgs(name="dshm", mount_path="/dev/shm"), *host_mounts,
                               core.VolumeMountArgs(name="code", mount_path=CODE_MOUNT, read_only=True)],
            )],
            resource_claims=dra.pod_resource_claims(claims),
            volumes=[pods.shm_volume(pool), *host_vols, core.VolumeArgs(
                name="code", config_map=core.ConfigMapVolumeSourceArgs(name=f"{name}-code"))],
        ),
    )


def _network_policy(name: str, ns: str, lbl: Mapping[str, str],
                    opts: pulumi.ResourceOptions) -> k8s.networking.v1.NetworkPolicy:
    """Ingress to the check's pods from the check's pods only (the rendezvous, NCCL's bootstrap and sockets)."""
    own = meta.LabelSelectorArgs(match_labels=pods.selector(name, "fabric-check"))
    return k8s.networking.v1.NetworkPolicy(
        f"{name}-network-policy",
        metadata=meta.ObjectMetaArgs(name=name, namespace=ns, labels=dict(lbl)),
        spec=k8s.networking.v1.NetworkPolicySpecArgs(
            pod_selector=own, policy_types=["Ingress"],
            ingress=[k8s.networking.v1.NetworkPolicyIngressRuleArgs(
                from_=[k8s.networking.v1.NetworkPolicyPeerArgs(pod_selector=own)])]),
        opts=opts,
    )


__all__ = ["COLLECTIVE_ENV_PREFIXES", "FabricCheck", "FabricCheckArgs", "check_pod_template", "default_timeout",
           "advice", "needed", "plan_json", "source"]
