"""Typed building blocks of the serving pods: probes, security contexts, resources, volumes, labels.

Pure functions returning pulumi-kubernetes ``...Args`` (never raw dicts: an unknown key in a dict is dropped
without a word). The model server and the weight sync compose them.
"""

import math
from typing import Mapping, Sequence

import pulumi
import pulumi_kubernetes as k8s

from ..catalog import Accelerator
from ..catalog.kv_offload import SERVER_POD_MEMORY_SHARE
from ..sizing import PROBE_PERIOD_SECONDS
from .contract import GpuPool, SyncNodes

core = k8s.core.v1
meta = k8s.meta.v1

PART_OF = "k3infra"

DEFAULT_SHM = "64Gi"
"""/dev/shm size when the pool states none (002 §4.4 ``sizeLimit: 64Gi``)."""

DEFAULT_GPU_RESOURCE = "nvidia.com/gpu"

READINESS_PERIOD_SECONDS = 10
READINESS_FAILURES = 3
LIVENESS_PERIOD_SECONDS = 30
LIVENESS_TIMEOUT_SECONDS = 10
LIVENESS_FAILURES = 10
"""Lenient liveness: ten failed checks 30 s apart (five minutes) before a restart, because a restart
reloads a terabyte of weights."""

PROBE_TIMEOUT_SECONDS = 5


def labels(instance: str, component: str, **extra: str) -> dict[str, str]:
    """Recommended labels (app.kubernetes.io/*) of one k3infra object."""
    out = {
        "app.kubernetes.io/name": instance,
        "app.kubernetes.io/instance": instance,
        "app.kubernetes.io/component": component,
        "app.kubernetes.io/part-of": PART_OF,
    }
    out.update(extra)
    return out


def selector(instance: str, component: str) -> dict[str, str]:
    """The labels that select one component's pods."""
    return {"app.kubernetes.io/instance": instance, "app.kubernetes.io/component": component}


def startup_failure_threshold(budget_seconds: int, period_seconds: int = PROBE_PERIOD_SECONDS) -> int:
    """Start-up probe failures allowed so that failures x period covers the budget."""
    return max(1, math.ceil(budget_seconds / period_seconds))


def http_probes(port: str, path: str, budget_seconds: int) -> tuple[core.ProbeArgs, core.ProbeArgs, core.ProbeArgs]:
    """(startup, readiness, liveness) on ``path``.

    The start-up probe tolerates ``budget_seconds`` of failures (the sizing's 1.5 x (load + warm-up)), so a
    slow load is never killed (002 appendix item 5); readiness and liveness only start after it succeeds.
    """
    def get() -> core.HTTPGetActionArgs:
        return core.HTTPGetActionArgs(path=path, port=port)

    return (
        core.ProbeArgs(http_get=get(), period_seconds=PROBE_PERIOD_SECONDS, timeout_seconds=PROBE_TIMEOUT_SECONDS,
                       failure_threshold=startup_failure_threshold(budget_seconds)),
        core.ProbeArgs(http_get=get(), period_seconds=READINESS_PERIOD_SECONDS, timeout_seconds=PROBE_TIMEOUT_SECONDS,
                       failure_threshold=READINESS_FAILURES),
        core.ProbeArgs(http_get=get(), period_seconds=LIVENESS_PERIOD_SECONDS, timeout_seconds=LIVENESS_TIMEOUT_SECONDS,
                       failure_threshold=LIVENESS_FAILURES),
    )


def leader_only_probes(port: int, path: str, budget_seconds: int,
                       index_env: str = "POD_INDEX") -> tuple[core.ProbeArgs, core.ProbeArgs, core.ProbeArgs]:
    """Probes for a StatefulSet whose pods share one template (000): pod 0 serves HTTP and is checked on
    ``path``; the other ranks serve nothing and pass. Same budgets as ``http_probes``."""
    check = (f'[ "${{{index_env}}}" != "0" ] || python3 -c "import urllib.request; '
             f"urllib.request.urlopen('http://127.0.0.1:{port}{path}', timeout=4)\"")

    def run() -> core.ExecActionArgs:
        return core.ExecActionArgs(command=["/bin/sh", "-c", check])

    return (
        core.ProbeArgs(exec_=run(), period_seconds=PROBE_PERIOD_SECONDS, timeout_seconds=PROBE_TIMEOUT_SECONDS,
                       failure_threshold=startup_failure_threshold(budget_seconds)),
        core.ProbeArgs(exec_=run(), period_seconds=READINESS_PERIOD_SECONDS, timeout_seconds=PROBE_TIMEOUT_SECONDS,
                       failure_threshold=READINESS_FAILURES),
        core.ProbeArgs(exec_=run(), period_seconds=LIVENESS_PERIOD_SECONDS, timeout_seconds=LIVENESS_TIMEOUT_SECONDS,
                       failure_threshold=LIVENESS_FAILURES),
    )


def container_security(capabilities: Sequence[str] = (), read_only_root: bool = False) -> core.SecurityContextArgs:
    """No privilege escalation, every capability dropped except those the fabric needs."""
    return core.SecurityContextArgs(
        allow_privilege_escalation=False,
        privileged=False,
        read_only_root_filesystem=read_only_root,
        capabilities=core.CapabilitiesArgs(drop=["ALL"], add=list(capabilities) or None),
    )


def pod_security(non_root_uid: int | None = None) -> core.PodSecurityContextArgs:
    """RuntimeDefault seccomp; with ``non_root_uid`` the pod runs as that user and group."""
    if non_root_uid is None:
        return core.PodSecurityContextArgs(seccomp_profile=core.SeccompProfileArgs(type="RuntimeDefault"))
    return core.PodSecurityContextArgs(
        run_as_non_root=True, run_as_user=non_root_uid, run_as_group=non_root_uid, fs_group=non_root_uid,
        seccomp_profile=core.SeccompProfileArgs(type="RuntimeDefault"),
    )


def gpu_resources(pool: GpuPool, claims: Sequence[core.ResourceClaimArgs] | None = None) -> core.ResourceRequirementsArgs:
    """All of a node's GPUs (and the fabric's extra resources), requested and limited alike; CPU and memory
    when the pool states them (requests = limits, so SGLang's CPU affinity gets whole cores, 000); the pod's DRA
    ``claims``."""
    gpu = pool.get("gpu_resource") or DEFAULT_GPU_RESOURCE
    amounts: dict[str, str] = {gpu: str(int(pool["gpus_per_node"]))}
    amounts.update({k: str(v) for k, v in (pool.get("extra_resources") or {}).items()})
    cpu, memory = pool.get("cpu_request"), pool.get("memory_request")
    if cpu:
        amounts["cpu"] = str(cpu)
    if memory:
        amounts["memory"] = str(memory)
    return core.ResourceRequirementsArgs(requests=dict(amounts), limits=dict(amounts), claims=list(claims or ()) or None)


NODE_SHARE = SERVER_POD_MEMORY_SHARE
"""Share of a node's vCPUs and memory the serving pod requests when its pool states no figure: the rest covers
the kubelet's reservation and the DaemonSets (CNI, CSI, device plugins), so the pod schedules and is not the
first evicted (the same share k3infra/aws/nodegroup.py applies on EKS; the host KV tier is sized within it,
catalog.kv_offload)."""


def node_requests(accelerator: Accelerator) -> tuple[str, str]:
    """(CPU, memory) a serving container asks of one node of ``accelerator``: ``NODE_SHARE`` of the catalog's
    vCPUs and host memory (p6-b300.48xlarge: ``("163", "3481Gi")``)."""
    return str(int(accelerator.vcpus * NODE_SHARE)), f"{int(accelerator.host_memory_gib * NODE_SHARE)}Gi"


def with_node_resources(pool: GpuPool, accelerator: Accelerator | None) -> GpuPool:
    """The pool with CPU and memory requests from its machine type (``node_requests``) where the pool states
    none, so every server pod has requests and limits."""
    if accelerator is None:
        return pool
    out = GpuPool(**pool)
    cpu, memory = node_requests(accelerator)
    if not out.get("cpu_request"):
        out["cpu_request"] = cpu
    if not out.get("memory_request"):
        out["memory_request"] = memory
    return out


def small_resources(cpu: str, memory: str, cpu_limit: str, memory_limit: str) -> core.ResourceRequirementsArgs:
    """Requests and limits of a helper container."""
    return core.ResourceRequirementsArgs(requests={"cpu": cpu, "memory": memory},
                                         limits={"cpu": cpu_limit, "memory": memory_limit})


def tolerations(pool: GpuPool | SyncNodes) -> list[core.TolerationArgs]:
    """The pool's tolerations (operator Exists and effect NoSchedule unless stated)."""
    out = []
    for t in pool["tolerations"]:
        op = t.get("operator") or "Exists"
        out.append(core.TolerationArgs(key=t["key"], operator=op, value=t.get("value") if op == "Equal" else None,
                                       effect=t.get("effect") or "NoSchedule"))
    return out


def shm_volume(pool: GpuPool) -> core.VolumeArgs:
    """/dev/shm as a memory-backed emptyDir (NCCL and the engine's worker processes share tensors through it)."""
    return core.VolumeArgs(name="dshm", empty_dir=core.EmptyDirVolumeSourceArgs(
        medium="Memory", size_limit=pool.get("shm_size") or DEFAULT_SHM))


def host_volumes(pool: GpuPool) -> tuple[list[core.VolumeArgs], list[core.VolumeMountArgs]]:
    """The node directories the pool asks for (000: NVIDIA libraries, the gIB NCCL plugin), read-only."""
    volumes, mounts = [], []
    for m in pool.get("host_mounts") or ():
        volumes.append(core.VolumeArgs(name=m["name"], host_path=core.HostPathVolumeSourceArgs(
            path=m["host_path"], type="Directory")))
        mounts.append(core.VolumeMountArgs(name=m["name"], mount_path=m["mount_path"], read_only=True))
    return volumes, mounts


def env_list(values: Mapping[str, pulumi.Input[str]]) -> list[core.EnvVarArgs]:
    """Literal environment variables, in the order given."""
    return [core.EnvVarArgs(name=k, value=v) for k, v in values.items()]


API_TOKEN_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
"""Where client-go's in-cluster configuration reads the service account's token, CA and namespace
(k8s.io/client-go rest.InClusterConfig)."""


def api_token_volume(name: str) -> tuple[core.VolumeArgs, core.VolumeMountArgs]:
    """The pod's service-account token, CA bundle and namespace, as the kubelet's automount would give them, for one
    container only (mounted read-only at ``API_TOKEN_DIR``): the pod keeps ``automountServiceAccountToken: false``, so
    its other containers have no token (a projected volume, as the automount's own ``kube-api-access-*``)."""
    volume = core.VolumeArgs(name=name, projected=core.ProjectedVolumeSourceArgs(sources=[
        core.VolumeProjectionArgs(service_account_token=core.ServiceAccountTokenProjectionArgs(
            path="token", expiration_seconds=3607)),
        core.VolumeProjectionArgs(config_map=core.ConfigMapProjectionArgs(
            name="kube-root-ca.crt", items=[core.KeyToPathArgs(key="ca.crt", path="ca.crt")])),
        core.VolumeProjectionArgs(downward_api=core.DownwardAPIProjectionArgs(items=[core.DownwardAPIVolumeFileArgs(
            path="namespace", field_ref=core.ObjectFieldSelectorArgs(field_path="metadata.namespace"))])),
    ]))
    return volume, core.VolumeMountArgs(name=name, mount_path=API_TOKEN_DIR, read_only=True)


def secret_env(name: str, secret: str, key: str, optional: bool = False) -> core.EnvVarArgs:
    """An environment variable read from a Kubernetes Secret (the only way secrets reach pods)."""
    return core.EnvVarArgs(name=name, value_from=core.EnvVarSourceArgs(
        secret_key_ref=core.SecretKeySelectorArgs(name=secret, key=key, optional=optional or None)))


def field_env(name: str, path: str) -> core.EnvVarArgs:
    """An environment variable from the downward API."""
    return core.EnvVarArgs(name=name, value_from=core.EnvVarSourceArgs(
        field_ref=core.ObjectFieldSelectorArgs(field_path=path)))


def avoid_nodes(node_selector: Mapping[str, str]) -> core.AffinityArgs | None:
    """Node affinity that keeps a pod off the nodes ``node_selector`` selects (the sync Job off GPU nodes)."""
    if not node_selector:
        return None
    return core.AffinityArgs(node_affinity=core.NodeAffinityArgs(
        required_during_scheduling_ignored_during_execution=core.NodeSelectorArgs(node_selector_terms=[
            core.NodeSelectorTermArgs(match_expressions=[
                core.NodeSelectorRequirementArgs(key=k, operator="NotIn", values=[v])
                for k, v in sorted(node_selector.items())
            ])
        ])))


def gib(nbytes: float) -> str:
    """A Kubernetes quantity in whole GiB, rounded up."""
    return f"{math.ceil(nbytes / 2**30)}Gi"


def deny_all_ingress(name: str, namespace: str, component: str,
                     opts: pulumi.ResourceOptions) -> k8s.networking.v1.NetworkPolicy:
    """A NetworkPolicy admitting nothing to the pods of ``component`` (Jobs that listen on no port)."""
    return k8s.networking.v1.NetworkPolicy(
        f"{name}-network-policy",
        metadata=meta.ObjectMetaArgs(name=name, namespace=namespace, labels=labels(name, component)),
        spec=k8s.networking.v1.NetworkPolicySpecArgs(
            pod_selector=meta.LabelSelectorArgs(match_labels=selector(name, component)), policy_types=["Ingress"]),
        opts=opts)
