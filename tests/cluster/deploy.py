"""Deploying one stack's render onto the local cluster, and reading back what the controllers made of it.

``Deployment(cluster, stack)`` builds the stack's node profile (tests/cluster/profiles.py) and its rendered objects
(``k3infra.render.apply_order``, charts left out: their effects are in the profile), and can plant a mistake in
either before ``deploy()`` applies them: the profile first, then every object with server-side apply in the
render's order. ``clean()`` deletes everything a deployment created (the session's cluster is shared by the stacks
in turn). Every wait is bounded.
"""

from __future__ import annotations

import copy
import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable

import yaml

from k3infra import offline
from k3infra.render import apply_order
from tests import support

from .compute_domain import ComputeDomainController
from .local import LWS_NAMESPACE, LocalCluster
from .profiles import Profile, profile

FIELD_MANAGER = "k3infra-test"
CRD_DIR = support.CRDS

NO_PUBLIC_CRD = frozenset({("networking.gke.io/v1", "Network"), ("networking.gke.io/v1", "GKENetworkParamSet")})
"""Kinds GKE installs without a public CRD file (schemas/crds/SOURCES.md): no apiserver here can admit them; the
multi-networking objects of gcp-a4-sglang are left out and said so."""

SERVER_COMPONENT = "k3infra:index:ModelServer$"
"""How a resource registered under the ModelServer component begins its URN's type path."""

SETTLE_SECONDS = 90.0
"""How long the controllers get to reach a steady state: every pod bound or reported unschedulable, every Job done."""

KEPT_NAMESPACES = frozenset({"default", "kube-system", "kube-public", "kube-node-lease", LWS_NAMESPACE})
"""Namespaces the cluster has before any deployment: never deleted by a clean, even one whose deploy failed before it
listed the namespaces that were there."""

CLEAN_SECONDS = 150.0
"""How long a clean may take, from its first delete until the last object is gone: most of it is the namespace
controller deleting every resource type the vendored CRDs serve. Measured 14 to 20 s per clean of aws-eks and
gcp-a4xmax with the 2-core machine at a load average of 8; the bound is seven times that."""

STABLE_SECONDS = 20.0
"""How long an unfinished state must last to count as settled (the PersistentVolume controller's resync is 15 s)."""


def stack_documents(stack: str) -> list[dict[str, Any]]:
    """The rendered Kubernetes objects of ``stack`` in apply order (charts left out)."""
    return [copy.deepcopy(item.document) for item in apply_order(support.plan(stack).recording) if not item.chart]


def kubernetes_stacks() -> list[str]:
    """Every stack whose render has Kubernetes objects (all but the managed-serving ones that render nothing). The
    existing-cluster stacks (``cloud: kubernetes``) are among them: their nodes are whatever the user runs, so their
    profile is kwok nodes shaped from the stack's own plan (tests/e2e/cluster_objects.py, the nodes tests/e2e deploys
    them on through the real Pulumi engine), and they run the same checks as the clouds."""
    return [s for s in support.STACKS if stack_documents(s)]


def served_crd(doc: dict[str, Any]) -> dict[str, Any]:
    """The CRD as this cluster can serve it: a conversion webhook whose Service is an unrendered Helm template
    (the HyperPod inference operator's CRD is its chart's file: ``{{ .Values.namePrefix }}-conversion-webhook``) is
    replaced by no conversion. With the webhook left in, the apiserver cannot build the CRD's serving info and
    answers every request for it, the namespace controller's included, with "error resolving resource": no
    namespace could ever be deleted. The render uses only the storage version, so no conversion is ever needed."""
    conversion = doc["spec"].get("conversion") or {}
    if conversion.get("strategy") == "Webhook" and "{{" in json.dumps(conversion):
        doc = copy.deepcopy(doc)
        doc["spec"]["conversion"] = {"strategy": "None"}
    return doc


def install_crds(cluster: LocalCluster) -> None:
    """Every vendored CRD (``served_crd``), established (idempotent: the session installs them once)."""
    docs = [served_crd(d) for f in sorted(Path(CRD_DIR).glob("*.yaml")) for d in yaml.safe_load_all(f.read_text()) if d]
    cluster.kubectl("apply", "--server-side", f"--field-manager={FIELD_MANAGER}", "--force-conflicts", "-f", "-",
                    input=json.dumps({"apiVersion": "v1", "kind": "List", "items": docs}), timeout=120)
    cluster.kubectl("wait", "--for=condition=Established", "--timeout=60s", "crd", "--all")


def ref(doc: dict[str, Any]) -> str:
    """``kind/namespace/name`` of an object."""
    meta = doc.get("metadata") or {}
    return f"{doc['kind']}/{meta.get('namespace', '')}/{meta['name']}"


class CleanError(RuntimeError):
    """What a clean left behind, and what holds it."""


@dataclass
class Deployment:
    """One stack on the cluster: its profile, its objects, and what applying them gave."""

    cluster: LocalCluster
    stack: str
    profile: Profile = field(init=False)
    documents: list[dict[str, Any]] = field(init=False)
    skipped: list[str] = field(default_factory=list)
    apply_errors: dict[str, str] = field(default_factory=dict)
    controller: ComputeDomainController | None = None
    existing_namespaces: set[str] = field(default_factory=lambda: set(KEPT_NAMESPACES))
    """Namespaces that were there before the deployment (lws-system, kube-system): cleaning leaves them."""

    server_objects: frozenset[tuple[str, str]] = field(init=False)
    """(kind, name) of every Kubernetes object the plan registers under its ModelServer component (its URN's type
    path): what the server-side checks look at, whatever a planted mistake did to the objects' labels or selectors."""

    def __post_init__(self) -> None:
        plan = support.plan(self.stack)
        self.profile = profile(plan)
        self.server_objects = frozenset(
            (i["kind"], i["metadata"]["name"]) for r in plan.recording.resources
            if SERVER_COMPONENT in r.urn.split("::")[2] and (i := offline.unwrap(r.inputs)).get("kind")
            and (i.get("metadata") or {}).get("name"))
        docs = stack_documents(self.stack)
        self.skipped = [ref(d) for d in docs if (d["apiVersion"], d["kind"]) in NO_PUBLIC_CRD]
        self.documents = [d for d in docs if (d["apiVersion"], d["kind"]) not in NO_PUBLIC_CRD]

    @property
    def plan(self) -> Any:
        """The stack's offline plan (``k3infra.planning.Plan``): the sizing the checks hold the cluster to."""
        return support.plan(self.stack)

    # --- planting -----------------------------------------------------------------------------------------
    def find(self, kind: str, name: str | None = None) -> dict[str, Any]:
        """The one rendered object of ``kind`` (and ``name``)."""
        found = [d for d in self.documents if d["kind"] == kind and (name is None or d["metadata"]["name"] == name)]
        assert len(found) == 1, f"{len(found)} rendered {kind} {name or ''}"
        return found[0]

    # --- applying -----------------------------------------------------------------------------------------
    def apply(self, docs: Iterable[dict[str, Any]]) -> dict[str, str]:
        """Server-side apply of ``docs`` one by one, in order; the errors by object."""
        errors = {}
        for doc in docs:
            proc = self.cluster.kubectl("apply", "--server-side", f"--field-manager={FIELD_MANAGER}", "-f", "-",
                                        input=json.dumps(doc), check=False)
            if proc.returncode:
                errors[ref(doc)] = proc.stderr.strip()
        return errors

    def deploy(self, *, settle: bool = True) -> Deployment:
        """Creates the profile, starts the ComputeDomain stand-in where the stack has ComputeDomains, applies every
        object, and waits for the controllers to settle."""
        self._clear_leftovers()
        self.existing_namespaces = set(self.cluster.kubectl(
            "get", "namespaces", "-o", "jsonpath={.items[*].metadata.name}").stdout.split()) | KEPT_NAMESPACES
        for obj in self.profile.nodes:
            self.cluster.kubectl("create", "-f", "-", input=json.dumps(obj))
        self.cluster.kubectl("wait", "--for=condition=Ready", "--timeout=60s",
                             *[f"node/{n['metadata']['name']}" for n in self.profile.nodes])
        for obj in [*self.profile.device_classes, *self.profile.slices]:
            self.cluster.kubectl("create", "-f", "-", input=json.dumps(obj))
        if any(d["kind"] == "ComputeDomain" for d in self.documents):
            self.controller = ComputeDomainController(self.cluster).__enter__()
        # The server depends on the fabric check (Pulumi creates it once the check's Job is complete, and the check's
        # pods hold every GPU of the group while they run): apply it after that Job, as `pulumi up` does.
        gates, held = self.gated()
        self.apply_errors = self.apply([d for d in self.documents if d not in held])
        if held:
            self.wait_jobs(gates)
            self.apply_errors |= self.apply(held)
        if settle:
            self.settle()
        return self

    def gated(self) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """(the fabric check's Jobs, the server workloads that wait for them); both empty without a check."""
        gates = [d for d in self.documents if d["kind"] == "Job" and _component(d) == "fabric-check"]
        held = [d for d in self.documents if gates and d["kind"] in ("LeaderWorkerSet", "StatefulSet", "Deployment")
                and _component(d) == "model-server"]
        return gates, held

    def wait_jobs(self, jobs: list[dict[str, Any]], seconds: float = SETTLE_SECONDS) -> None:
        """Until every Job of ``jobs`` has completed or failed, or the time runs out (the checks then say so)."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            live = [self.live(j) for j in jobs]
            if all(j is not None and _job_finished(j) for j in live):
                return
            time.sleep(1.0)

    def settle(self, seconds: float = SETTLE_SECONDS) -> None:
        """Until every pod of the stack is bound, every claim of a volume bound and every Job finished; or until
        what is left (pods the scheduler reports unschedulable, pending volumes, Jobs that cannot run) has not
        changed for STABLE_SECONDS (the PersistentVolume controller binds a static volume on its own period, after
        which the scheduler retries the pods that waited for it); or until the time runs out: the assertions then
        say what is left."""
        deadline = time.monotonic() + seconds
        last: tuple[Any, ...] | None = None
        quiet_since = time.monotonic()
        while time.monotonic() < deadline:
            time.sleep(1.0)
            pods = self.pods()
            if (not pods and self.expects_pods()) or not self._workloads_created():
                continue
            unbound = sorted(p["metadata"]["name"] for p in pods if not p["spec"].get("nodeName"))
            volumes = sorted(c["metadata"]["name"] for c in self.get("persistentvolumeclaims")
                             if (c.get("status") or {}).get("phase") != "Bound")
            jobs = sorted(j["metadata"]["name"] for j in self.get("jobs") if not _job_finished(j))
            if not unbound and not volumes and not jobs:
                return
            state = (unbound, volumes, jobs)
            if state != last:
                last, quiet_since = state, time.monotonic()
            elif time.monotonic() - quiet_since >= STABLE_SECONDS and all(
                    _unschedulable(p) for p in pods if p["metadata"]["name"] in unbound):
                return

    def expects_pods(self) -> bool:
        return any(d["kind"] in ("Job", "Deployment", "StatefulSet", "LeaderWorkerSet", "DaemonSet")
                   for d in self.documents)

    def _workloads_created(self) -> bool:
        """Every LeaderWorkerSet has all its pods (the controller creates workers after the leader)."""
        for lws in (d for d in self.documents if d["kind"] == "LeaderWorkerSet"):
            want = int(lws["spec"].get("replicas", 1)) * int(lws["spec"]["leaderWorkerTemplate"].get("size", 1))
            have = [p for p in self.pods() if (p["metadata"].get("labels") or {}).get(
                "leaderworkerset.sigs.k8s.io/name") == lws["metadata"]["name"]]
            if len(have) < want:
                return False
        return True

    def clean(self) -> None:
        """Removes everything the deployment created (``_sweep`` of the namespaces it created); a ``CleanError``
        names what is left and what holds it."""
        if self.controller:
            self.controller.stop()
        left = self._sweep(self.created_namespaces())
        if left:
            raise CleanError(f"{self.stack}: still present {CLEAN_SECONDS:.0f} s after its clean began: "
                             + "; ".join(left))

    def created_namespaces(self) -> list[str]:
        """The rendered namespaces that were not there before the deployment: cleaning deletes these (and all in
        them) and leaves the others (lws-system, kube-system)."""
        return sorted(self._rendered_namespaces() - self.existing_namespaces)

    def _rendered_namespaces(self) -> set[str]:
        return {d["metadata"]["name"] for d in self.documents if d["kind"] == "Namespace"}

    def _clear_leftovers(self) -> None:
        """Before a deployment: what an earlier deployment of the same objects left (its clean stopped, or never
        ran) is swept first, so creating the profile never fails on ``already exists`` and nothing is applied into
        a dying namespace. Any rendered namespace outside ``KEPT_NAMESPACES``, or any profile object of the same
        name, found on the cluster counts as left over: the cluster is the session's own."""
        namespaces = sorted(self._rendered_namespaces() - KEPT_NAMESPACES)
        found = self.live_many([*self.profile.objects, *(_namespace(n) for n in namespaces)])
        if found:
            left = self._sweep(namespaces)
            if left:
                raise CleanError(f"{self.stack}: an earlier deployment's objects are still present: "
                                 + "; ".join(left))

    def _sweep(self, namespaces: list[str]) -> list[str]:
        """Deletes the rendered objects, the pods of the stack's namespaces, ``namespaces`` (with all in them) and
        then the profile's objects, without waiting on any one deletion: every delete is issued with
        ``--wait=false`` whatever the one before it gave, pods go with no grace period, and what only a controller
        would finish is finished here (``_unblock``), so a loaded controller manager cannot hold the next deployment
        up. Then one bounded wait (``CLEAN_SECONDS``) until nothing is left; what is left then, with what holds it.
        The nodes go last, once their pods are gone: kwok finishes a deletion only on a node it manages."""
        outside = [d for d in self.documents if d["kind"] != "Namespace"
                   and d["metadata"].get("namespace") not in namespaces]
        deadline = time.monotonic() + CLEAN_SECONDS
        # The workloads first, so that no controller makes new pods while the namespace goes.
        self._delete_all(list(reversed([d for d in self.documents if d["kind"] != "Namespace"])))
        for namespace in self.namespaces():
            self.cluster.kubectl("delete", "pods", "--all", "-n", namespace, "--grace-period=0", "--force",
                                 "--wait=false", check=False)
        if namespaces:
            self.cluster.kubectl("delete", "namespace", *namespaces, "--ignore-not-found", "--wait=false",
                                 check=False)
        left = self._wait_gone(outside, namespaces, deadline)
        self._delete_all(list(reversed(self.profile.objects)))
        return left + self._wait_gone(self.profile.objects, [], deadline)

    def _delete_all(self, docs: list[dict[str, Any]]) -> None:
        """Deletes ``docs`` in their order with one kubectl call that waits for none of them; an object already
        gone, or of a kind no longer served, is no error (kubectl goes on to the next)."""
        if docs:
            self.cluster.kubectl("delete", "-f", "-", "--ignore-not-found", "--wait=false", check=False,
                                 input=json.dumps({"apiVersion": "v1", "kind": "List", "items": docs}))

    def _wait_gone(self, docs: list[dict[str, Any]], namespaces: list[str], deadline: float) -> list[str]:
        """Until none of ``docs``, of ``namespaces`` and of the pods in the stack's namespaces is left, or the
        deadline; what is left then, each with what holds it. Each round finishes what only a controller would."""
        while True:
            left = self._left(docs, namespaces)
            if left == [] or time.monotonic() >= deadline:
                return ["the apiserver did not answer"] if left is None else [_holds(o) for o in left]
            self._unblock(left)
            time.sleep(1.0)

    def _left(self, docs: list[dict[str, Any]], namespaces: list[str]) -> list[dict[str, Any]] | None:
        """What of ``docs``, ``namespaces`` and the stack's pods is still there; None if a read failed (a loaded
        apiserver's timeout is not "gone")."""
        wanted = [*docs, *(_namespace(n) for n in namespaces)]
        out: list[dict[str, Any]] = []
        if wanted:
            proc = self.cluster.kubectl("get", "-f", "-", "-o", "json", "--ignore-not-found",
                                        input=json.dumps({"apiVersion": "v1", "kind": "List", "items": wanted}),
                                        check=False)
            if proc.returncode:
                return None
            out += _items(proc.stdout)
        for ns in self.namespaces():
            proc = self.cluster.kubectl("get", "pods", "-n", ns, "-o", "json", check=False)
            if proc.returncode:
                return None
            out += json.loads(proc.stdout)["items"]
        return out

    def _unblock(self, items: list[dict[str, Any]]) -> None:
        """Finishes the deletion of what is already being deleted and waits only on a controller: a pod's
        finalizers (the Job controller's ``batch.kubernetes.io/job-tracking`` on the pods of a deleted Job) are
        removed, and a pod still in a grace period is deleted now. The cluster is the test's: nothing else reads
        their accounting."""
        for item in items:
            meta = item["metadata"]
            if item["kind"] != "Pod" or not meta.get("deletionTimestamp"):
                continue
            if meta.get("finalizers"):
                self.cluster.kubectl("patch", "pod", meta["name"], "-n", meta["namespace"], "--type=merge",
                                     "-p", '{"metadata":{"finalizers":null}}', check=False)
            else:
                self.cluster.kubectl("delete", "pod", meta["name"], "-n", meta["namespace"], "--grace-period=0",
                                     "--force", "--wait=false", check=False)

    # --- reading ------------------------------------------------------------------------------------------
    def namespaces(self) -> list[str]:
        return sorted({d["metadata"]["namespace"] for d in self.documents if d["metadata"].get("namespace")})

    def get(self, resource: str) -> list[dict[str, Any]]:
        """Every ``resource`` in the stack's namespaces. A failed read raises (after one retry, for a loaded
        apiserver's timeout) rather than reading as "none": an empty answer would pass some checks and fail others
        for the wrong reason (CI once saw a Job's pod "not created" on a read that failed)."""
        out = []
        for ns in self.namespaces():
            proc = self.cluster.kubectl("get", resource, "-n", ns, "-o", "json", check=False)
            if proc.returncode:
                proc = self.cluster.kubectl("get", resource, "-n", ns, "-o", "json")
            out += json.loads(proc.stdout)["items"]
        return out

    def pods(self) -> list[dict[str, Any]]:
        return self.get("pods")

    def pods_of(self, owner: dict[str, Any]) -> list[dict[str, Any]]:
        uid = owner["metadata"]["uid"]
        return [p for p in self.pods() if any(o["uid"] == uid for o in p["metadata"].get("ownerReferences") or [])]

    def live(self, doc: dict[str, Any]) -> dict[str, Any] | None:
        meta = doc["metadata"]
        args = ["-n", meta["namespace"]] if meta.get("namespace") else []
        command = ("get", _resource(doc), meta["name"], *args, "-o", "json", "--ignore-not-found")
        proc = self.cluster.kubectl(*command, check=False)
        if proc.returncode:  # not "not found" (that exits 0, empty): a failed read, retried once, then raised
            proc = self.cluster.kubectl(*command)
        return json.loads(proc.stdout) if proc.stdout.strip() else None

    def live_many(self, docs: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
        """The live objects of ``docs`` that exist, by ``ref`` (one kubectl call)."""
        proc = self.cluster.kubectl("get", "-f", "-", "-o", "json", "--ignore-not-found",
                                    input=json.dumps({"apiVersion": "v1", "kind": "List", "items": docs}), check=False)
        return {ref(i): i for i in _items(proc.stdout)}

    def nodes(self) -> dict[str, dict[str, Any]]:
        items = json.loads(self.cluster.kubectl("get", "nodes", "-o", "json").stdout)["items"]
        return {n["metadata"]["name"]: n for n in items}

    def events(self, obj: dict[str, Any]) -> list[str]:
        meta = obj["metadata"]
        proc = self.cluster.kubectl("get", "events", "-n", meta.get("namespace") or "default", "-o", "json",
                                    "--field-selector", f"involvedObject.name={meta['name']}", check=False)
        return [e.get("message", "") for e in json.loads(proc.stdout)["items"]] if proc.returncode == 0 else []


def _resource(doc: dict[str, Any]) -> str:
    """``kind.group`` for kubectl (unambiguous across groups)."""
    group = doc["apiVersion"].split("/")[0] if "/" in doc["apiVersion"] else ""
    return f"{doc['kind'].lower()}.{group}" if group else doc["kind"].lower()


def _items(stdout: str) -> list[dict[str, Any]]:
    """The objects of a ``kubectl get -o json`` answer: one object, a List, or nothing at all (``--ignore-not-found``
    with none found)."""
    found = json.loads(stdout) if stdout.strip() else {}
    items = found.get("items", []) if found.get("kind") == "List" else [found]
    return [i for i in items if i.get("kind") and i.get("metadata")]


def _namespace(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}


def _holds(obj: dict[str, Any]) -> str:
    """``kind/namespace/name`` and what keeps it: not yet deleted, its finalizers, its phase."""
    meta, status = obj["metadata"], obj.get("status") or {}
    why = [f"finalizers {meta['finalizers']}" if meta.get("finalizers") else "",
           "deletion not begun" if not meta.get("deletionTimestamp") else "",
           f"phase {status['phase']}" if status.get("phase") else "",
           f"on node {obj['spec']['nodeName']}" if (obj.get("spec") or {}).get("nodeName") else ""]
    return f"{ref(obj)} ({', '.join(w for w in why if w) or 'deleting'})"


def _component(doc: dict[str, Any]) -> str:
    return str(((doc.get("metadata") or {}).get("labels") or {}).get("app.kubernetes.io/component", ""))


def _unschedulable(pod: dict[str, Any]) -> bool:
    return any(c["type"] == "PodScheduled" and c["status"] == "False" and c.get("reason") == "Unschedulable"
               for c in (pod.get("status") or {}).get("conditions") or [])


def _job_finished(job: dict[str, Any]) -> bool:
    return any(c["type"] in ("Complete", "Failed") and c["status"] == "True"
               for c in (job.get("status") or {}).get("conditions") or [])


def unschedulable_reason(pod: dict[str, Any]) -> str:
    for c in (pod.get("status") or {}).get("conditions") or []:
        if c["type"] == "PodScheduled" and c["status"] == "False":
            return c.get("message", c.get("reason", ""))
    return ""


def to_yaml(docs: list[dict[str, Any]]) -> str:
    return yaml.safe_dump_all(docs)


Mutation = Callable[[Deployment], None]

__all__ = ["CleanError", "Deployment", "FIELD_MANAGER", "Mutation", "NO_PUBLIC_CRD", "install_crds", "kubernetes_stacks", "ref",
           "stack_documents", "unschedulable_reason"]
