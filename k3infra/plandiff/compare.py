"""Comparing two plans: resources matched by URN, replacements decided by the rules of ``paths``, outputs and
warnings."""

import json
from typing import Any

from .changes import MISSING, Change, Kind, PlanDiff, PlanFormatError, ResourceDiff
from .paths import covers, diff_values, key_segment, leaves, replace_paths
from .shape import shape_changes


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
            changes += [Change(p, MISSING, v, m) for p, v, m in leaves(n, key_segment("", k), k, None, mask)]
        elif n is MISSING:
            changes += [Change(p, v, MISSING, m) for p, v, m in leaves(o, key_segment("", k), k, None, mask)]
        else:
            changes += diff_values(o, n, key_segment("", k), k, None, mask)
    # Pulumi leaves the properties a resource's ignoreChanges names as they are (the fabric check's Job after it ran;
    # a scaled workload's replicas): not a change.
    ignored = [str(i) for i in (new.get("options") or {}).get("ignoreChanges") or []]
    changes = [c for c in changes if not any(covers(i, c.path) for i in ignored)]
    rules = replace_paths(type_)
    changes = [Change(c.path, c.old, c.new, c.masked, any(covers(r, c.path) for r in rules)) for c in changes]
    if old.get("provider") != new.get("provider"):
        changes.append(Change("(provider)", old.get("provider") or MISSING, new.get("provider") or MISSING))
    if bool(old.get("protect")) != bool(new.get("protect")):
        changes.append(Change("(protect)", bool(old.get("protect")), bool(new.get("protect"))))
    changes += [Change(f"(options).{c.path}", c.old, c.new, c.masked)
                for c in diff_values(old.get("options") or {}, new.get("options") or {}, "")]
    return changes


def diff_plans(base: Any, head: Any) -> PlanDiff:
    """The diff of two plan documents (``k3infra plan --format json``)."""
    base, head = _check(base, "BASE"), _check(head, "HEAD")
    result = PlanDiff(base_stack=str(base["stack"]), head_stack=str(head["stack"]),
                      deployment=shape_changes(base, head))
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
    result.outputs = diff_values({k: v for k, v in (base.get("outputs") or {}).items() if k != "warnings"},
                                  {k: v for k, v in (head.get("outputs") or {}).items() if k != "warnings"}, "")
    if base.get("sizing") != head.get("sizing") and "sizing" not in (head.get("outputs") or {}):
        result.outputs += diff_values(base.get("sizing") or {}, head.get("sizing") or {}, "sizing")
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
