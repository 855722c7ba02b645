"""The scheduler's node filters for the operators charts use, to decide where a chart's DaemonSet would run."""

from typing import Any, Iterable, Mapping, Sequence

from k3infra.catalog.kubernetes_nodes import Taint


def runs_on(labels: Mapping[str, str], taints: Iterable[Taint], node_selector: Mapping[str, str],
            affinity: Mapping[str, Any] | None, tolerations: Sequence[Mapping[str, Any]]) -> bool:
    """Whether a DaemonSet pod with this node selector, required node affinity and tolerations runs on the node
    (the scheduler's NodeAffinity and TaintToleration filters, for the operators charts use)."""
    if any(labels.get(k) != v for k, v in node_selector.items()):
        return False
    terms = ((affinity or {}).get("nodeAffinity") or {}).get("requiredDuringSchedulingIgnoredDuringExecution", {})
    terms = terms.get("nodeSelectorTerms") or []
    if terms and not any(all(_expression(labels, e) for e in t.get("matchExpressions") or []) for t in terms):
        return False
    return all(t.effect == "PreferNoSchedule" or any(_tolerates(tol, t) for tol in tolerations) for t in taints)


def _expression(labels: Mapping[str, str], e: Mapping[str, Any]) -> bool:
    op, key, values = e["operator"], e["key"], e.get("values") or []
    return {"In": key in labels and labels[key] in values, "NotIn": labels.get(key) not in values,
            "Exists": key in labels, "DoesNotExist": key not in labels}[op]


def _tolerates(tol: Mapping[str, Any], taint: Taint) -> bool:
    if tol.get("effect") and tol["effect"] != taint.effect:
        return False
    if not tol.get("key"):
        return tol.get("operator") == "Exists"
    if tol["key"] != taint.key:
        return False
    return tol.get("operator", "Equal") == "Exists" or tol.get("value", "") == taint.value


__all__ = ["runs_on"]
