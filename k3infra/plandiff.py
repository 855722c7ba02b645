"""``k3infra diff``: what changes between two offline plans (``k3infra plan --format json``), for a PR comment.

Resources are matched by URN. Each one is:

- **added** / **removed**: its URN is only in the head / only in the base plan;
- **replaced**: Pulumi would delete it and create it again. Offline that is decided by rules, not by the
  provider (which is not here): (a) the same type and name under a different parent, or the same name and
  parent with a different type, when the head does not alias the base URN (a changed URN is a new
  resource to Pulumi); (b) a change to a property in :data:`REPLACE_ON`, properties the providers are
  known to replace on. The rules are conservative: a replacement they do not know shows as a change, and
  ``pulumi preview --diff`` (the preview workflow) stays the authority;
- **changed**: same URN, different inputs, provider, protect flag or resource options.

Every change lists its property paths (``spec.template.spec.containers[name=engine].image``) with the old
and new values. Values that are secret stay masked: plans already print ``[secret]``, and any leaf whose key
looks like a credential (:data:`SENSITIVE_KEY`), or anything under a Kubernetes Secret's ``data`` /
``stringData``, is masked here too; a masked value that changed says so without showing either side.
Stack outputs and warnings are compared as well.
"""

import difflib
import fnmatch
import json
import re
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Iterable

from .offline import SECRET_MASK


class Kind(StrEnum):
    """What happens to a resource."""

    ADD = "add"
    REMOVE = "remove"
    REPLACE = "replace"
    CHANGE = "change"


SYMBOL = {Kind.ADD: "+", Kind.REMOVE: "-", Kind.REPLACE: "+-", Kind.CHANGE: "~"}
"""Pulumi's preview symbols."""

_IDENTITY_GCP = ("name", "project", "location", "region", "zone")

REPLACE_ON: dict[str, tuple[str, ...]] = {
    # pulumi-kubernetes: metadata.name/namespace of every kind and the kinds' own force-new fields
    # (provider/pkg/provider/forcenew.go), plus fields the API server rejects as immutable, which the
    # provider answers with a replacement.
    "kubernetes:*": ("metadata.name", "metadata.namespace"),
    "kubernetes:core/v1:ConfigMap": ("data", "binaryData"),
    "kubernetes:core/v1:Secret": ("type",),
    "kubernetes:core/v1:Service": ("spec.clusterIP", "spec.type"),
    "kubernetes:core/v1:PersistentVolumeClaim": ("spec",),
    "kubernetes:core/v1:PersistentVolume": ("spec.csi", "spec.storageClassName"),
    "kubernetes:storage.k8s.io/v1:StorageClass": ("parameters", "provisioner"),
    "kubernetes:apps/v1:Deployment": ("spec.selector",),
    "kubernetes:apps/v1:StatefulSet": ("spec.selector", "spec.serviceName", "spec.volumeClaimTemplates",
                                       "spec.podManagementPolicy"),
    "kubernetes:batch/v1:Job": ("spec.template", "spec.selector"),
    # Google Cloud (terraform-bridged): the identity of the resource
    "gcp:container/cluster:Cluster": _IDENTITY_GCP,
    "gcp:container/nodePool:NodePool": (*_IDENTITY_GCP, "cluster"),
    "gcp:storage/bucket:Bucket": ("name", "project", "location"),
    "gcp:compute/resourcePolicy:ResourcePolicy": ("name", "project", "region", "workloadPolicy"),
    # AWS
    "aws:eks/cluster:Cluster": ("name",),
    "aws:eks/nodeGroup:NodeGroup": ("clusterName", "nodeGroupName", "nodeRoleArn", "subnetIds", "capacityType",
                                    "amiType", "instanceTypes"),
    "aws:s3/bucket:Bucket": ("bucket", "bucketPrefix"),
    "aws:ec2/capacityBlockReservation:CapacityBlockReservation": ("capacityBlockOfferingId", "instancePlatform"),
    "aws-native:sagemaker:Cluster": ("clusterName", "orchestrator", "vpcConfig"),
    # Azure (azure-native): the URL path of the resource
    "azure-native:*": ("resourceGroupName", "location"),
    "azure-native:containerservice:ManagedCluster": ("resourceName",),
    "azure-native:containerservice:AgentPool": ("resourceName", "agentPoolName", "vmSize"),
    "azure-native:storage:StorageAccount": ("accountName",),
    "azure-native:storage:BlobContainer": ("accountName", "containerName"),
    "azure-native:compute:CapacityReservationGroup": ("capacityReservationGroupName", "zones"),
    # pulumiverse time
    "time:index/sleep:Sleep": ("triggers",),
    # Alibaba Cloud
    "alicloud:cs/managedKubernetes:ManagedKubernetes": ("name", "clusterSpec"),
    "alicloud:cs/nodePool:NodePool": ("clusterId",),
    "alicloud:oss/bucket:Bucket": ("bucket",),
}
"""Type token (fnmatch pattern) → property paths whose change replaces the resource (a path covers what is
below it)."""

SENSITIVE_KEY = re.compile(r"(password|passwd|secret|token|apikey|api_key|privatekey|private_key|kubeconfig"
                           r"|credential|clientsecret|accesskey|access_key)", re.I)
"""A leaf (or a Kubernetes env var) whose name matches is masked, unless the name says it is a reference
(``...Name``, ``...Ref``, ``...Arn``, ``...Id``, ``...Path``...)."""

_REFERENCE_SUFFIX = re.compile(r"(name|names|ref|arn|id|ids|path|mode|enabled|type|policy|config)$", re.I)


class PlanFormatError(ValueError):
    """The input is not a ``k3infra plan --format json`` document."""


@dataclass(frozen=True)
class Change:
    """One property that differs."""

    path: str
    old: Any
    new: Any
    masked: bool = False
    """Both values are hidden (a secret changed)."""
    forces_replacement: bool = False


MISSING: Any = type("Missing", (), {"__repr__": lambda _self: "(absent)"})()
"""Marks a side where the property does not exist."""


@dataclass(frozen=True)
class ResourceDiff:
    """One resource that is added, removed, replaced or changed."""

    kind: Kind
    urn: str
    type: str
    name: str
    changes: tuple[Change, ...] = ()
    reason: str = ""
    """Why a replacement is a replacement."""
    base_urn: str | None = None
    """For a replacement detected by a changed URN: the URN it replaces."""


@dataclass
class PlanDiff:
    """Everything that differs between two plans."""

    base_stack: str
    head_stack: str
    resources: list[ResourceDiff] = field(default_factory=list)
    unchanged: int = 0
    outputs: list[Change] = field(default_factory=list)
    warnings_added: list[str] = field(default_factory=list)
    warnings_removed: list[str] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        """True when nothing differs."""
        return not (self.resources or self.outputs or self.warnings_added or self.warnings_removed)

    def count(self, kind: Kind) -> int:
        """How many resources are of ``kind``."""
        return sum(1 for r in self.resources if r.kind == kind)

    def summary(self) -> str:
        """``1 to add, 0 to remove, 0 to replace, 2 to change, 40 unchanged``."""
        return (f"{self.count(Kind.ADD)} to add, {self.count(Kind.REMOVE)} to remove, {self.count(Kind.REPLACE)} to "
                f"replace, {self.count(Kind.CHANGE)} to change, {self.unchanged} unchanged")

    def to_json(self) -> dict[str, Any]:
        """A machine-readable form (used by tests and scripts)."""
        def ch(c: Change) -> dict[str, Any]:
            return {"path": c.path, "old": _jsonable(c.old), "new": _jsonable(c.new), "masked": c.masked,
                    "forcesReplacement": c.forces_replacement}
        return {
            "baseStack": self.base_stack, "headStack": self.head_stack, "empty": self.empty,
            "resources": [{"kind": str(r.kind), "urn": r.urn, "type": r.type, "name": r.name, "reason": r.reason,
                           "baseUrn": r.base_urn, "changes": [ch(c) for c in r.changes]} for r in self.resources],
            "unchanged": self.unchanged, "outputs": [ch(c) for c in self.outputs],
            "warningsAdded": self.warnings_added, "warningsRemoved": self.warnings_removed,
        }


def _jsonable(v: Any) -> Any:
    return None if v is MISSING else v


# ---------------------------------------------------------------------------------------------------------
# paths and masking


_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*$")


def _key_segment(prefix: str, key: str) -> str:
    if _IDENT.match(key):
        return f"{prefix}.{key}" if prefix else key
    return f"{prefix}[{json.dumps(key)}]"


def _named(items: list[Any]) -> bool:
    """A list of objects each with a unique ``name`` (containers, env, ports, volumes): diffed by name."""
    names = [i.get("name") for i in items if isinstance(i, dict)]
    return len(names) == len(items) and all(isinstance(n, str) for n in names) and len(set(names)) == len(names)


def _sensitive(path: str, key: str | None, env_name: str | None) -> bool:
    if env_name is not None and SENSITIVE_KEY.search(env_name) and key == "value":
        return True
    return key is not None and bool(SENSITIVE_KEY.search(key)) and not _REFERENCE_SUFFIX.search(key)


def _leaves(value: Any, path: str, key: str | None = None, env_name: str | None = None,
            mask_all: bool = False) -> Iterable[tuple[str, Any, bool]]:
    """(path, value, masked) for every leaf below ``value``."""
    if isinstance(value, dict) and value:
        name = value.get("name") if isinstance(value.get("name"), str) else None
        for k in sorted(value):
            yield from _leaves(value[k], _key_segment(path, k), k, name if "value" in value else env_name, mask_all)
        return
    if isinstance(value, list) and value:
        if _named(value):
            for item in value:
                yield from _leaves(item, f"{path}[name={item['name']}]", None, None, mask_all)
        else:
            for i, item in enumerate(value):
                yield from _leaves(item, f"{path}[{i}]", None, None, mask_all)
        return
    masked = value == SECRET_MASK or (value not in (None, "", MISSING) and
                                      (mask_all or _sensitive(path, key, env_name)))
    yield path, value, masked


def _diff_values(old: Any, new: Any, path: str, key: str | None = None, env_name: str | None = None,
                 mask_all: bool = False) -> list[Change]:
    """Changes between two JSON values, at leaf granularity (objects and named lists recurse)."""
    if old == new:
        return []
    if isinstance(old, dict) and isinstance(new, dict):
        out: list[Change] = []
        name = new.get("name") if isinstance(new.get("name"), str) and "value" in new else env_name
        for k in sorted(set(old) | set(new)):
            sub = _key_segment(path, k)
            if k not in old:
                out += [Change(p, MISSING, v, m) for p, v, m in _leaves(new[k], sub, k, name, mask_all)]
            elif k not in new:
                out += [Change(p, v, MISSING, m) for p, v, m in _leaves(old[k], sub, k, name, mask_all)]
            else:
                out += _diff_values(old[k], new[k], sub, k, name, mask_all)
        return out
    if isinstance(old, list) and isinstance(new, list):
        out = []
        if _named(old) and _named(new):
            by_old = {i["name"]: i for i in old}
            by_new = {i["name"]: i for i in new}
            for n in [*by_old, *(n for n in by_new if n not in by_old)]:
                sub = f"{path}[name={n}]"
                if n not in by_new:
                    out += [Change(p, v, MISSING, m) for p, v, m in _leaves(by_old[n], sub, None, None, mask_all)]
                elif n not in by_old:
                    out += [Change(p, MISSING, v, m) for p, v, m in _leaves(by_new[n], sub, None, None, mask_all)]
                else:
                    out += _diff_values(by_old[n], by_new[n], sub, None, None, mask_all)
            if [i["name"] for i in old if i["name"] in by_new] != [i["name"] for i in new if i["name"] in by_old]:
                out.append(Change(f"{path}(order)", [i["name"] for i in old], [i["name"] for i in new]))
            return out
        if all(not isinstance(x, (dict, list)) for x in (*old, *new)):
            # a list of scalars (args, CIDRs, zones) reads best whole
            masked = any(x == SECRET_MASK for x in (*old, *new)) or mask_all or _sensitive(path, key, env_name)
            return [Change(path, old, new, masked)]
        for i in range(max(len(old), len(new))):
            sub = f"{path}[{i}]"
            if i >= len(new):
                out += [Change(p, v, MISSING, m) for p, v, m in _leaves(old[i], sub, None, None, mask_all)]
            elif i >= len(old):
                out += [Change(p, MISSING, v, m) for p, v, m in _leaves(new[i], sub, None, None, mask_all)]
            else:
                out += _diff_values(old[i], new[i], sub, None, None, mask_all)
        return out
    masked = SECRET_MASK in (old, new) or mask_all or _sensitive(path, key, env_name)
    return [Change(path, old, new, masked)]


def _covers(rule: str, path: str) -> bool:
    """``spec.template`` covers ``spec.template.spec.containers[name=x].image``."""
    return path == rule or path.startswith(rule + ".") or path.startswith(rule + "[")


def replace_paths(type_: str) -> tuple[str, ...]:
    """The property paths known to replace a resource of ``type_``."""
    out: list[str] = []
    for pattern, paths in REPLACE_ON.items():
        if fnmatch.fnmatchcase(type_, pattern):
            out += paths
    return tuple(out)


# ---------------------------------------------------------------------------------------------------------
# plans


def _check(plan: Any, label: str) -> dict[str, Any]:
    if not isinstance(plan, dict) or not isinstance(plan.get("resources"), list) or "stack" not in plan:
        raise PlanFormatError(f"{label} is not a `k3infra plan --format json` document (no stack / resources)")
    for r in plan["resources"]:
        if not isinstance(r, dict) or not {"urn", "type", "name"} <= set(r):
            raise PlanFormatError(f"{label}: a resource lacks urn, type or name: {str(r)[:120]}")
    return plan


def _mask_all_inputs(type_: str) -> tuple[str, ...]:
    return ("data", "stringData") if type_ == "kubernetes:core/v1:Secret" else ()


def _resource_changes(old: dict[str, Any], new: dict[str, Any]) -> list[Change]:
    type_ = new["type"]
    secret_roots = _mask_all_inputs(type_)
    changes: list[Change] = []
    old_in, new_in = old.get("inputs") or {}, new.get("inputs") or {}
    for k in sorted(set(old_in) | set(new_in)):
        mask = k in secret_roots
        o, n = old_in.get(k, MISSING), new_in.get(k, MISSING)
        if o is MISSING:
            changes += [Change(p, MISSING, v, m) for p, v, m in _leaves(n, _key_segment("", k), k, None, mask)]
        elif n is MISSING:
            changes += [Change(p, v, MISSING, m) for p, v, m in _leaves(o, _key_segment("", k), k, None, mask)]
        else:
            changes += _diff_values(o, n, _key_segment("", k), k, None, mask)
    rules = replace_paths(type_)
    changes = [Change(c.path, c.old, c.new, c.masked, any(_covers(r, c.path) for r in rules)) for c in changes]
    if old.get("provider") != new.get("provider"):
        changes.append(Change("(provider)", old.get("provider") or MISSING, new.get("provider") or MISSING))
    if bool(old.get("protect")) != bool(new.get("protect")):
        changes.append(Change("(protect)", bool(old.get("protect")), bool(new.get("protect"))))
    changes += [Change(f"(options).{c.path}", c.old, c.new, c.masked)
                for c in _diff_values(old.get("options") or {}, new.get("options") or {}, "")]
    return changes


def diff_plans(base: Any, head: Any) -> PlanDiff:
    """The diff of two plan documents (``k3infra plan --format json``)."""
    base, head = _check(base, "BASE"), _check(head, "HEAD")
    result = PlanDiff(base_stack=str(base["stack"]), head_stack=str(head["stack"]))
    old_by_urn = {r["urn"]: r for r in base["resources"]}
    new_by_urn = {r["urn"]: r for r in head["resources"]}
    only_old = [r for r in base["resources"] if r["urn"] not in new_by_urn]
    only_new = [r for r in head["resources"] if r["urn"] not in old_by_urn]

    # a changed URN: first what an alias says it was (a renamed or moved resource), then the same type and name
    # under another parent, or the same name and parent as another type
    pairs: dict[str, dict[str, Any]] = {}
    taken: set[str] = set()
    old_only_by_urn = {o["urn"]: o for o in only_old}
    for n in only_new:
        for alias in (n.get("options") or {}).get("aliases") or []:
            if alias in old_only_by_urn and alias not in taken:
                pairs[n["urn"]] = old_only_by_urn[alias]
                taken.add(alias)
                break
    for n in only_new:
        if n["urn"] in pairs:
            continue
        for o in only_old:
            if o["urn"] in taken or o["name"] != n["name"] or o.get("custom") != n.get("custom"):
                continue
            if o["type"] == n["type"] or o.get("parent") == n.get("parent"):
                pairs[n["urn"]] = o
                taken.add(o["urn"])
                break

    for n in head["resources"]:
        urn = n["urn"]
        if urn in pairs:
            o = pairs[urn]
            changes = _resource_changes(o, n)
            forced = [c.path for c in changes if c.forces_replacement]
            moved = Change("(urn)", o["urn"], urn)
            if o["urn"] in set((n.get("options") or {}).get("aliases") or []):
                kind = Kind.REPLACE if forced else Kind.CHANGE
                reason = (f"{', '.join(forced)} cannot change in place" if forced else "moved; aliased to its old URN")
            else:
                what = (f"type {o['type']} → {n['type']}" if o["type"] != n["type"]
                        else f"parent {_parent_label(o)} → {_parent_label(n)}")
                kind, reason = Kind.REPLACE, f"its URN changes ({what}) and no alias keeps the old one"
            result.resources.append(ResourceDiff(kind, urn, n["type"], n["name"], (moved, *changes), reason, o["urn"]))
        elif urn not in old_by_urn:
            added = _resource_changes({"type": n["type"], "inputs": {}, "protect": False}, {**n, "provider": None})
            result.resources.append(ResourceDiff(Kind.ADD, urn, n["type"], n["name"], tuple(added)))
        else:
            changes = _resource_changes(old_by_urn[urn], n)
            if not changes:
                result.unchanged += 1
                continue
            forced = [c.path for c in changes if c.forces_replacement]
            if forced:
                result.resources.append(ResourceDiff(Kind.REPLACE, urn, n["type"], n["name"], tuple(changes),
                                                     f"{', '.join(forced)} cannot change in place"))
            else:
                result.resources.append(ResourceDiff(Kind.CHANGE, urn, n["type"], n["name"], tuple(changes)))
    for o in only_old:
        if o["urn"] not in taken:
            result.resources.append(ResourceDiff(Kind.REMOVE, o["urn"], o["type"], o["name"]))

    # the exported warnings are compared line by line below, with the plan's other warnings
    result.outputs = _diff_values({k: v for k, v in (base.get("outputs") or {}).items() if k != "warnings"},
                                  {k: v for k, v in (head.get("outputs") or {}).items() if k != "warnings"}, "")
    if base.get("sizing") != head.get("sizing") and "sizing" not in (head.get("outputs") or {}):
        result.outputs += _diff_values(base.get("sizing") or {}, head.get("sizing") or {}, "sizing")
    old_w, new_w = list(base.get("warnings") or []), list(head.get("warnings") or [])
    result.warnings_added = [w for w in new_w if w not in old_w]
    result.warnings_removed = [w for w in old_w if w not in new_w]
    return result


def _parent_label(r: dict[str, Any]) -> str:
    parent = r.get("parent")
    if not parent:
        return "(stack)"
    tail = parent.split("::")
    return f"{tail[2].split('$')[-1]} {tail[-1]}" if len(tail) >= 4 else parent


def load(path: str) -> dict[str, Any]:
    """Read a plan JSON file (``-`` is not supported: two inputs are needed)."""
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except OSError as e:
        raise PlanFormatError(f"{path}: {e.strerror}") from None
    except json.JSONDecodeError as e:
        raise PlanFormatError(f"{path}: not JSON ({e})") from None


# ---------------------------------------------------------------------------------------------------------
# rendering


def _value(v: Any, masked: bool, width: int = 160) -> str:
    if v is MISSING:
        return "(absent)"
    if masked:
        return SECRET_MASK
    s = json.dumps(v, ensure_ascii=False, sort_keys=True)
    return s if len(s) <= width else s[: width - 1] + "…"


def _words(v: Any) -> list[str] | None:
    """A long string (or list of strings: a command line, a script) as words, for a word-level diff."""
    if isinstance(v, str):
        return v.split()
    if isinstance(v, list) and all(isinstance(x, str) for x in v):
        return [w for x in v for w in x.split()]
    return None


def word_diff(old: Any, new: Any, context: int = 3, width: int = 300) -> str | None:
    """``…size [-8-]{+4+} --pipeline…``: the words that changed between two long strings (or string lists),
    with a few words of context; None when the values are short or not text."""
    a, b = _words(old), _words(new)
    if a is None or b is None or len(json.dumps(old)) + len(json.dumps(new)) <= 160:
        return None
    parts: list[str] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        before = " ".join(a[max(0, i1 - context):i1])
        after = " ".join(a[i2:i2 + context])
        removed = f"[-{' '.join(a[i1:i2])}-]" if i2 > i1 else ""
        added = f"{{+{' '.join(b[j1:j2])}+}}" if j2 > j1 else ""
        parts.append("…" + " ".join(x for x in (before, removed + added, after) if x) + "…")
    text = " | ".join(parts) or "(whitespace only)"
    return text if len(text) <= width else text[: width - 1] + "…"


def _change_line(c: Change) -> str:
    flag = " [forces replacement]" if c.forces_replacement else ""
    if c.masked:
        if c.old is MISSING or c.new is MISSING:
            return f"{c.path}: {_value(c.old, True)} → {_value(c.new, True)}{flag}"
        return f"{c.path}: {SECRET_MASK} (changed; value hidden){flag}"
    words = word_diff(c.old, c.new)
    if words is not None:
        return f"{c.path}: {words}{flag}"
    return f"{c.path}: {_value(c.old, False)} → {_value(c.new, False)}{flag}"


def _title(d: PlanDiff) -> str:
    stacks = d.head_stack if d.base_stack == d.head_stack else f"{d.base_stack} → {d.head_stack}"
    return f"k3infra diff: {stacks}"


def render_text(d: PlanDiff, max_added_lines: int = 40) -> str:
    """The diff for a terminal or a log."""
    lines = [_title(d)]
    if d.empty:
        lines.append(f"No changes: the two plans register the same resources with the same inputs, "
                     f"outputs and warnings ({d.unchanged} resources).")
        return "\n".join(lines) + "\n"
    lines.append(f"resources: {d.summary()}")
    for r in d.resources:
        lines.append("")
        head = f"{SYMBOL[r.kind]} {r.type} {r.name}"
        if r.kind == Kind.REPLACE:
            head += f"  (replace: {r.reason})"
        elif r.reason:
            head += f"  ({r.reason})"
        lines.append(head)
        shown = list(r.changes)
        if r.kind == Kind.ADD:
            for c in shown[:max_added_lines]:
                lines.append(f"    {c.path}: {_value(c.new, c.masked)}")
            if len(shown) > max_added_lines:
                lines.append(f"    … and {len(shown) - max_added_lines} more properties")
        else:
            lines += [f"    {_change_line(c)}" for c in shown]
    if d.outputs:
        lines += ["", "outputs:"] + [f"  ~ {_change_line(c)}" for c in d.outputs]
    if d.warnings_added or d.warnings_removed:
        lines += ["", "warnings:"] + [f"  + {w}" for w in d.warnings_added] + [f"  - {w}" for w in d.warnings_removed]
    return "\n".join(lines) + "\n"


def _md(s: str) -> str:
    return s.replace("|", "\\|").replace("\n", " ")


def _md_code(s: str) -> str:
    s = _md(s)
    return f"`` {s} ``" if "`" in s else f"`{s}`"


def render_markdown(d: PlanDiff, max_added_lines: int = 40, max_chars: int | None = None) -> str:
    """The diff as GitHub-flavoured Markdown (one section per stack in a PR comment).

    Order: the summary, the resource table, the property changes of replaced and changed resources, the
    warnings, the outputs, the properties of created resources. With ``max_chars`` (a PR comment holds 65,536
    characters) the summary always appears, the resource table too (or, when it alone would take half the
    budget, a count per kind and type), the rest while it fits, and a note names what was left out."""
    head = [f"### {_md(_title(d))}", ""]
    if d.empty:
        head.append(f"No changes ({d.unchanged} resources, same inputs, outputs and warnings).")
        return "\n".join(head) + "\n"
    head += [f"**{d.summary()}**", ""]
    table: list[str] = []
    if d.resources:
        table += ["| | resource | what |", "| --- | --- | --- |"]
        for r in d.resources:
            what = {Kind.ADD: "create", Kind.REMOVE: "delete", Kind.CHANGE: "update in place",
                    Kind.REPLACE: f"replace: {r.reason}"}[r.kind]
            if r.kind == Kind.CHANGE and r.reason:
                what += f" ({r.reason})"
            table.append(f"| `{SYMBOL[r.kind]}` | {_md_code(r.type)} **{_md(r.name)}** | {_md(what)} |")
        table.append("")
    if max_chars is not None and len("\n".join(head + table)) > max_chars // 2:
        # too many resources for a comment: count them by kind and type instead
        counts: dict[tuple[Kind, str], int] = {}
        for r in d.resources:
            counts[(r.kind, r.type)] = counts.get((r.kind, r.type), 0) + 1
        table = [f"- `{SYMBOL[k]}` {n} x {_md_code(t)}" for (k, t), n in counts.items()] + [""]
    tail: list[str] = []
    if d.outputs:
        tail += ["**Outputs**", "", "| output | old | new |", "| --- | --- | --- |"]
        for c in d.outputs:
            tail.append(f"| {_md_code(c.path)} | {_md_code(_value(c.old, c.masked))} | {_md_code(_value(c.new, c.masked))} |")
        tail.append("")
    warnings: list[str] = []
    if d.warnings_added or d.warnings_removed:
        warnings += ["**Warnings**", ""] + [f"- added: {_md(w)}" for w in d.warnings_added] + \
            [f"- removed: {_md(w)}" for w in d.warnings_removed]
        warnings.append("")

    # what a reviewer reads first, and keeps when the budget is short: what changes in existing resources, the
    # warnings, the outputs, then the properties of what is created
    changed = [(_details(r, max_added_lines), "detail") for r in d.resources
               if r.changes and r.kind in (Kind.REPLACE, Kind.CHANGE)]
    created = [(_details(r, max_added_lines), "detail") for r in d.resources
               if r.changes and r.kind not in (Kind.REPLACE, Kind.CHANGE)]
    blocks = changed + ([("\n".join(warnings) + "\n", "the warnings")] if warnings else []) + \
        ([("\n".join(tail) + "\n", f"{len(d.outputs)} output change(s)")] if tail else []) + created
    head += table
    budget = None if max_chars is None else max_chars - len("\n".join(head)) - 300
    body: list[str] = []
    left_out: list[str] = []
    for block, what in blocks:
        if budget is not None and len(block) > budget:
            left_out.append(what)
            continue
        body.append(block)
        if budget is not None:
            budget -= len(block)
    if left_out:
        n = left_out.count("detail")
        named = [w for w in left_out if w != "detail"] + ([f"{n} resource detail(s)"] if n else [])
        body.append(f"_Left out to keep the comment short: {', '.join(named)}; the job's artifact has the full "
                    "diff._\n")
    return "\n".join(head) + "\n" + "\n".join(body) + "\n"


def _details(r: ResourceDiff, max_added_lines: int) -> str:
    rows = list(r.changes)
    out = [f"<details><summary><code>{SYMBOL[r.kind]}</code> {_md(r.type)} <b>{_md(r.name)}</b> "
           f"({len(rows)} propert{'y' if len(rows) == 1 else 'ies'})</summary>", ""]
    if r.kind == Kind.ADD:
        rows = [c for c in rows if not c.path.startswith("(options)")]
        out += ["| property | value |", "| --- | --- |"]
        out += [f"| {_md_code(c.path)} | {_md_code(_value(c.new, c.masked))} |" for c in rows[:max_added_lines]]
        if len(rows) > max_added_lines:
            out.append(f"| … | and {len(rows) - max_added_lines} more |")
    else:
        out += ["| property | old | new |", "| --- | --- | --- |"]
        for c in rows:
            old, new = _value(c.old, c.masked), _value(c.new, c.masked)
            if c.masked and MISSING not in (c.old, c.new):
                new = f"{SECRET_MASK} (changed)"
            flag = " **forces replacement**" if c.forces_replacement else ""
            words = None if c.masked else word_diff(c.old, c.new)
            if words is not None:
                out.append(f"| {_md_code(c.path)}{flag} | changed words: | {_md_code(words)} |")
            else:
                out.append(f"| {_md_code(c.path)}{flag} | {_md_code(old)} | {_md_code(new)} |")
    out += ["", "</details>", ""]
    return "\n".join(out) + "\n"


__all__ = ["Change", "Kind", "PlanDiff", "PlanFormatError", "REPLACE_ON", "ResourceDiff", "diff_plans", "load",
           "render_markdown", "render_text", "replace_paths"]
