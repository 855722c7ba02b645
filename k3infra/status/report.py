"""The cold start of a deployed stack, phase by phase: read the cluster (``observe``), judge it (``evaluate``).

``evaluate`` is a pure function of what the stack deploys, what the cluster returned and the time, so every phase
is testable from pod and Job objects alone. The lines, their states and the report's exit code are ``lines``'.
"""

import json
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from .. import fabric_probe as probe
from ..clock import parse
from ..serving import fabric_report
from . import access
from .copy_progress import STALL_SECONDS, CopyProgress, summarize
from .expected import WEIGHTS_INIT, Expected, GatewayRef, JobRef
from .kube import Kube
from .lines import FAILED, OK, PROGRESS, Line, Report
from .managed import hyperpod

IMAGE_ERRORS = frozenset({"ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull"})
CONTAINER_ERRORS = frozenset({"CreateContainerConfigError", "CreateContainerError", "RunContainerError"})


@dataclass(frozen=True)
class Snapshot:
    """What the cluster returned: nodes, the namespace's pods by purpose, the Jobs and Services (None: absent)."""

    nodes: list[dict[str, Any]]
    gpu_nodes: list[dict[str, Any]]
    server_pods: list[dict[str, Any]]
    job_pods: dict[str, list[dict[str, Any]]]
    jobs: dict[str, dict[str, Any] | None]
    services: dict[str, dict[str, Any] | None]
    copy_progress: CopyProgress | None = None
    """The sync workers' progress objects, read from the bucket (``copy_progress.observe``); None: not read."""
    endpoint_config: dict[str, Any] | None = None
    """HyperPod: the InferenceEndpointConfig as the operator reports it (None: not created yet)."""
    server_replicas: int | None = None
    """The server workload's live replica count (its ``/scale``); None: not read, or the workload is absent."""
    roles: dict[str, tuple[list[dict[str, Any]], int | None]] = field(default_factory=dict)
    """Each role's server pods and live replica count (``Expected.roles``), by role."""
    gateway: dict[str, Any] | None = None
    """The inference gateway's Gateway as its controller reports it (None: not created yet, or not read)."""


def _selector(labels: dict[str, str]) -> str:
    return ",".join(f"{k}={v}" for k, v in sorted(labels.items()))


def _server_pods(kube: Kube, exp: Expected, live: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], int | None]:
    """A server's pods (by its selector, by name) and its workload's live replica count (``/scale``)."""
    server = sorted((p for p in live if exp.server_selector and all(
        (p["metadata"].get("labels") or {}).get(k) == v for k, v in exp.server_selector.items())),
        key=lambda p: p["metadata"]["name"])
    scale = kube.get(access.scale_path(exp.namespace, exp.server_api_version, exp.server_kind, exp.server_name)) \
        if exp.server_kind in access.SCALE_RESOURCES else None
    replicas = (scale or {}).get("spec", {}).get("replicas")
    return server, int(replicas) if replicas is not None else None


def observe(kube: Kube, exp: Expected) -> Snapshot:
    """Every read status makes (each is a rule of access.roles): list nodes, list pods, get Jobs, Services, the
    server workload's scale and the inference gateway's Gateway."""
    ns = exp.namespace
    nodes = (kube.get("/api/v1/nodes") or {}).get("items", [])
    gpu = [n for n in nodes if exp.gpu_node_selector.items() <= (n["metadata"].get("labels") or {}).items()]
    pods = (kube.get(f"/api/v1/namespaces/{ns}/pods") or {}).get("items", [])
    jobs = {j.name: kube.get(f"/apis/batch/v1/namespaces/{ns}/jobs/{j.name}")
            for j in (exp.sync, exp.placement, exp.verify, *exp.fabric) if j}
    services = {name: kube.get(f"/api/v1/namespaces/{ns}/services/{name}") for name, _ in exp.services}
    live = [p for p in pods if not p["metadata"].get("deletionTimestamp")]

    def labelled(key: str, value: str) -> list[dict[str, Any]]:
        return sorted((p for p in live if (p["metadata"].get("labels") or {}).get(key) == value),
                      key=lambda p: p["metadata"]["name"])

    server, replicas = _server_pods(kube, exp, live)
    return Snapshot(nodes=nodes, gpu_nodes=gpu, server_pods=server, server_replicas=replicas,
                    roles={r.role: _server_pods(kube, r, live) for r in exp.roles},
                    job_pods={name: labelled("batch.kubernetes.io/job-name", name) for name in jobs},
                    jobs=jobs, services=services,
                    endpoint_config=kube.get(exp.endpoint_config) if exp.endpoint_config else None,
                    gateway=kube.get(access.gateway_path(ns, exp.gateway)) if exp.gateway else None)


def _seconds(since: str | None, now: datetime) -> int | None:
    return max(0, int((now - parse(since)).total_seconds())) if since else None


def _ready(node: dict[str, Any]) -> bool:
    return any(c["type"] == "Ready" and c["status"] == "True" for c in node.get("status", {}).get("conditions", []))


def _nodes(exp: Expected, snap: Snapshot) -> list[Line]:
    gpu_names = {n["metadata"]["name"] for n in snap.gpu_nodes}
    system = [n for n in snap.nodes if n["metadata"]["name"] not in gpu_names]
    lines = []
    for name, wanted, nodes, look in (
            ("gpu", exp.gpu_nodes, snap.gpu_nodes, f"nodes labelled {_selector(exp.gpu_node_selector)}: the GPU "
                                                   "pool, its capacity reservation or window"),
            ("system", exp.system_nodes, system, "the system node pool")):
        ready = sum(_ready(n) for n in nodes)
        state = OK if ready >= wanted else PROGRESS
        phase = "ready" if state == OK else "joining" if nodes else "waiting for capacity"
        lines.append(Line("nodes", name, state, phase, f"{wanted} wanted, {len(nodes)} joined, {ready} ready",
                          look="" if state == OK else look,
                          extra={"wanted": wanted, "joined": len(nodes), "ready": ready}))
    return lines


def _condition(job: dict[str, Any], kind: str) -> dict[str, Any] | None:
    return next((c for c in job.get("status", {}).get("conditions", []) if c["type"] == kind
                 and c["status"] == "True"), None)


def _job(section: str, ref: JobRef, job: dict[str, Any] | None, pods: list[dict[str, Any]], ns: str,
         now: datetime) -> Line:
    look = f"kubectl logs -n {ns} job/{ref.name}"
    if job is None:
        return Line(section, ref.name, PROGRESS, "not created yet", budget_seconds=ref.budget_seconds)
    st = job.get("status", {})
    running = sum(1 for p in pods if p.get("status", {}).get("phase") == "Running")
    counts = {"active": int(st.get("active", 0)), "running": running, "succeeded": int(st.get("succeeded", 0)),
              "failed": int(st.get("failed", 0)), "completions": ref.completions}
    pending = max(0, counts["active"] - running)
    detail = (f"{counts['succeeded']} of {ref.completions} succeeded, {running} running, "
              + (f"{pending} pending, " if pending else "") + f"{counts['failed']} failed")
    elapsed = _seconds(st.get("startTime"), now)
    failed = _condition(job, "Failed")
    if failed:
        return Line(section, ref.name, FAILED, "failed", f"{failed.get('reason')}: {failed.get('message', '')}; "
                    + detail, elapsed, ref.budget_seconds, _failed_pod_look(pods, ns) or look, extra=counts)
    complete = _condition(job, "Complete")
    if complete:
        took = _seconds(st.get("startTime"), parse(st["completionTime"])) if st.get("completionTime") else None
        return Line(section, ref.name, OK, "succeeded", detail, took, ref.budget_seconds, extra=counts)
    if ref.budget_seconds and elapsed is not None and elapsed > ref.budget_seconds:
        return Line(section, ref.name, FAILED, "over budget", detail + "; stalled or slower than sized", elapsed,
                    ref.budget_seconds, look, extra=counts)
    return Line(section, ref.name, PROGRESS, "running" if running else "starting", detail, elapsed,
                ref.budget_seconds, extra=counts)


def sync_running(exp: Expected, snap: Snapshot) -> bool:
    """The sync Job exists and has neither completed nor failed: its progress is worth reading."""
    job = snap.jobs.get(exp.sync.name) if exp.sync else None
    return job is not None and not (_condition(job, "Complete") or _condition(job, "Failed"))


COMPLETION_INDEX = "batch.kubernetes.io/job-completion-index"
"""The label of an Indexed Job's pod that names its worker (Kubernetes "Indexed Job")."""


def _weights(exp: Expected, ref: JobRef, snap: Snapshot, now: datetime) -> Line:
    """The sync Job's line, with its workers' byte progress while it is not done, and failed when a running worker
    has uploaded nothing for ``STALL_SECONDS``."""
    pods = snap.job_pods.get(ref.name, [])
    line = _job("weights", ref, snap.jobs.get(ref.name), pods, exp.namespace, now)
    if line.state == OK or snap.copy_progress is None or snap.jobs.get(ref.name) is None:
        return line
    running = {int(p["metadata"]["labels"][COMPLETION_INDEX]): parse(p["status"]["startTime"]) for p in pods
               if p.get("status", {}).get("phase") == "Running" and p.get("status", {}).get("startTime")
               and COMPLETION_INDEX in (p["metadata"].get("labels") or {})}
    s = summarize(snap.copy_progress, now, running)
    line = replace(line, detail=f"{line.detail}; {s.detail}", extra=line.extra | s.extra)
    if s.stalled and line.phase != "failed":  # over budget too: the progress says which of the two it is
        quiet = ", ".join(f"worker {w} for {q // 60} min" for w, q in sorted(s.stalled.items()))
        line = replace(line, state=FAILED, phase="stalled",
                       detail=f"nothing uploaded ({quiet}; stalled after {STALL_SECONDS // 60} min); {line.detail}",
                       look=f"kubectl logs -n {exp.namespace} job/{ref.name}")
    return line


def _fabric(exp: Expected, ref: JobRef, snap: Snapshot, now: datetime) -> Line:
    """A fabric check Job's line, with what its leader pod reported once it ended (k3infra.fabric_probe writes one
    line per path, the transport and the bus bandwidth against the expected one, to its termination message), or,
    once its pods are gone, the report its leader wrote into the Job's annotation (the stack output's source)."""
    pods = snap.job_pods.get(ref.name, [])
    job = snap.jobs.get(ref.name)
    line = _job("fabric", ref, job, pods, exp.namespace, now)
    leader = next((p for p in pods if (p["metadata"].get("labels") or {}).get(COMPLETION_INDEX) == "0"), None)
    ended = next(iter((leader or {}).get("status", {}).get("containerStatuses", [])), {}).get("state", {}).get(
        "terminated") or {}
    message = str(ended.get("message") or "").strip() or _annotated(job)
    if not message:
        return line
    paths = [ln for ln in message.splitlines() if ln.startswith(("ok ", "FAILED "))]
    return replace(line, detail=f"{line.detail}; " + "; ".join(paths or message.splitlines()[:1]),
                   extra=line.extra | {"report": message})


def _annotated(job: dict[str, Any] | None) -> str:
    """The summary of the report in a fabric check Job's annotation (``fabric_probe.ANNOTATION``); empty when there
    is none or it is not the probe's report."""
    raw = (((job or {}).get("metadata") or {}).get("annotations") or {}).get(probe.ANNOTATION)
    try:
        return probe.summary({"paths": fabric_report.report_paths(json.loads(raw))}) if raw else ""
    except (ValueError, KeyError, TypeError):
        return ""


def _failed_pod_look(pods: list[dict[str, Any]], ns: str) -> str:
    failed = [p for p in pods if p.get("status", {}).get("phase") == "Failed"]
    return f"kubectl logs -n {ns} pod/{failed[-1]['metadata']['name']}" if failed else ""


def _rank(pod: dict[str, Any], index: int) -> str:
    """``group G rank R``: the LeaderWorkerSet's labels, or for a Deployment the pod's place among the replicas."""
    labels = pod["metadata"].get("labels") or {}
    group = labels.get("leaderworkerset.sigs.k8s.io/group-index", str(index))
    rank = labels.get("leaderworkerset.sigs.k8s.io/worker-index", "0")
    return f"group {group} rank {rank}"


def _server(exp: Expected, snap: Snapshot, now: datetime) -> list[Line]:
    if exp.roles:  # a disaggregated topology: each role's ranks, named by role
        return [line for r in exp.roles for line in _server(
            r, replace(snap, server_pods=snap.roles.get(r.role, ([], None))[0],
                                   server_replicas=snap.roles.get(r.role, ([], None))[1], roles={}), now)]
    groups = exp.groups if snap.server_replicas is None else snap.server_replicas
    ranks = groups * exp.group_size
    prefix = f"{exp.role} " if exp.role else ""
    lines = [_pod_phase(exp, prefix + _rank(p, i), p, now) for i, p in enumerate(snap.server_pods)]
    if len(lines) < ranks:
        lines.append(Line("server", f"{exp.server_kind} {exp.server_name}", PROGRESS, "creating",
                          f"{len(lines)} of {ranks} rank pods exist"))
    return lines


def _pod_phase(exp: Expected, name: str, pod: dict[str, Any], now: datetime) -> Line:
    ns, pod_name = exp.namespace, pod["metadata"]["name"]
    st = pod.get("status", {})
    conditions = {c["type"]: c for c in st.get("conditions", [])}
    base = {"pod": pod_name}
    if not pod.get("spec", {}).get("nodeName"):
        msg = conditions.get("PodScheduled", {}).get("message", "")
        return Line("server", name, PROGRESS, "waiting for a node", msg,
                    _seconds(pod["metadata"].get("creationTimestamp"), now),
                    look=f"kubectl describe -n {ns} pod/{pod_name}", extra=base)
    if st.get("phase") == "Failed":
        return Line("server", name, FAILED, "failed", st.get("reason", "") + " " + st.get("message", ""),
                    look=f"kubectl describe -n {ns} pod/{pod_name}", extra=base)
    init = next((c for c in st.get("initContainerStatuses", []) if c["name"] == WEIGHTS_INIT), None)
    if init and not init.get("state", {}).get("terminated", {}).get("exitCode") == 0:
        line = _container_trouble(name, init, ns, pod_name, base)
        if line:
            return line
        running = init.get("state", {}).get("running")
        since = running.get("startedAt") if running else None
        elapsed = _seconds(since, now)
        budget = exp.weights_budget_seconds or None
        state = FAILED if budget and elapsed is not None and elapsed > budget else PROGRESS
        return Line("server", name, state, "waiting for weights", "the init container waits for the sync's "
                    "completion marker", elapsed, budget,
                    look=f"kubectl logs -n {ns} pod/{pod_name} -c {WEIGHTS_INIT}" if state == FAILED else "",
                    extra=base | {"markerGate": "waiting"})
    gate = {"markerGate": "passed"} if init else {}
    cs = next(iter(st.get("containerStatuses", [])), None)
    if cs is None or "waiting" in cs.get("state", {}) and not cs.get("restartCount"):
        reason = (cs or {}).get("state", {}).get("waiting", {}).get("reason", "")
        if reason in IMAGE_ERRORS | CONTAINER_ERRORS:
            return Line("server", name, FAILED, "image pull failing" if reason in IMAGE_ERRORS else reason,
                        (cs or {}).get("state", {}).get("waiting", {}).get("message", reason),
                        look=f"kubectl describe -n {ns} pod/{pod_name}", extra=base | gate)
        since = conditions.get("Initialized", {}).get("lastTransitionTime")
        elapsed = _seconds(since, now)
        state = FAILED if elapsed is not None and elapsed > exp.image_pull_budget_seconds else PROGRESS
        return Line("server", name, state, "pulling the image", reason, elapsed, exp.image_pull_budget_seconds,
                    look=f"kubectl describe -n {ns} pod/{pod_name}" if state == FAILED else "", extra=base | gate)
    trouble = _container_trouble(name, cs, ns, pod_name, base | gate)
    if trouble:
        return trouble
    running = cs.get("state", {}).get("running") or {}
    if cs.get("ready"):
        since = conditions.get("Ready", {}).get("lastTransitionTime")
        return Line("server", name, OK, "ready", f"restarts {cs.get('restartCount', 0)}", _seconds(since, now),
                    extra=base | gate)
    elapsed = _seconds(running.get("startedAt"), now)
    budget = exp.load_budget_seconds
    state = FAILED if elapsed is not None and elapsed > budget else PROGRESS
    return Line("server", name, state, "loading", "started, not ready (start-up probe)", elapsed, budget,
                look=f"kubectl logs -n {ns} pod/{pod_name} -c {cs['name']}" if state == FAILED else "",
                extra=base | gate)


def _container_trouble(name: str, cs: dict[str, Any], ns: str, pod_name: str,
                       extra: dict[str, Any]) -> Line | None:
    """A container that restarted and is not running now: restarting, with its count and last termination."""
    restarts = int(cs.get("restartCount", 0))
    if not restarts or "running" in cs.get("state", {}):
        return None
    last = cs.get("lastState", {}).get("terminated") or cs.get("state", {}).get("terminated") or {}
    waiting = cs.get("state", {}).get("waiting", {}).get("reason", "")
    detail = (f"{restarts} restart(s), last terminated {last.get('reason', 'unknown')} "
              f"(exit code {last.get('exitCode', '?')})" + (f", now {waiting}" if waiting else ""))
    return Line("server", name, FAILED, "restarting", detail,
                look=f"kubectl logs -n {ns} pod/{pod_name} -c {cs['name']} --previous",
                extra=extra | {"restartCount": restarts, "lastTerminationReason": last.get("reason", "")})


def _endpoint(exp: Expected, snap: Snapshot, ready: bool) -> list[Line]:
    lines = []
    for name, port in exp.services:
        svc = snap.services.get(name)
        if svc is None:
            lines.append(Line("endpoint", name, PROGRESS, "not created yet"))
            continue
        ingress = [i.get("ip") or i.get("hostname") for i in svc.get("status", {}).get("loadBalancer", {})
                   .get("ingress", [])]
        kind = svc["spec"].get("type", "ClusterIP")
        address = f"http://{ingress[0]}:{port}" if ingress else f"http://{name}.{exp.namespace}.svc:{port}"
        pending = kind == "LoadBalancer" and not ingress
        detail = f"{address}/v1 ({kind}" + (", its address not assigned yet: in-cluster name" if pending else "") + ")"
        lines.append(Line("endpoint", name, OK if ready else PROGRESS, "serving" if ready else "not ready",
                          detail, extra={"url": address}))
    return lines


PROGRAMMED = "Programmed"
"""The Gateway API's summary condition (kubernetes-sigs/gateway-api ``apis/v1/gateway_types.go``
``GatewayConditionProgrammed``; its CRDs vendored at v1.6.1 in schemas/crds): True once the controller has configured the data plane for the Gateway and it is
assumed ready soon; False (``Invalid``, ``Pending``, ``NoResources``, ``AddressNotAssigned``) or Unknown (``Pending``,
the CRD's default until a controller reconciles it) otherwise."""
REFUSED = {("Accepted", "False"), (PROGRAMMED, "False", "Invalid")}
"""Conditions no wait fixes (gateway_types.go): the controller did not accept the Gateway (``Accepted`` False: invalid
parameters, an unsupported address or listener), or calls its configuration ``Invalid``. A Gateway so refused fails
the report at once rather than holding ``--watch`` until its timeout."""


def _condition_now(gw: dict[str, Any], kind: str) -> dict[str, Any]:
    """The Gateway's condition ``kind`` if it describes the current spec (its ``observedGeneration`` is not behind
    the object's ``generation``: a condition of an earlier spec says nothing of this one); else empty."""
    cond = next((c for c in (gw.get("status") or {}).get("conditions") or [] if c.get("type") == kind), {})
    generation = (gw.get("metadata") or {}).get("generation")
    if cond and generation is not None and cond.get("observedGeneration") is not None \
            and int(cond["observedGeneration"]) < int(generation):
        return {}
    return cond


def _gateway(ns: str, ref: GatewayRef, gw: dict[str, Any] | None, ready: bool) -> Line:
    """The Gateway's line: serving once the servers are ready and the Gateway is Programmed; its first reported
    address (else the proxy Service's in-cluster name, ``GatewayRef.proxy_service``)."""
    look = f"kubectl describe gateway -n {ns} {ref.name}"
    kind = f"Gateway, class {ref.gateway_class}"
    if gw is None:
        return Line("endpoint", ref.name, PROGRESS, "not created yet", f"({kind})", look=look,
                    extra={"gatewayClass": ref.gateway_class})
    status = gw.get("status") or {}
    cond = _condition_now(gw, PROGRAMMED)
    accepted = _condition_now(gw, "Accepted")
    refused = next((c for c in (accepted, cond) if (c.get("type"), c.get("status")) in REFUSED
                    or (c.get("type"), c.get("status"), c.get("reason")) in REFUSED), None)
    if refused is not None:
        return Line("endpoint", ref.name, FAILED, "refused", f"(Gateway, class {ref.gateway_class}; "
                    f"{refused['type']} {refused['status']}" + "".join(
                        f": {refused[k]}" for k in ("reason", "message") if refused.get(k)) + ")",
                    look=look, extra={"gatewayClass": ref.gateway_class, "programmed": cond.get("status", "")})
    programmed = cond.get("status") == "True"
    host = next((a["value"] for a in status.get("addresses") or [] if a.get("value")), None)
    if host is None:
        host = ref.proxy_service
        kind += ", its address not assigned yet" + (": in-cluster name" if host else "")
    elif ":" in host:  # an IPv6 address
        host = f"[{host}]"
    if not programmed:
        kind += f"; {PROGRAMMED} {cond.get('status', 'not reported')}" + "".join(
            f": {cond[k]}" for k in ("reason", "message") if cond.get(k))
    address = f"http://{host}" + ("" if ref.port == 80 else f":{ref.port}") if host else ""
    state = OK if programmed and ready else PROGRESS
    phase = "serving" if state == OK else "not ready" if programmed else "not programmed"
    return Line("endpoint", ref.name, state, phase, (f"{address}/v1 " if address else "") + f"({kind})",
                look="" if state == OK else look,
                extra={"url": address, "gatewayClass": ref.gateway_class, "programmed": cond.get("status", "")})


def evaluate(exp: Expected, snap: Snapshot, now: datetime) -> Report:
    """The report, in cold-start order: nodes, placement check, fabric check, weight copy, server ranks (HyperPod: the
    InferenceEndpointConfig), verify, endpoint (the server's Services, then the inference gateway's Gateway)."""
    lines = _nodes(exp, snap)
    if exp.placement:
        lines.append(_job("placement", exp.placement, snap.jobs.get(exp.placement.name),
                          snap.job_pods.get(exp.placement.name, []), exp.namespace, now))
    lines += [_fabric(exp, ref, snap, now) for ref in exp.fabric]
    if exp.sync:
        lines.append(_weights(exp, exp.sync, snap, now))
    if exp.endpoint_config:
        lines += hyperpod.lines(snap.endpoint_config, exp.server_name, exp.namespace, exp.groups,
                                exp.load_budget_seconds, now)
        return Report(exp.stack, exp.namespace, tuple(lines))
    server = _server(exp, snap, now)
    lines += server
    if exp.verify:
        lines.append(_job("verify", exp.verify, snap.jobs.get(exp.verify.name),
                          snap.job_pods.get(exp.verify.name, []), exp.namespace, now))
    ready = bool(server) and all(line.state == OK for line in server)
    lines += _endpoint(exp, snap, ready)
    if exp.gateway:
        lines.append(_gateway(exp.namespace, exp.gateway, snap.gateway, ready))
    return Report(exp.stack, exp.namespace, tuple(lines))
