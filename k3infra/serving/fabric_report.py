"""The stack output ``fabricCheck``: what each fabric check Job's leader measured, read from the Job itself.

The probe's rank 0 (k3infra.fabric_probe) merge-patches its report into the annotation ``k3infra.dev/fabric-check``
of its own Job before it exits; pulumi-kubernetes awaits a Job until it completes and returns the live object it
reads then (``provider/pkg/await/await.go``, ``Creation``), so the Job's ``metadata.annotations`` output carries the
report on the first ``pulumi up``, as the verify Job's does (observability.verify_job). Why an annotation and not the
pod's termination message, which the probe also writes: the program sees only the objects it declares, and a Job
object does not carry its pods' messages, whose names (``<job>-<index>-<random>``) it cannot know; reading them would
take a list of pods, which neither the program nor pulumi-kubernetes has. The cost is a token in the check's pods
and a Role that may ``patch`` the check's own Jobs and nothing else (not even ``get``).

Per Job (one group), like the verification's:

- ``pending``: no report and the Job not finished, or not read (``pulumi preview``, offline plans);
- ``passed`` / ``failed``: the report, reduced to what matters per path: the bus bandwidth measured against the
  expected figure and the floor (``threshold`` x expected, the stack's ``fabricCheck.minBusbwFraction``), the
  transport NCCL used against the one expected, and the problems;
- ``no-report``: the Job completed without a readable report (its pods ran nothing, as on the local try-out's kwok
  nodes; the probe's patch was refused; or the annotation is not a report), with a note naming where the result is
  read; ``failed`` likewise for a Job that failed without one.

The check's status is the worst of its groups': failed, no-report, pending, passed.
"""

import json
from typing import Any, Mapping, Sequence

from ..fabric_probe import ANNOTATION

ORDER = ("failed", "no-report", "pending", "passed")
"""The statuses, worst first: a check's is its worst group's."""
PATH_FIELDS = {"path": str, "collective": str, "ranks": int, "busbwGBs": (int, float), "fraction": (int, float),
               "ok": bool, "problems": list}
"""What the output takes of each path of the probe's report (``fabric_probe.judge``), and its type."""


def job_state(status: Any) -> str | None:
    """``complete``, ``failed`` or None (not finished, or not read yet: preview and offline plans) from a Job's
    ``status`` as the provider returns it (an object with ``conditions``, or a plain mapping)."""
    def field(obj: Any, name: str) -> Any:
        return obj.get(name) if isinstance(obj, Mapping) else getattr(obj, name, None)

    for condition in field(status, "conditions") or [] if status is not None else []:
        if field(condition, "status") == "True" and field(condition, "type") in ("Complete", "Failed"):
            return "complete" if field(condition, "type") == "Complete" else "failed"
    return None


def _look(ns: str, job: str) -> str:
    return f"`k3infra status <stack>` (its fabric line) or `kubectl -n {ns} logs job/{job}`"


def report_paths(doc: Any) -> list[dict[str, Any]]:
    """The report's paths, each checked against ``PATH_FIELDS``; ValueError naming what is wrong."""
    if not isinstance(doc, dict) or not isinstance(doc.get("paths"), list) or not doc["paths"]:
        raise ValueError("it has no list of paths")
    for i, p in enumerate(doc["paths"]):
        wrong = [k for k, t in PATH_FIELDS.items() if not isinstance(p, dict) or not isinstance(p.get(k), t)]
        if wrong:
            raise ValueError(f"path {i} lacks {', '.join(wrong)} of the right type")
        if not isinstance(p.get("transport"), (str, dict)):
            raise ValueError(f"path {i} names no transport")
    return doc["paths"]


def _measured(p: dict[str, Any], planned: Mapping[str, Mapping[str, Any]], threshold: float) -> dict[str, Any]:
    """One path as the output shows it: measured against the plan's expected figure and floor."""
    plan = planned.get(p["path"], {})
    expected = float(plan.get("expectedBusbwGBs", p.get("expectedBusbwGBs") or 0.0))
    t = p["transport"]
    return {"name": p["path"], "collective": p["collective"], "ranks": p["ranks"],
            "busbwGBs": p["busbwGBs"], "expectedBusbwGBs": expected,
            "floorBusbwGBs": round(expected * threshold, 2), "fraction": p["fraction"],
            "transport": t if isinstance(t, str) else {k: t.get(k, []) for k in ("betweenNodes", "insideNodes",
                                                                                 "networks")},
            "expectedTransport": plan.get("expect", p.get("expectedTransport")),
            "status": "passed" if p["ok"] else "failed", "problems": p["problems"]}


def group_output(annotations: Mapping[str, str] | None, ns: str, job: str, state: str | None,
                 planned: Mapping[str, Mapping[str, Any]], threshold: float) -> dict[str, Any]:
    """One group's entry from its Job's annotations and state (module docstring); ``planned`` is the plan's paths by
    name, ``threshold`` the stack's share of the expected figure."""
    raw = (annotations or {}).get(ANNOTATION)
    if not raw and state is None:
        return {"job": job, "status": "pending",
                "note": f"the check runs in Job {job} during `pulumi up`, before the server is created; the bus "
                        f"bandwidth and transport of each path land in this output; meanwhile {_look(ns, job)}"}
    if not raw:
        ended = "completed" if state == "complete" else "failed"
        return {"job": job, "status": "no-report" if state == "complete" else "failed",
                "note": f"Job {job} {ended} without writing its report into annotation {ANNOTATION} (on GPU nodes "
                        f"the probe's leader writes it before it exits): read the result with {_look(ns, job)}"}
    try:
        doc = json.loads(raw)
        paths = report_paths(doc)
    except ValueError as e:
        return {"job": job, "status": "no-report",
                "note": f"annotation {ANNOTATION} of Job {job} is not the probe's report ({e}): read the result "
                        f"with {_look(ns, job)}"}
    measured = [_measured(p, planned, threshold) for p in paths]
    failed = [m["name"] for m in measured if m["status"] == "failed"]
    return {"job": job, "status": "failed" if failed else "passed", "failed": failed,
            "backend": doc.get("backend", "unknown"), "paths": measured}


def check_status(groups: Sequence[Mapping[str, Any]]) -> str:
    """The worst status of the groups (``ORDER``)."""
    return min((str(g["status"]) for g in groups), key=ORDER.index, default="pending")


__all__ = ["ORDER", "check_status", "group_output", "job_state", "report_paths"]
