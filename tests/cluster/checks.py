"""What the controllers made of a deployment, as lists of problems (empty: as it must be).

Each check reads only what the apiserver, scheduler, controllers and kwok wrote back, and the node profile; the
rendered objects are read only to know which objects to look at. tests/cluster/test_planted.py shows every check
failing on a planted mistake.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from typing import Any

from k3infra.catalog.kubernetes_nodes import GPU_NODES
from k3infra.serving.gpu_addons import NVIDIA_DRA_NAMESPACE

from .compute_domain import CHANNEL_CLASS
from .deploy import FIELD_MANAGER, Deployment, ref, unschedulable_reason

COMPONENT = "app.kubernetes.io/component"
INSTANCE = "app.kubernetes.io/instance"
INFERENCE_SERVING = "llm-d.ai/inferenceServing"
ON_GPU_NODES = frozenset({"model-server", "verify", "placement-check", "fabric-check", "node-agent"})
"""Components whose pods run on the GPU pool (the engine, the Jobs that use its image or read its nodes, and the agent
that keeps the weights and the caches on each of them)."""
OFF_GPU_NODES = frozenset({"weight-sync"})
"""Components whose pods must stay off the GPU pool (the sync runs while the reserved nodes may not exist yet)."""
GROUP_KEY = "leaderworkerset.sigs.k8s.io/group-key"
GROUP_INDEX = "leaderworkerset.sigs.k8s.io/group-index"
LWS_NAME = "leaderworkerset.sigs.k8s.io/name"
WORKER_INDEX = "leaderworkerset.sigs.k8s.io/worker-index"
_VAR = re.compile(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)")
_DRIVER = re.compile(r"""device\.driver == ['"]([^'"]+)['"]""")


def admitted(dep: Deployment) -> list[str]:
    """Every rendered object the apiserver refused (schema, CEL, defaulting, Pod Security, quota, webhooks)."""
    return [f"{r}: {e}" for r, e in dep.apply_errors.items()]


def placement(dep: Deployment) -> list[str]:
    """Every stack pod bound, GPU components on the GPU pool's nodes, the sync off them; every workload has its pods."""
    gpu, problems = set(dep.profile.gpu_nodes), []
    for pod in dep.pods():
        name, component = pod["metadata"]["name"], (pod["metadata"].get("labels") or {}).get(COMPONENT, "")
        node = pod["spec"].get("nodeName")
        if not node:
            problems.append(f"pod {name} ({component}) not scheduled: {unschedulable_reason(pod) or 'pending'}")
        elif component in ON_GPU_NODES and node not in gpu:
            problems.append(f"pod {name} ({component}) on {node}, not a GPU node")
        elif component in OFF_GPU_NODES and node in gpu:
            problems.append(f"pod {name} ({component}) on GPU node {node}")
    problems += _workloads_have_pods(dep)
    problems += _daemonsets(dep)
    return problems


def _workloads_have_pods(dep: Deployment) -> list[str]:
    out, pods = [], dep.pods()
    for doc in dep.documents:
        if doc["kind"] in ("Job", "Deployment", "StatefulSet", "LeaderWorkerSet"):
            live = dep.live(doc)
            if live is None or (doc["kind"] == "Job" and (live.get("status") or {}).get("succeeded", 0) >= 1):
                continue  # a Job that succeeded had its pod (which the controller may since have replaced)
            want = _wanted_pods(doc)
            have = [p for p in pods if _belongs(p, live)]
            if len(have) < want:
                out.append(f"{ref(doc)}: {len(have)} of {want} pods created "
                           f"({'; '.join(dep.events(live))[:300] or 'no events'})")
    return out


def _wanted_pods(doc: dict[str, Any]) -> int:
    spec = doc["spec"]
    if doc["kind"] == "LeaderWorkerSet":
        return int(spec.get("replicas", 1)) * int(spec["leaderWorkerTemplate"].get("size", 1))
    if doc["kind"] == "Job":
        return 1
    return int(spec.get("replicas", 1))


def _belongs(pod: dict[str, Any], owner: dict[str, Any]) -> bool:
    labels, meta = pod["metadata"].get("labels") or {}, owner["metadata"]
    if owner["kind"] == "LeaderWorkerSet":
        return labels.get(LWS_NAME) == meta["name"]
    if owner["kind"] == "Job":
        return labels.get("batch.kubernetes.io/job-name") == meta["name"]
    selector = (owner["spec"].get("selector") or {}).get("matchLabels") or {}
    return pod["metadata"]["namespace"] == meta["namespace"] and all(labels.get(k) == v for k, v in selector.items())


def _daemonsets(dep: Deployment) -> list[str]:
    """Each rendered DaemonSet runs a pod on every GPU node it selects, and one is scheduled on each."""
    out = []
    for doc in (d for d in dep.documents if d["kind"] == "DaemonSet"):
        live = dep.live(doc) or {}
        status = live.get("status") or {}
        desired, scheduled = status.get("desiredNumberScheduled", 0), status.get("currentNumberScheduled", 0)
        ready = status.get("numberReady", 0)
        if desired != len(dep.profile.gpu_nodes) or ready != desired or scheduled != desired:
            out.append(f"{ref(doc)}: desired {desired}, scheduled {scheduled}, ready {ready} on "
                       f"{len(dep.profile.gpu_nodes)} GPU nodes")
    return out


CRITICAL_CHARTS = {"nvidia-dra-driver-gpu": NVIDIA_DRA_NAMESPACE}
"""Charts whose pods run at system-node-critical outside kube-system (k3infra.serving.gpu_addons
CRITICAL_PRIORITY_CLASSES), by the namespace they install into."""


def critical_pods_admitted(dep: Deployment) -> list[str]:
    """A system-node-critical pod is admitted in each such chart's namespace (ResourceQuota admission with GKE's
    limitedResources, tests/cluster/local.py; server-side dry run: admission runs, nothing is stored)."""
    out = []
    for chart, namespace in CRITICAL_CHARTS.items():
        if chart not in dep.profile.charts:
            continue
        probe = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "critical-probe", "namespace": namespace},
                 "spec": {"priorityClassName": "system-node-critical",
                          "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}]}}
        proc = dep.cluster.kubectl("create", "--dry-run=server", "-f", "-", input=json.dumps(probe), check=False)
        if proc.returncode:
            out.append(f"{chart}'s critical pods in {namespace}: {proc.stderr.strip()}")
    return out


def _finished(pod: dict[str, Any]) -> bool:
    return (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")


def claims(dep: Deployment) -> list[str]:
    """Every ResourceClaim of the stack allocated, from devices on its pod's node; every pod that may still run has
    its claims. A finished pod's (a fabric check's) are the claim controller's to release and delete, which it does
    at its own pace (kubernetes v1.35.4 pkg/controller/resourceclaim/controller.go: "deleting unused generated
    claim"), so they are not judged."""
    out = []
    pods = {p["metadata"]["name"]: p for p in dep.pods()}
    for claim in dep.get("resourceclaims.resource.k8s.io"):
        name = claim["metadata"]["name"]
        owners = [o["name"] for o in claim["metadata"].get("ownerReferences") or [] if o["kind"] == "Pod"]
        if any(_finished(p) for o in owners if (p := pods.get(o))):
            continue
        allocation = (claim.get("status") or {}).get("allocation")
        if not allocation:
            out.append(f"claim {name} not allocated")
            continue
        nodes = {p["spec"].get("nodeName") for o in owners if (p := pods.get(o))}
        pools = {r["pool"] for r in allocation["devices"]["results"]}
        if nodes and pools - nodes:
            out.append(f"claim {name}: devices of {sorted(pools)} for a pod on {sorted(nodes)}")
    for pod in pods.values():
        if _finished(pod):
            continue
        wanted = {c["name"] for c in pod["spec"].get("resourceClaims") or []}
        got = {s["name"] for s in (pod.get("status") or {}).get("resourceClaimStatuses") or [] if s.get("resourceClaimName")}
        if wanted - got:
            out.append(f"pod {pod['metadata']['name']}: no claim generated for {sorted(wanted - got)}")
    return out


def topology(dep: Deployment) -> list[str]:
    """The pods of each LeaderWorkerSet group on nodes sharing one NVLink domain (the GPU machine's innermost
    topology label in the catalog, not the host)."""
    nodes = dep.nodes()
    out = []
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for pod in dep.pods():
        key = (pod["metadata"].get("labels") or {}).get(GROUP_KEY)
        if key and pod["spec"].get("nodeName"):
            groups[key].append(pod)
    for key, members in groups.items():
        node_names = sorted({p["spec"]["nodeName"] for p in members})
        machine = nodes[node_names[0]]["metadata"]["labels"]["node.kubernetes.io/instance-type"]
        labels = [k for k in GPU_NODES[machine].topology_labels if not k.endswith("-host")] if machine in GPU_NODES else []
        if not labels or len(node_names) < 2:
            continue
        label = labels[-1]
        values = {nodes[n]["metadata"]["labels"].get(label) for n in node_names}
        if len(values) != 1:
            out.append(f"group {members[0]['metadata']['name']}: nodes {node_names} span {label} {sorted(map(str, values))}")
    return out


def leader_address(dep: Deployment) -> list[str]:
    """Every ``$(VAR)`` an LWS pod's engine command uses is defined in the pod as the controller created it, and
    ``LWS_LEADER_ADDRESS`` is the leader's name under the group's headless Service, which exists."""
    out = []
    for pod in dep.pods():
        labels = pod["metadata"].get("labels") or {}
        lws = labels.get(LWS_NAME)
        if not lws:
            continue
        for c in pod["spec"]["containers"]:
            env = {e["name"]: e.get("value") for e in c.get("env") or []}
            used = set(_VAR.findall(" ".join([*c.get("command", []), *c.get("args", [])])))
            for var in sorted(used - set(env)):
                out.append(f"pod {pod['metadata']['name']} container {c['name']}: $({var}) is not defined")
            ns, group = pod["metadata"]["namespace"], labels.get(GROUP_INDEX)
            want = f"{lws}-{group}.{lws}.{ns}"
            if "LWS_LEADER_ADDRESS" in used and env.get("LWS_LEADER_ADDRESS") != want:
                out.append(f"pod {pod['metadata']['name']}: LWS_LEADER_ADDRESS {env.get('LWS_LEADER_ADDRESS')!r}, "
                           f"expected {want!r}")
    for doc in (d for d in dep.documents if d["kind"] == "LeaderWorkerSet"):
        svc = dep.live({"apiVersion": "v1", "kind": "Service", "metadata": {
            "name": doc["metadata"]["name"], "namespace": doc["metadata"]["namespace"]}})
        if svc is None or svc["spec"].get("clusterIP") != "None":
            out.append(f"{ref(doc)}: no headless Service {doc['metadata']['name']} (the leader address's domain)")
        elif not any(o.get("kind") == "LeaderWorkerSet" for o in svc["metadata"].get("ownerReferences") or []):
            out.append(f"{ref(doc)}: Service {doc['metadata']['name']} is the render's, not the controller's")
    return out


def jobs_complete(dep: Deployment) -> list[str]:
    """Every rendered Job complete (kwok's stages succeed a Job's pods once they run)."""
    out = []
    for doc in (d for d in dep.documents if d["kind"] == "Job"):
        live = dep.live(doc) or {}
        conditions = {c["type"]: c["status"] for c in (live.get("status") or {}).get("conditions") or []}
        if conditions.get("Complete") != "True":
            out.append(f"{ref(doc)} not complete: {conditions or 'no conditions'}")
    return out


def serving_endpoints(dep: Deployment) -> list[str]:
    """Every Service the plan registers under its ModelServer (but the LWS groups' headless ones) routes to exactly
    the ready server pods that lead a replica, whatever its selector says: a Service is picked by where the plan
    puts it, and what it should reach by the pods' own labels, so a selector that matches nothing (or something
    else) is a problem, never a Service skipped."""
    out = []
    pods = {p["metadata"]["name"]: p for p in dep.pods()}
    slices = dep.get("endpointslices.discovery.k8s.io")
    for doc in dep.documents:
        if doc["kind"] != "Service" or ("Service", doc["metadata"]["name"]) not in dep.server_objects \
                or doc.get("spec", {}).get("clusterIP") == "None":
            continue
        name = doc["metadata"]["name"]
        # A disaggregated stack's Services are one per role: each reaches its own role's pods (by instance).
        instance = (doc["metadata"].get("labels") or {}).get(INSTANCE)
        leaders = sorted(n for n, p in pods.items() if _leads_a_replica(p) and _ready(p)
                         and (p["metadata"].get("labels") or {}).get(INSTANCE) == instance)
        ready = sorted(e["targetRef"]["name"] for s in slices
                       if (s["metadata"].get("labels") or {}).get("kubernetes.io/service-name") == name
                       for e in s.get("endpoints") or [] if (e.get("conditions") or {}).get("ready"))
        if not ready:
            out.append(f"Service {name}: no ready endpoint")
        for p in ready:
            pod = pods.get(p)
            if pod is None or not _ready(pod) or p not in leaders:
                out.append(f"Service {name}: endpoint {p} is not a ready server pod")
        out += [f"Service {name}: ready server pod {p} is not an endpoint" for p in leaders if ready and p not in ready]
    return out


def _leads_a_replica(pod: dict[str, Any]) -> bool:
    """A server pod that takes requests: a Deployment's pod, or a group's leader (LWS worker index 0, the
    StatefulSet's rank 0), or any pod of a DEP role (each runs an API server: llm-d's serving label)."""
    labels = pod["metadata"].get("labels") or {}
    if labels.get(COMPONENT) != "model-server":
        return False
    if labels.get(INFERENCE_SERVING) == "true":
        return True
    if LWS_NAME in labels:
        return labels.get(WORKER_INDEX) == "0"
    return labels.get("apps.kubernetes.io/pod-index", "0") == "0"


def group_sizes(dep: Deployment) -> list[str]:
    """The server's groups as the plan sizes them: every LeaderWorkerSet group (and the StatefulSet) of the plan's
    nodes per replica, with that many pods; a Deployment only where a replica is one node; as many groups in all as
    the plan's replicas (unless a scaler owns the count). The live objects are read, not the render."""
    cfg = dep.plan.config
    if cfg.sizing.topology is not None and cfg.sizing.topology.roles:
        return _role_group_sizes(dep)
    nodes, replicas = cfg.sizing.nodes, cfg.replicas
    out, groups = [], 0
    pods = [p for p in dep.pods() if (p["metadata"].get("labels") or {}).get(COMPONENT) == "model-server"]
    for doc in dep.documents:
        if doc["kind"] not in ("LeaderWorkerSet", "StatefulSet", "Deployment") or \
                (doc["kind"], doc["metadata"]["name"]) not in dep.server_objects:
            continue
        live = dep.live(doc)
        if live is None:
            out.append(f"{ref(doc)}: not found")
            continue
        spec, count = live["spec"], int(live["spec"].get("replicas", 1))
        if doc["kind"] == "LeaderWorkerSet":
            size = int(spec["leaderWorkerTemplate"].get("size", 1))
            if size != nodes:
                out.append(f"{ref(doc)}: group size {size}, the plan's sizing {nodes} node(s) per replica")
            members: dict[str, int] = defaultdict(int)
            for pod in pods:
                labels = pod["metadata"].get("labels") or {}
                if labels.get(LWS_NAME) == doc["metadata"]["name"]:
                    members[labels.get(GROUP_INDEX, "?")] += 1
            out += [f"{ref(doc)} group {g}: {n} pod(s), the plan's sizing {nodes}"
                    for g, n in sorted(members.items()) if n != nodes]
        elif doc["kind"] == "StatefulSet" and count != nodes:
            out.append(f"{ref(doc)}: {count} ranks, the plan's sizing {nodes} node(s) per replica")
        elif doc["kind"] == "Deployment" and nodes != 1:
            out.append(f"{ref(doc)}: a Deployment runs one pod per replica, and the plan's replica spans {nodes} nodes")
        groups += 1 if doc["kind"] == "StatefulSet" else count
    scaled = cfg.autoscaling is not None and cfg.autoscaling.enabled
    if not scaled and groups != replicas:
        out.append(f"{groups} server replica group(s), the plan's sizing {replicas}")
    return out


def _role_group_sizes(dep: Deployment) -> list[str]:
    """A topology's roles (issue 37): each role's LeaderWorkerSet (or Deployment, a one-node group) of the role's
    nodes per group, that many pods in each live group, and the role's group count."""
    top = dep.plan.config.sizing.topology
    assert top is not None
    out = []
    pods = [p for p in dep.pods() if (p["metadata"].get("labels") or {}).get(COMPONENT) == "model-server"]
    for role in top.roles:
        docs = [d for d in dep.documents if d["kind"] in ("LeaderWorkerSet", "Deployment")
                and (d["kind"], d["metadata"]["name"]) in dep.server_objects
                and (d["metadata"].get("labels") or {}).get(INSTANCE) == f"k3-{role.name}"]
        if len(docs) != 1:
            out.append(f"role {role.name}: {len(docs)} server workloads")
            continue
        doc, live = docs[0], dep.live(docs[0])
        if live is None:
            out.append(f"{ref(doc)}: not found")
            continue
        spec = live["spec"]
        size = int(spec["leaderWorkerTemplate"].get("size", 1)) if doc["kind"] == "LeaderWorkerSet" else 1
        if (size, int(spec.get("replicas", 1))) != (role.nodes, role.groups):
            out.append(f"{ref(doc)}: {spec.get('replicas', 1)} group(s) of {size}, the plan's {role.name} role "
                       f"{role.groups} of {role.nodes}")
        members: dict[str, int] = defaultdict(int)
        for pod in pods:
            labels = pod["metadata"].get("labels") or {}
            if doc["kind"] == "LeaderWorkerSet" and labels.get(LWS_NAME) == doc["metadata"]["name"]:
                members[labels.get(GROUP_INDEX, "?")] += 1
        out += [f"{ref(doc)} group {g}: {n} pod(s), the plan's {role.nodes}" for g, n in sorted(members.items())
                if n != role.nodes]
    return out


def claim_classes(dep: Deployment) -> list[str]:
    """Every server pod holds an allocated claim of each device class its stack calls for, from that class's driver:
    the GPU pool's device claims (the rendered ResourceClaimTemplates of component ``device-claim``: RDMA NICs) and,
    where the plan's layout runs tensor parallelism over multi-node NVLink, a ComputeDomain channel. The drivers are
    the DeviceClasses' (the profile's and the render's CEL ``device.driver == ...``); what the pods claim is read from
    the claims the scheduler allocated, so a pod template that lost its claims is caught here."""
    drivers = {c["metadata"]["name"]: _driver(c) for c in [*dep.profile.device_classes,
                                                            *(d for d in dep.documents if d["kind"] == "DeviceClass")]}
    wanted = {r["exactly"]["deviceClassName"] for d in dep.documents if d["kind"] == "ResourceClaimTemplate"
              and (d["metadata"].get("labels") or {}).get(COMPONENT) == "device-claim"
              for r in d["spec"]["spec"]["devices"]["requests"] if "exactly" in r}
    if dep.plan.config.sizing.layout.multi_node_nvlink:
        wanted.add(CHANNEL_CLASS)
    claims = {c["metadata"]["name"]: c for c in dep.get("resourceclaims.resource.k8s.io")}
    out = []
    for pod in dep.pods():
        if (pod["metadata"].get("labels") or {}).get(COMPONENT) != "model-server":
            continue
        got: dict[str, set[str]] = {}
        for status in (pod.get("status") or {}).get("resourceClaimStatuses") or []:
            claim = claims.get(status.get("resourceClaimName") or "")
            if claim is None:
                continue
            classes = {r["name"]: r["exactly"]["deviceClassName"] for r in claim["spec"]["devices"]["requests"]
                       if "exactly" in r}
            results = (((claim.get("status") or {}).get("allocation") or {}).get("devices") or {}).get("results") or []
            for request, cls in classes.items():
                got.setdefault(cls, set()).update(r["driver"] for r in results if r["request"] == request)
        name = pod["metadata"]["name"]
        for cls in sorted(wanted):
            if cls not in got:
                out.append(f"pod {name}: no claim of device class {cls}")
            elif got[cls] != {drivers.get(cls)}:
                out.append(f"pod {name}: device class {cls} allocated from {sorted(got[cls]) or 'no driver'}, "
                           f"expected {drivers.get(cls)}")
    return out


def _driver(device_class: dict[str, Any]) -> str | None:
    for selector in device_class["spec"].get("selectors") or []:
        if m := _DRIVER.search((selector.get("cel") or {}).get("expression", "")):
            return m.group(1)
    return None


def _ready(pod: dict[str, Any]) -> bool:
    return any(c["type"] == "Ready" and c["status"] == "True" for c in (pod.get("status") or {}).get("conditions") or [])


def _manager(obj: dict[str, Any]) -> str:
    entries = [m for m in obj["metadata"].get("managedFields") or []
               if m.get("manager") == FIELD_MANAGER and m.get("operation") == "Apply"]
    return json.dumps(entries, sort_keys=True)


def reapply(dep: Deployment) -> list[str]:
    """Applying the same render again changes nothing: no conflict, no resourceVersion bump by our apply, the same
    fields owned."""
    before = dep.live_many(dep.documents)
    errors = dep.apply(dep.documents)
    after = dep.live_many(dep.documents)
    out = [f"re-apply {r}: {e}" for r, e in errors.items()]
    for d in dep.documents:
        r = ref(d)
        old, new = before.get(r), after.get(r)
        if old is None or new is None:
            continue
        if _manager(old) != _manager(new):
            out.append(f"re-apply {r}: {FIELD_MANAGER}'s fields or time changed "
                       f"(resourceVersion {old['metadata']['resourceVersion']} -> {new['metadata']['resourceVersion']})")
    return out


def drain(dep: Deployment, *, timeout: str = "45s") -> list[str]:
    """Each GPU node drains through the eviction API within ``timeout`` (kubectl drain retries a refused eviction
    until then); the node is uncordoned after."""
    out = []
    for node in dep.profile.gpu_nodes:
        proc = dep.cluster.kubectl("drain", node, "--ignore-daemonsets", "--delete-emptydir-data",
                                   f"--timeout={timeout}", check=False, timeout=120)
        if proc.returncode:
            lines = [ln.split(": ", 1)[-1] for ln in proc.stderr.splitlines() if "error" in ln.lower()]
            out.append(f"drain {node}: {'; '.join(dict.fromkeys(lines))[-600:]}")
        dep.cluster.kubectl("uncordon", node, check=False)
    return out


__all__ = ["admitted", "claim_classes", "claims", "critical_pods_admitted", "drain", "group_sizes", "jobs_complete",
           "leader_address", "placement", "reapply", "serving_endpoints", "topology"]
