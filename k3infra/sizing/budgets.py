"""The start-up probe's budget and how long Pulumi waits for a workload, from the load and warm-up estimates."""

import math

from ..catalog import PROBE_SAFETY_FACTOR

PROBE_PERIOD_SECONDS = 10
"""Period of the start-up probe; the budget is rounded up to a whole number of periods."""

IMAGE_PULL_SECONDS = 300
"""ASSUMPTION: pulling a ~20 GB engine image onto a fresh node, before the start-up probe starts counting."""

SCHEDULING_SECONDS = 120
"""ASSUMPTION: scheduling, volume attach and CSI mount before the container starts."""

def probe_budget_seconds(load_seconds: int, warmup_seconds: int) -> int:
    """Start-up probe budget: 1.5x (load + warm-up), rounded up to whole probe periods."""
    raw = PROBE_SAFETY_FACTOR * (load_seconds + warmup_seconds)
    return math.ceil(raw / PROBE_PERIOD_SECONDS) * PROBE_PERIOD_SECONDS


def await_timeout_seconds(probe_budget: int) -> int:
    """How long Pulumi waits for the serving workload: the probe budget plus image pull and scheduling."""
    return probe_budget + IMAGE_PULL_SECONDS + SCHEDULING_SECONDS


def rolling_update_timeout_seconds(await_timeout: int, batches: int) -> int:
    """How long Pulumi waits for a rolling update of a managed service that replaces its replicas one batch at a
    time: a whole start (the await timeout: probe budget, image pull, scheduling) per batch."""
    return await_timeout * max(1, batches)


def restart_seconds(load_seconds: int, warmup_seconds: int) -> int:
    """A rescheduled server pod on a node that served before: scheduling, load and warm-up (image on the node). The
    load is the cold start's: no loader keeps the weights across pods (the GCS FUSE file cache lives in the
    sidecar's emptyDir; Mountpoint, BlobFuse2 and ossfs caches are per mount; the streamer keeps none)."""
    return SCHEDULING_SECONDS + load_seconds + warmup_seconds
