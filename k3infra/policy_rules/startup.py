"""``startup-budget-covers-load``: an inference server is not killed before its weights can have loaded: the
start-up probe's budget (or the liveness probe's, without one) is at least the catalog's load estimate at the
optimistic end of the loader's stated range plus the engine's warm-up. (The rule sees a manifest, not the
machine: k3infra's own budgets come from the machine's NIC and the bucket's limits, catalog.loaders, which the
rule cannot read; below the loader's fastest stated rate any budget kills every load.)
"""

import json
from fractions import Fraction
from typing import Any, Iterator, Mapping, Sequence

from ..catalog import ENGINES, LOADER_PROFILES, EngineName, Loader, Model, distribution
from ..catalog.assumptions import GCS_FUSE_CACHE_SIZE_OPTION
from ..sizing import load_estimate
from .base import Resource, as_int, as_list, get
from .workloads import PodTemplate, container_argv, engine_of, flag_value, kind_of, model_of, pod_templates


FUSE_DRIVERS = ("gcsfuse.csi.storage.gke.io", "s3.csi.aws.com", "blob.csi.azure.com", "ossplugin.csi.alibabacloud.com")


def probe_budget(probe: Mapping[str, Any]) -> int:
    """Seconds a probe tolerates before the kubelet gives up: initialDelay + failureThreshold x period."""
    return as_int(probe.get("initialDelaySeconds"), 0) + as_int(probe.get("failureThreshold"), 3) * as_int(probe.get("periodSeconds"), 10)


def loader_of(container: Mapping[str, Any], pod_spec: Mapping[str, Any]) -> Loader:
    """How a server container loads its weights, from its flags and volumes."""
    argv = container_argv(container)
    if flag_value(argv, "--load-format") == "runai_streamer":
        return Loader.STREAMER
    mounted = {get(m, "name") for m in as_list(container.get("volumeMounts"))}
    for v in as_list(pod_spec.get("volumes")):
        if get(v, "name") in mounted and (get(v, "csi.driver") in FUSE_DRIVERS or get(v, "persistentVolumeClaim")):
            return Loader.FUSE
    if as_list(pod_spec.get("initContainers")):
        return Loader.BUCKET_COPY
    return Loader.HUGGINGFACE if not mounted else Loader.BUCKET_COPY


def _caches_whole_objects(mount_options: str) -> bool:
    """A gcsfuse mount with its file cache on: a first read of a file at offset 0 downloads the whole object
    (catalog.distribution)."""
    options = mount_options.split(",")
    return any(o.startswith(GCS_FUSE_CACHE_SIZE_OPTION + ":") and o != GCS_FUSE_CACHE_SIZE_OPTION + ":0" for o in options)


def node_share(container: Mapping[str, Any], volumes: Sequence[Any], nodes: int) -> Fraction:
    """The part of the checkpoint one node of this server fetches (catalog.distribution), from the container's load
    format, the streamer's ``distributed`` and environment, and whether a mounted gcsfuse volume caches whole objects
    on range reads."""
    argv = container_argv(container)
    try:
        extra = json.loads((flag_value(argv, "--model-loader-extra-config") or "{}").strip("'\""))
    except ValueError:
        extra = {}
    env = {str(get(e, "name")): str(get(e, "value")) for e in as_list(container.get("env"))}
    split = distribution.read_split(flag_value(argv, "--load-format") or "", env=env,
                                    distributed=isinstance(extra, dict) and extra.get("distributed") is True)
    mounted = {get(m, "name") for m in as_list(container.get("volumeMounts"))}
    whole_objects = any(_caches_whole_objects(str(get(v, "csi.volumeAttributes.mountOptions", "")))
                        for v in volumes if get(v, "name") in mounted)
    world = (as_int(flag_value(argv, "--tensor-parallel-size") or flag_value(argv, "--tp-size"), 1)
             * as_int(flag_value(argv, "--pipeline-parallel-size") or flag_value(argv, "--pp-size"), 1))
    return distribution.node_share(split, nodes, max(1, world // max(1, nodes)), whole_objects)


def _estimate(model: Model, loader: Loader, nodes: int, engine: EngineName, draft: bool,
              whole: bool = False, share: Fraction | None = None) -> tuple[int, int]:
    """(load seconds, warm-up seconds) the budget must cover. With a copy to local disk first, a probe covers
    only the local read (the copy runs before the server starts); ``whole`` budgets (a deployment deadline)
    cover the copy too. ``share``: the part of the checkpoint a node fetches (``node_share``)."""
    est = load_estimate(model, loader, nodes, with_draft_model=draft, share=share)
    fetch = est.optimistic_fetch_seconds + est.local_read_seconds
    load = est.local_read_seconds if loader == Loader.BUCKET_COPY and not whole else fetch
    return load, ENGINES[engine].warmup_seconds


def _budget_findings(label: str, budget: int, probe_name: str, model: Model, loader: Loader, nodes: int,
                     engine: EngineName, draft: bool = False, whole: bool = False,
                     share: Fraction | None = None) -> Iterator[str]:
    load, warmup = _estimate(model, loader, nodes, engine, draft, whole, share)
    if budget < load + warmup:
        part = "" if share is None else f", {share} of the checkpoint from the bucket per node"
        yield (f"{label}: the {probe_name} gives up after {budget:,} s, but loading {model.display_name} "
               f"({loader}, {nodes} node(s){part}) is estimated at {load:,} s plus {warmup:,} s warm-up = "
               f"{load + warmup:,} s at the fastest the loader is stated to go ({LOADER_PROFILES[loader].source}); it "
               "would be killed mid-load")


def servers_of(templates: Sequence[PodTemplate]) -> dict[str, tuple[EngineName, Model, Loader]]:
    """Container name → (engine, model, loader) for the inference servers among a workload's templates."""
    out: dict[str, tuple[EngineName, Model, Loader]] = {}
    for t in templates:
        for c in as_list(t.spec.get("containers")):
            engine, model = engine_of(c), model_of(c)
            if engine is not None and model is not None:
                out.setdefault(str(get(c, "name")), (engine, model, loader_of(c, t.spec)))
    return out


def _with_draft(container: Mapping[str, Any]) -> bool:
    argv = container_argv(container)
    return flag_value(argv, "--speculative-draft-model-path") is not None or flag_value(argv, "--speculative-algorithm") == "DSPARK"


def check_startup_budget(resources: Sequence[Resource], _config: Mapping[str, Any]) -> Iterator[tuple[str, str | None]]:
    """Rule ``startup-budget-covers-load``. In a LeaderWorkerSet the workers (vLLM headless ranks, SGLang ranks) load
    their share too: a worker container named like the leader's server is held to the same estimate."""
    for r in resources:
        templates = pod_templates(r)
        servers = servers_of(templates)
        for t in templates:
            for c in as_list(t.spec.get("containers")):
                found = servers.get(str(get(c, "name")))
                if found is None:
                    continue
                engine, model, loader = found
                nodes = max(t.nodes, as_int(flag_value(container_argv(c), "--nnodes"), 1))
                if get(c, "startupProbe"):
                    budget, which = probe_budget(c["startupProbe"]), "startup probe"
                elif get(c, "livenessProbe"):
                    budget, which = probe_budget(c["livenessProbe"]), "liveness probe (there is no startup probe)"
                else:
                    continue  # nothing kills it while it loads
                role = f" ({t.role})" if t.role != kind_of(r) else ""
                label = f"{kind_of(r)} {r.name}{role}, container {get(c, 'name')}"
                share = node_share(c, as_list(t.spec.get("volumes")), nodes)
                for m in _budget_findings(label, budget, which, model, loader, nodes, engine, _with_draft(c),
                                          share=share):
                    yield m, r.urn
        if kind_of(r) == "InferenceEndpointConfig":
            yield from ((m, r.urn) for m in _hyperpod_endpoint(r))
        if r.type == "alicloud:pai/service:Service":
            yield from ((m, r.urn) for m in _eas_service(r))


def _hyperpod_endpoint(r: Resource) -> Iterator[str]:
    """SageMaker HyperPod ``InferenceEndpointConfig``: the deployment deadline covers the prefetch from S3 and
    the load; the worker's start-up probe covers the load from the prefetched copy. A ``kubernetesVolume`` source is
    judged as a bucket copy: its volume is the node's NVMe, filled from S3 by an init container where the node holds
    no copy (SageMaker's NVMe page, "Kubernetes volume with fallback"; k3infra.aws.hyperpod_weights)."""
    spec = get(r.props, "spec", {})
    worker = get(spec, "worker", {})
    engine = engine_of(worker)
    model = model_of(worker) or model_of({"args": [get(spec, "modelName", "")]})
    if engine is None or model is None:
        return
    source = get(spec, "modelSourceConfig", {})
    kind = get(source, "modelSourceType")
    loader = (Loader.HUGGINGFACE if kind == "huggingface" else
              Loader.BUCKET_COPY if get(source, "prefetchEnabled") is True or kind == "kubernetesVolume"
              else Loader.FUSE)
    label = f"InferenceEndpointConfig {r.name}"
    yield from _budget_findings(label, as_int(get(spec, "maxDeployTimeInSeconds"), 3600),
                                "deployment deadline (maxDeployTimeInSeconds)", model, loader, 1, engine, whole=True)
    startup = get(worker, "probes.startupProbe")
    probe, which = (startup, "startup probe") if startup else (get(worker, "probes.livenessProbe"), "liveness probe")
    if probe:
        yield from _budget_findings(label, probe_budget(probe), which, model, loader, 1, engine)


def _eas_probe_budget(check: Mapping[str, Any]) -> int:
    return (as_int(check.get("initial_delay_seconds"), 0) +
            as_int(check.get("failure_threshold"), 3) * as_int(check.get("period_seconds"), 10))


def _eas_service(r: Resource) -> Iterator[str]:
    """PAI-EAS: ``startup_check`` (or, without it, ``health_check``) of each container in the service config."""
    raw = get(r.props, "serviceConfig")
    try:
        config = json.loads(raw) if isinstance(raw, str) else raw
    except ValueError:
        return
    if not isinstance(config, Mapping):
        return
    nodes = max(1, as_int(get(config, "unit.size"), 1))
    oss = any(get(v, "oss") for v in as_list(config.get("storage")))
    for c in as_list(config.get("containers")):
        engine, model = engine_of(c), model_of(c)
        if engine is None or model is None:
            continue
        check, which = ((c["startup_check"], "startup_check") if get(c, "startup_check")
                        else (get(c, "health_check"), "health_check (there is no startup_check)"))
        if not check:
            continue
        loader = Loader.STREAMER if flag_value(container_argv(c), "--load-format") == "runai_streamer" else (
            Loader.FUSE if oss else Loader.HUGGINGFACE)
        yield from _budget_findings(f"PAI-EAS service {r.name}", _eas_probe_budget(check), which, model, loader, nodes,
                                    engine, _with_draft(c), share=node_share(c, (), nodes))
