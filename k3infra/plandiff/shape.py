"""What a reviewer must see before any resource: a change of the replica's layout, its parallel mode, its node
count or replicas, or the engine. Each is a consequence the resource diff spreads over many properties (``--set
nodes=3`` on gcp-a4xmax removes a ComputeDomain and a driver, changes a pool and a command line); here it is one line,
read from the plans' ``sizing`` and ``engine`` (``k3infra plan --format json``)."""

from typing import Any

from .changes import Change


def _layout(sizing: dict[str, Any]) -> str | None:
    ly = sizing.get("layout") or {}
    if not ly:
        return None
    text = f"TP={ly.get('tensorParallel')} x PP={ly.get('pipelineParallel')}"
    return text + (f" x EP={ly['expertParallel']}" if (ly.get("expertParallel") or 1) > 1 else "")


def _engine(plan: dict[str, Any]) -> str | None:
    e = plan.get("engine") or {}
    return f"{e['name']} {e.get('version', '')}".strip() if e.get("name") else None


def _facts(plan: dict[str, Any]) -> dict[str, Any]:
    sizing = plan.get("sizing") or {}
    return {
        "layout": _layout(sizing),
        "mode": (sizing.get("layout") or {}).get("mode"),
        "nodes per replica": sizing.get("nodes"),
        "replicas": sizing.get("replicas"),
        "engine": _engine(plan),
        "engine image": (plan.get("engine") or {}).get("image"),
    }


def shape_changes(base: dict[str, Any], head: dict[str, Any]) -> list[Change]:
    """The layout, mode, nodes per replica, replicas, engine (name and version) and engine image that differ, in that
    order; a plan that lacks one (an older plan without ``engine``) does not compare it."""
    old, new = _facts(base), _facts(head)
    return [Change(what, old[what], new[what]) for what in old
            if old[what] is not None and new[what] is not None and old[what] != new[what]]


def shape_lines(changes: list[Change]) -> list[str]:
    """``mode: multi-node-nvlink → pipeline-across-nodes``, one line per change."""
    return [f"{c.path}: {c.old} → {c.new}" for c in changes]


__all__ = ["shape_changes", "shape_lines"]
