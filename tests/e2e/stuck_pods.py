"""Watching a ``pulumi up`` for the first pod that cannot schedule or start, so the run fails within about a minute,
naming it, instead of at the provider's await timeout (issue 41: a planted mistake surfaced 15 minutes later).

A pod counts as stuck when one state has lasted ``grace`` seconds: the scheduler's ``Unschedulable`` (with its
message: which nodes, which taint, which claim), a container waiting for a reason it does not leave by itself
(image pull back-off, crash loop, a config error), or the pod failed. The grace lets what a controller settles in
seconds (a ComputeDomain's channel template created after the pods that claim it) settle first.
"""

import json
import time
from dataclasses import dataclass, field
from typing import Any

STUCK_WAITING = frozenset({"ImagePullBackOff", "ErrImagePull", "CrashLoopBackOff", "CreateContainerConfigError",
                           "CreateContainerError", "InvalidImageName", "RunContainerError"})
GRACE_SECONDS = 30.0


def stuck_reason(pod: dict[str, Any]) -> str | None:
    """Why ``pod`` cannot schedule or start, or None while it may still."""
    status = pod.get("status") or {}
    for c in status.get("conditions") or []:
        if c["type"] == "PodScheduled" and c["status"] == "False" and c.get("reason") == "Unschedulable":
            return f"cannot schedule: {c.get('message', 'Unschedulable')}"
    for cs in [*(status.get("initContainerStatuses") or []), *(status.get("containerStatuses") or [])]:
        waiting = (cs.get("state") or {}).get("waiting") or {}
        if waiting.get("reason") in STUCK_WAITING:
            return f"container {cs['name']} cannot start: {waiting['reason']}: {waiting.get('message', '')}".rstrip(": ")
    if status.get("phase") == "Failed":
        return f"failed: {status.get('reason') or status.get('message') or 'phase Failed'}"
    return None


@dataclass
class StuckPods:
    """A watch for ``Workspace.cli``: called every few seconds while the CLI runs, it returns what to fail with once
    a pod of ``namespace`` has been stuck for ``grace`` seconds."""

    cluster: Any
    namespace: str
    grace: float = GRACE_SECONDS
    since: dict[tuple[str, str], float] = field(default_factory=dict)

    def __call__(self) -> str | None:
        proc = self.cluster.kubectl("get", "pods", "-n", self.namespace, "-o", "json", check=False)
        if proc.returncode:  # the namespace not there yet, or a slow apiserver: nothing to say this round
            return None
        now, seen = time.monotonic(), set()
        for pod in json.loads(proc.stdout)["items"]:
            reason = stuck_reason(pod)
            if reason is None:
                continue
            key = (pod["metadata"]["name"], reason.split(":")[0])
            seen.add(key)
            first = self.since.setdefault(key, now)
            if now - first >= self.grace:
                return f"pod {self.namespace}/{key[0]} {reason} (for {now - first:.0f} s)"
        self.since = {k: v for k, v in self.since.items() if k in seen}
        return None


__all__ = ["GRACE_SECONDS", "STUCK_WAITING", "StuckPods", "stuck_reason"]
