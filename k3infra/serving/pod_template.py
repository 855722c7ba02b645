"""The pod templates of a ModelServer: the engine container (command, environment, ports, probes, GPUs), the marker
wait and the weights' init containers and volumes, on the pool's nodes as the store's reader."""

import re
from typing import Mapping, Sequence

import pulumi
import pulumi_kubernetes as k8s

from ..catalog import Engine, EngineName, Workload
from ..weightcopy.copier.caches import WARM_FLAG, warm_flag_text
from ..catalog.topologies import (
    INFERENCE_SERVING_LABEL,
    ROLE_LABEL as TOPOLOGY_ROLE_LABEL,
    ROUTING_SIDECARS,
    routing_sidecar_ssrf_args,
)
from . import dra, pods
from .engine import (
    LWS_WORKER_INDEX,
    SGLANG_DIST_PORT,
    EngineCommand,
    EngineSpec,
    Role,
    by_pod_index,
    sglang_command,
    vllm_command,
)
from .marker_wait import CHOOSE_WEIGHTS, marker_wait, node_choice_volumes
from .engine.disaggregation import ROLE_HOST_ENV
from .marker_wait import marker_wait
from .server_args import API_KEY_SECRET_KEY, ModelServerArgs
from .weight_loading import WeightLoading

core = k8s.core.v1
meta = k8s.meta.v1


ROLE_LABEL = "k3infra.dev/role"
POD_INDEX_LABEL = "apps.kubernetes.io/pod-index"
API_KEY_ENV = "K3_API_KEY"
VLLM_API_KEY_ENV = "VLLM_API_KEY"
"""vLLM reads its ``--api-key`` from this variable when the flag is absent."""


TERMINATION_GRACE_SECONDS = 120


ENGINE_CACHE_MOUNT = "/var/cache/k3infra"
"""Where the engine container sees the node's cache directory (``ModelServerArgs.engine_cache``)."""


def engine_cache_env(engine: Engine) -> dict[str, str]:
    """The engine's cache variables pointed under ENGINE_CACHE_MOUNT (catalog.engines ``cache_env``)."""
    return {k: f"{ENGINE_CACHE_MOUNT}/{sub}".rstrip("/") for k, sub in engine.cache_env.items()}


RANK_IN_GROUP = "${LWS_WORKER_INDEX:-${POD_INDEX:-0}}"
"""The pod's rank within its group: LWS sets ``LWS_WORKER_INDEX`` (0 on the leader) in every pod of a group since
v0.6.0; the StatefulSet shape's pods carry ``POD_INDEX``; a one-node server is rank 0."""


def warm_flag_command(engine: Engine, key: str, leader_host: str = "${LWS_LEADER_ADDRESS}") -> str:
    """In the engine container: the node's warm flag (copier.caches WARM_FLAG) removed at start, then, in the
    background, written with this pod's cache ``key`` and rank once its group's leader answers ``/health`` (the
    pod's own on the leader, ``leader_host``'s elsewhere: a worker rank serves no HTTP, and its caches are complete
    once the group serves), which tells the node agent the caches of that warm-up are worth saving."""
    if not re.fullmatch(r"[A-Za-z0-9._-]+", key):
        raise ValueError(f"cache key {key!r} is not a plain name (copier.caches cache_key makes one)")
    flag = f"{ENGINE_CACHE_MOUNT}/{WARM_FLAG}"
    return (f"rm -f {flag}; (r={RANK_IN_GROUP}; h=127.0.0.1; [ \"$r\" = 0 ] || h={leader_host}; "
            f"until python3 -c \"import urllib.request as u; u.urlopen('http://$h:{engine.port}{engine.health_path}', "
            f"timeout=5)\" 2>/dev/null; do sleep 30; done; printf %s \"{warm_flag_text(key, '$r')}\" > {flag}) &")


def engine_cache_volume(args: ModelServerArgs) -> tuple[list[core.VolumeArgs], list[core.VolumeMountArgs]]:
    """The node directory of the engine's caches (created if missing) and its mount; none without
    ``engine_cache``."""
    path = args.get("engine_cache")
    if not path:
        return [], []
    return ([core.VolumeArgs(name="engine-cache", host_path=core.HostPathVolumeSourceArgs(
                path=path, type="DirectoryOrCreate"))],
            [core.VolumeMountArgs(name="engine-cache", mount_path=ENGINE_CACHE_MOUNT)])

class PodTemplates:
    """Pod templates of one ModelServer."""

    def __init__(self, name: str, args: ModelServerArgs, spec: EngineSpec, weights: WeightLoading, budget: int):
        self.name, self.args, self.spec, self.weights, self.budget = name, args, spec, weights, budget
        self.left_off: set[str] = set()
        """The recipe variables some command left off (``EngineCommand.left_off``)."""

    def _commands(self, role: Role, workload: Workload) -> tuple[str, EngineCommand]:
        """(the container's bash script, the command of the role whose ports and probes apply)."""
        spec, w, pool = self.spec, self.weights, self.args["pool"]
        setup = list(pool.get("setup_commands") or ())
        if node_choice_volumes(self.args)[0]:
            setup.append(CHOOSE_WEIGHTS)
        dist_host = f"{self.name}-dist.{self.args['namespace']}.svc.cluster.local"
        warm_key = self.args.get("warm_key")
        if warm_key and self.args.get("engine_cache"):
            setup.append(warm_flag_command(spec.engine, warm_key, dist_host if workload == Workload.STATEFUL_SET
                                           else "${LWS_LEADER_ADDRESS}"))
        model = "${K3_MODEL}"
        api = bool(self.args.get("api_key_secret"))
        draft = "${K3_DRAFT_MODEL}" if w.draft_path is not None else None
        if spec.engine.name == EngineName.VLLM:
            vllm_key = VLLM_API_KEY_ENV if api else None
            if workload == Workload.STATEFUL_SET:
                leader = vllm_command(spec, model=model, role=Role.LEADER, leader_address=dist_host,
                                      api_key_env=vllm_key, draft_model=draft)
                worker = vllm_command(spec, model=model, role=Role.WORKER, node_rank="${POD_INDEX}",
                                      leader_address=dist_host, draft_model=draft)
                return by_pod_index(leader, worker, setup), leader
            serves = role != Role.WORKER or (spec.role is not None and spec.role.data_parallel)
            cmd = vllm_command(spec, model=model, role=role, api_key_env=vllm_key if serves else None,
                               draft_model=draft)
            return cmd.script(setup), cmd
        key_env = API_KEY_ENV if api else None
        if spec.nodes == 1:
            cmd = sglang_command(spec, model=model, draft_model=draft, api_key_env=key_env)
        elif workload == Workload.STATEFUL_SET:
            cmd = sglang_command(spec, model=model, node_rank="${POD_INDEX}", draft_model=draft, api_key_env=key_env,
                                 dist_init_addr=f"{dist_host}:{SGLANG_DIST_PORT}")
        else:
            rank = "0" if role == Role.LEADER else LWS_WORKER_INDEX
            cmd = sglang_command(spec, model=model, node_rank=rank, draft_model=draft, api_key_env=key_env,
                                 dist_init_addr=f"$(LWS_LEADER_ADDRESS):{SGLANG_DIST_PORT}")
        return cmd.script(setup), cmd

    def _ports_and_probes(self, cmd: EngineCommand, shared: bool) -> tuple[
            list[core.ContainerPortArgs], tuple[core.ProbeArgs | None, core.ProbeArgs | None, core.ProbeArgs | None]]:
        """The engine container's ports (HTTP where it serves, named ``engine`` behind a routing sidecar, then the
        command's others) and its start-up, readiness and liveness probes."""
        spec = self.spec
        engine_port = "engine" if spec.role is not None and spec.role.sidecar else "http"
        ports = []
        if cmd.serves_http or shared:
            ports.append(core.ContainerPortArgs(name=engine_port, container_port=spec.http_port, protocol="TCP"))
        for pname, number in sorted(cmd.extra_ports.items()):
            ports.append(core.ContainerPortArgs(name=pname, container_port=number, protocol="TCP"))
        if shared:
            return ports, pods.leader_only_probes(spec.engine.port, spec.engine.health_path, self.budget)
        if cmd.serves_http:
            return ports, pods.http_probes(engine_port, spec.engine.health_path, self.budget)
        return ports, (None, None, None)

    def _topology_labels(self, serves: bool) -> dict[str, str]:
        """llm-d's labels on the pods of a topology's role: its role and, on the pods that take requests (every pod
        of a DEP group, a TEP group's leader), that they serve: the InferencePool selects pods by it, and a TEP
        worker has nothing on the serving port (catalog/topologies.py)."""
        role = self.args.get("role")
        if role is None:
            return {}
        return {TOPOLOGY_ROLE_LABEL: role["name"], **({INFERENCE_SERVING_LABEL: "true"} if serves else {})}

    def _sidecars(self, serves: bool) -> tuple[list[core.ContainerArgs], list[core.VolumeArgs]]:
        """llm-d's routing sidecar on a serving pod of a role that runs one (decode), as a native sidecar: it takes
        the serving port and hands each request to the engine on its own (catalog.topologies.ROUTING_SIDECARS:
        llm-d-router's, with the engine's connector), and the volumes it needs. Behind the gateway's pool its SSRF
        protection is on: it sends prefills only to the pool's pods, which it watches with the pod's service account,
        whose token only it mounts (``routing_sidecar_ssrf_args``, ``pods.api_token_volume``)."""
        spec = self.spec
        if not serves or spec.role is None or not spec.role.sidecar:
            return [], []
        sidecar = ROUTING_SIDECARS[spec.engine.name]
        role = self.args.get("role")
        pool = role.get("inference_pool") if role is not None else None
        ssrf = routing_sidecar_ssrf_args(*pool.split("/", 1)) if pool else ()
        volumes, mounts = [], []
        if ssrf:
            volume, mount = pods.api_token_volume("routing-proxy-token")
            volumes, mounts = [volume], [mount]
        return [core.ContainerArgs(
            name="routing-proxy", image=sidecar.image, image_pull_policy="IfNotPresent",
            args=[f"--port={spec.engine.port}", f"{sidecar.engine_port_flag}={spec.http_port}", *sidecar.args, *ssrf],
            env=pods.env_list(dict(sidecar.env)) or None,
            ports=[core.ContainerPortArgs(name="http", container_port=spec.engine.port, protocol="TCP")],
            restart_policy="Always",
            resources=pods.small_resources("1", "1Gi", "2", "2Gi"),
            security_context=core.SecurityContextArgs(allow_privilege_escalation=False, run_as_non_root=True,
                                                      capabilities=core.CapabilitiesArgs(drop=["ALL"])),
            volume_mounts=mounts or None,
        )], volumes

    def template(self, role: Role, workload: Workload, role_labels: Mapping[str, str],
                 claims: Sequence[dra.PodClaim] = (), claim_env: Mapping[str, str] | None = None,
                 scan_annotations: Mapping[str, str] | None = None) -> core.PodTemplateSpecArgs:
        """The pod template of ``role`` (LEADER doubles as the StatefulSet's shared template), claiming ``claims``.
        ``scan_annotations`` go on the template where the workload's own metadata is not scanned (LWS)."""
        args, spec, w = self.args, self.spec, self.weights
        pool, store = args["pool"], args["store"]
        script, cmd = self._commands(role, workload)
        self.left_off.update(cmd.left_off)
        shared = workload == Workload.STATEFUL_SET
        env: list[core.EnvVarArgs] = []
        if shared:
            env.append(pods.field_env("POD_INDEX", f"metadata.labels['{POD_INDEX_LABEL}']"))
        env.append(core.EnvVarArgs(name="K3_MODEL", value=w.model_path))
        if w.draft_path is not None:
            env.append(core.EnvVarArgs(name="K3_DRAFT_MODEL", value=w.draft_path))
        values: dict[str, pulumi.Input[str]] = {**(pool.get("env") or {}), **w.env}
        values.update(claim_env or {})
        values.update(cmd.env)
        cache_vols, cache_mounts = engine_cache_volume(args)
        values.update(engine_cache_env(spec.engine) if cache_vols else {})
        env += pods.env_list(values)
        if spec.role is not None and spec.role.name is not None:
            env.append(pods.field_env(ROLE_HOST_ENV[spec.engine.name], "status.podIP"))  # llm-d wide-ep-lws decode.yaml
        env += w.secret_env
        if args.get("api_key_secret"):
            key_env = VLLM_API_KEY_ENV if spec.engine.name == EngineName.VLLM else API_KEY_ENV
            env.append(pods.secret_env(key_env, args["api_key_secret"], API_KEY_SECRET_KEY))  # pyright: ignore[reportTypedDictNotRequiredAccess]

        serves = cmd.serves_http or shared
        ports, (startup, readiness, liveness) = self._ports_and_probes(cmd, shared)

        host_vols, host_mounts = pods.host_volumes(pool)
        wait, wait_volumes = marker_wait(args)
        mounts = [core.VolumeMountArgs(name="dshm", mount_path="/dev/shm"), *w.mounts, *host_mounts, *cache_mounts,
                  *node_choice_volumes(args)[0]]
        container = core.ContainerArgs(
            name="engine",
            image=args["image"],
            image_pull_policy="IfNotPresent",
            command=["/bin/bash", "-c"],
            args=[script],
            env=env,
            ports=ports or None,
            resources=pods.gpu_resources(pool, dra.container_claims(claims)),
            startup_probe=startup,
            readiness_probe=readiness,
            liveness_probe=liveness,
            security_context=pods.container_security(pool.get("capabilities") or ()),
            volume_mounts=mounts,
        )
        pod_labels = {**pods.labels(self.name, "model-server"), **role_labels, **self._topology_labels(serves),
                      **(store["reader"].get("pod_labels") or {}), **(pool.get("pod_labels") or {})}
        annotations = {**(pool.get("pod_annotations") or {}), **w.pod_annotations, **(scan_annotations or {})}
        sidecars, sidecar_vols = self._sidecars(serves)
        return core.PodTemplateSpecArgs(
            metadata=meta.ObjectMetaArgs(labels=pod_labels, annotations=annotations or None),
            spec=core.PodSpecArgs(
                service_account_name=store["reader"]["name"],
                automount_service_account_token=False,
                enable_service_links=False,
                node_selector=dict(pool["node_selector"]),
                affinity=dra.group_affinity(pool.get("group_topology_label"), pods.selector(self.name, "model-server"))
                if spec.nodes > 1 else None,
                tolerations=pods.tolerations(pool) or None,
                security_context=pods.pod_security(),
                termination_grace_period_seconds=TERMINATION_GRACE_SECONDS,
                init_containers=[*wait, *w.init_containers, *sidecars] or None,
                containers=[container],
                resource_claims=dra.pod_resource_claims(claims),
                volumes=[pods.shm_volume(pool), *w.volumes, *host_vols, *cache_vols, *wait_volumes, *sidecar_vols],
            ),
        )
