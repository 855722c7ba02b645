"""Render a recording's Kubernetes objects as YAML files, one per object, in apply order.

Works on any recording (a whole stack's plan, or a program that calls ``serve()``): every ``kubernetes:*``
registration is either an object (its registered inputs carry ``apiVersion``, ``kind``, ``metadata``...) or a
Helm chart (``kubernetes:helm.sh/v4:Chart``, which the recording engine cannot expand offline: its file
records the chart, version, namespace and values).

Apply order: a topological order of the registrations' dependencies (a dependency on a component stands for
everything under it), and among the objects ready at each step, namespaces first, then charts (they bring
CRDs and controllers), then Helm's install order by kind, then custom resources. Secret values are masked:
no token ever lands in a rendered file.
"""

import heapq
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from .offline import SECRET_MASK, Recording, Registration, ResourceRef, Secret, UNKNOWN, UNKNOWN_MASK

CHART_TYPES = frozenset({"kubernetes:helm.sh/v4:Chart", "kubernetes:helm.sh/v3:Release"})
SKIP_TYPES = frozenset({"kubernetes:yaml/v2:ConfigGroup", "kubernetes:yaml/v2:ConfigFile",
                        "kubernetes:kustomize/v2:Directory"})

KIND_ORDER = (
    "Namespace", "NetworkPolicy", "ResourceQuota", "LimitRange", "PodDisruptionBudget", "ServiceAccount", "Secret",
    "ConfigMap", "StorageClass", "PersistentVolume", "PersistentVolumeClaim", "CustomResourceDefinition",
    "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding", "Service", "DaemonSet", "Pod", "ReplicaSet",
    "Deployment", "HorizontalPodAutoscaler", "StatefulSet", "Job", "CronJob", "IngressClass", "Ingress",
    "APIService",
)
"""Helm's install order (``releaseutil.InstallOrder``) for the kinds k3infra may create."""

CHART_RANK = 1
"""Charts come right after namespaces: they install CRDs and the controllers custom resources need."""


@dataclass(frozen=True)
class Rendered:
    """One file of a render."""

    registration: Registration
    chart: bool
    document: dict[str, Any]

    @property
    def kind(self) -> str:
        return "HelmChart" if self.chart else str(self.document.get("kind", ""))

    @property
    def name(self) -> str:
        if self.chart:
            return str(self.document.get("release") or self.registration.name)
        return str((self.document.get("metadata") or {}).get("name") or self.registration.name)

    @property
    def namespace(self) -> str | None:
        if self.chart:
            return self.document.get("namespace")
        return (self.document.get("metadata") or {}).get("namespace")


def masked(value: Any) -> Any:
    """A YAML-ready copy with sorted keys: a secret keeps its shape with every leaf masked; references become
    their URN."""
    if isinstance(value, Secret):
        return _mask_leaves(value.value)
    if isinstance(value, ResourceRef):
        return value.urn
    if isinstance(value, dict):
        return {k: masked(value[k]) for k in sorted(value)}
    if isinstance(value, (list, tuple)):
        return [masked(v) for v in value]
    if value == UNKNOWN:
        return UNKNOWN_MASK
    return value


def _mask_leaves(value: Any) -> Any:
    if isinstance(value, Secret):
        return _mask_leaves(value.value)
    if isinstance(value, dict):
        return {k: _mask_leaves(value[k]) for k in sorted(value)}
    if isinstance(value, (list, tuple)):
        return [_mask_leaves(v) for v in value]
    return SECRET_MASK


def is_kubernetes(reg: Registration) -> bool:
    """A registration the render writes: a Kubernetes object or a Helm chart (not providers or config groups)."""
    return reg.type.startswith("kubernetes:") and reg.type not in SKIP_TYPES


def _document(reg: Registration) -> dict[str, Any]:
    if reg.type in CHART_TYPES:
        inputs = masked(reg.inputs)
        repo = (inputs.get("repositoryOpts") or {}).get("repo")
        return {
            "chart": inputs.get("chart"),
            **({"repository": repo} if repo else {}),
            "version": inputs.get("version"),
            "release": inputs.get("name") or reg.name,
            "namespace": inputs.get("namespace"),
            "values": inputs.get("values") or {},
        }
    doc = masked(reg.inputs)
    meta = dict(doc.get("metadata") or {})
    out_meta = (reg.outputs.get("metadata") or {}) if isinstance(reg.outputs.get("metadata"), dict) else {}
    if not meta.get("name"):
        meta["name"] = out_meta.get("name") or reg.name
    doc["metadata"] = dict(sorted(meta.items()))
    # apiVersion, kind, metadata first, as people write manifests
    head = {k: doc[k] for k in ("apiVersion", "kind", "metadata") if k in doc}
    return {**head, **{k: v for k, v in doc.items() if k not in head}}


def _rank(item: Rendered) -> int:
    if item.chart:
        return CHART_RANK
    kind = item.kind
    if kind == "Namespace":
        return 0
    if kind in KIND_ORDER:
        return 2 + KIND_ORDER.index(kind)
    return 2 + len(KIND_ORDER)


def apply_order(rec: Recording) -> list[Rendered]:
    """Every Kubernetes object and chart of ``rec``, dependencies first (see the module docstring)."""
    items = {r.urn: Rendered(r, r.type in CHART_TYPES, _document(r)) for r in rec.resources if is_kubernetes(r)}
    children: dict[str, list[str]] = {}
    for r in rec.resources:
        if r.parent:
            children.setdefault(r.parent, []).append(r.urn)

    def expand(urn: str, seen: set[str]) -> set[str]:
        """The rendered registrations a dependency on ``urn`` stands for."""
        if urn in seen:
            return set()
        seen.add(urn)
        if urn in items:
            return {urn}
        out: set[str] = set()
        for c in children.get(urn, ()):
            out |= expand(c, seen)
        return out

    deps: dict[str, set[str]] = {}
    for urn, item in items.items():
        d: set[str] = set()
        for dep in item.registration.dependencies:
            d |= expand(dep, set())
        d.discard(urn)
        deps[urn] = d
    # Objects under a chart come from the chart: nothing to order inside it.
    waiting = {u: set(d) for u, d in deps.items()}
    dependents: dict[str, list[str]] = {}
    for u, d in deps.items():
        for x in d:
            dependents.setdefault(x, []).append(u)

    def key(u: str) -> tuple[int, str, str, str]:
        it = items[u]
        return (_rank(it), it.namespace or "", it.name, it.registration.type)

    ready = [(key(u), u) for u, d in waiting.items() if not d]
    heapq.heapify(ready)
    out: list[Rendered] = []
    while ready:
        _, u = heapq.heappop(ready)
        out.append(items[u])
        for v in dependents.get(u, ()):
            waiting[v].discard(u)
            if not waiting[v]:
                heapq.heappush(ready, (key(v), v))
    if len(out) != len(items):
        stuck = sorted(items[u].registration.name for u in items if items[u] not in out)
        raise ValueError(f"dependency cycle among {stuck}")
    return out


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9.-]+", "-", text.lower()).strip("-")


def file_name(index: int, item: Rendered) -> str:
    """``NNN-kind-namespace-name.yaml`` (``.chart.yaml`` for a chart: it is not a Kubernetes object)."""
    parts = [f"{index:03d}", _slug(item.kind)]
    if item.namespace:
        parts.append(_slug(item.namespace))
    parts.append(_slug(item.name))
    return "-".join(parts) + (".chart.yaml" if item.chart else ".yaml")


class _Dumper(yaml.SafeDumper):
    pass


def _str_presenter(dumper: yaml.SafeDumper, data: str) -> yaml.Node:
    style = "|" if "\n" in data else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", data, style=style)


_Dumper.add_representer(str, _str_presenter)


def to_yaml(item: Rendered) -> str:
    """The file's text: a header comment for charts, then the document."""
    body = yaml.dump(item.document, Dumper=_Dumper, sort_keys=False, default_flow_style=False, width=120)
    if item.chart:
        doc = item.document
        header = (
            "# A Helm chart Pulumi installs (kubernetes:helm.sh/v4:Chart); not a Kubernetes object.\n"
            f"# helm install {doc['release']} {doc['chart']} --version {doc['version']}"
            + (f" --repo {doc['repository']}" if doc.get("repository") else "")
            + (f" --namespace {doc['namespace']}" if doc.get("namespace") else "")
            + " --values <values below>\n"
        )
        return header + body
    if item.kind == "Secret":
        body = "# Secret values are masked; Pulumi sets them from the stack's secrets.\n" + body
    return body


def write(rec: Recording, out: Path) -> list[Path]:
    """Write the files into ``out`` (created; stale ``NNN-*.yaml`` files of an earlier render are removed)."""
    out.mkdir(parents=True, exist_ok=True)
    for old in out.glob("[0-9][0-9][0-9]-*.yaml"):
        old.unlink()
    paths = []
    for i, item in enumerate(apply_order(rec), 1):
        p = out / file_name(i, item)
        p.write_text(to_yaml(item))
        paths.append(p)
    return paths


__all__ = ["Rendered", "apply_order", "file_name", "is_kubernetes", "masked", "to_yaml", "write"]
