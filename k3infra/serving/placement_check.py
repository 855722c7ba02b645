"""Wait until a GPU pool's nodes can hold every replica inside one topology domain, or fail saying why.

A replica whose tensor parallelism spans nodes needs all of them in one NVLink domain (and, where the fabric is
partitioned the same way, one InfiniBand fabric): the server's pods carry a required pod affinity on the pool's
``group_topology_label`` (AKS: GPU feature discovery's ``nvidia.com/gpu.clique``; GKE:
``cloud.google.com/gce-topology-subblock``). Nodes that report different values leave a replica's last pod Pending
for ever, and ``pulumi up`` fails only when the LeaderWorkerSet's await runs out. This check runs first, in a Job
(k3infra.serving.placement), and reads nothing but the pool's nodes:

- as long as some of the pool's nodes are missing or lack the label, it waits (the label is set by software that
  starts after the node joins);
- once the nodes can hold ``replicas`` groups of ``nodes`` sharing one value, it succeeds;
- once every node of the pool is there and labelled and they cannot, it fails at once, naming the values, the
  nodes and what to do; at its deadline it fails the same way, naming the nodes still without the label.

It runs in the engine image (any python3; the standard library only, nothing downloaded) with the pod's service
account token, which may get and list nodes and nothing else.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import ssl
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from typing import Callable, Sequence

ACCOUNT = "/var/run/secrets/kubernetes.io/serviceaccount"
RBAC_GRACE_SECONDS = 60.0
"""How long a refused node list is retried: a binding created moments before takes a moment to reach the
API server's authorizer."""


@dataclasses.dataclass(frozen=True)
class Node:
    """A node of the pool and its value of the topology label (None: not labelled yet)."""

    name: str
    value: str | None


@dataclasses.dataclass(frozen=True)
class Verdict:
    """``ok``, ``wait`` or ``fail``, and what to print."""

    state: str
    message: str


def layout(nodes: Sequence[Node], label: str) -> str:
    """The nodes grouped by their value of ``label``: ``label=A: n1, n2; label=B: n3; without label: n4``."""
    groups: dict[str, list[str]] = {}
    for n in nodes:
        if n.value:
            groups.setdefault(n.value, []).append(n.name)
    parts = [f"{label}={v}: {', '.join(sorted(names))}" for v, names in sorted(groups.items())]
    missing = sorted(n.name for n in nodes if not n.value)
    if missing:
        parts.append(f"without {label}: {', '.join(missing)}")
    return "; ".join(parts) or "no nodes"


def assess(nodes: Sequence[Node], *, label: str, nodes_per_replica: int, replicas: int, pool_nodes: int,
           advice: str) -> Verdict:
    """Whether ``replicas`` groups of ``nodes_per_replica`` nodes sharing one value of ``label`` fit the pool now
    (``ok``), may still fit once every node of the pool (``pool_nodes``) is there and labelled (``wait``), or never
    will (``fail``)."""
    counts: dict[str, int] = {}
    for n in nodes:
        if n.value:
            counts[n.value] = counts.get(n.value, 0) + 1
    fit = sum(c // nodes_per_replica for c in counts.values())
    where = layout(nodes, label)
    if fit >= replicas:
        return Verdict("ok", f"{replicas} replica(s) of {nodes_per_replica} nodes fit inside one {label} each: {where}")
    labelled = sum(counts.values())
    if len(nodes) >= pool_nodes and labelled == len(nodes):
        return Verdict("fail", (
            f"the GPU pool's {len(nodes)} nodes cannot hold {replicas} replica(s) of {nodes_per_replica} nodes that "
            f"share one value of {label} (one NVLink domain per replica; the server's pods require it, so a replica "
            f"would stay Pending): {where}. {advice}"))
    return Verdict("wait", f"{len(nodes)} of {pool_nodes} nodes, {labelled} labelled: {where}")


class Forbidden(RuntimeError):
    """The API server refused the node list (401/403)."""


def list_nodes(api: str, selector: str, label: str, token_file: str, ca_file: str | None,
               timeout: float = 30.0) -> list[Node]:
    """The nodes matching ``selector`` with their value of ``label``."""
    url = f"{api.rstrip('/')}/api/v1/nodes?{urllib.parse.urlencode({'labelSelector': selector})}"
    with open(token_file) as f:  # read every time: projected tokens rotate
        token = f.read().strip()
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}", "Accept": "application/json"})
    context = ssl.create_default_context(cafile=ca_file) if url.startswith("https:") else None
    try:
        with urllib.request.urlopen(request, timeout=timeout, context=context) as r:
            body = json.load(r)
    except urllib.error.HTTPError as e:
        if e.code in (401, 403):
            raise Forbidden(f"the API server answered {e.code} to listing nodes: {e.read()[:300]!r}") from e
        raise
    return sorted((Node(item["metadata"]["name"], (item["metadata"].get("labels") or {}).get(label))
                   for item in body.get("items") or ()), key=lambda n: n.name)


def run(fetch: Callable[[], list[Node]], *, label: str, nodes_per_replica: int, replicas: int, pool_nodes: int,
        advice: str, timeout: float, interval: float, log: Callable[[str], None],
        clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep) -> Verdict:
    """Poll ``fetch`` until the verdict is ``ok`` or ``fail`` or ``timeout`` passes (then ``fail``)."""
    started = clock()
    deadline = started + timeout
    last = Verdict("wait", "no answer from the API server yet")
    while True:
        try:
            last = assess(fetch(), label=label, nodes_per_replica=nodes_per_replica, replicas=replicas,
                          pool_nodes=pool_nodes, advice=advice)
        except Forbidden as e:
            if clock() - started > RBAC_GRACE_SECONDS:
                return Verdict("fail", f"{e}: the Job's service account must be bound to a ClusterRole that may get "
                                       "and list nodes")
            log(f"{e}; retrying")
        except (OSError, ValueError, KeyError) as e:  # the API server restarting, a proxy, a partial answer
            log(f"listing nodes failed ({type(e).__name__}: {e}); retrying")
        if last.state != "wait":
            return last
        if clock() >= deadline:
            return Verdict("fail", (
                f"timed out after {timeout:g} s waiting for the GPU pool's nodes and their {label} label ({last.message}"
                f"). Nodes without the label have not been labelled by what sets it (for nvidia.com/gpu.clique: NVIDIA "
                f"GPU feature discovery on the node); a pool short of nodes has not finished scaling. {advice}"))
        log(f"waiting: {last.message}")
        sleep(interval)


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="placement_check", description=(__doc__ or "").split("\n\n")[0])
    p.add_argument("--selector", required=True, help="the pool's node selector, k=v[,k=v]")
    p.add_argument("--label", required=True, help="the node label whose value names one topology domain")
    p.add_argument("--nodes-per-replica", type=int, required=True)
    p.add_argument("--replicas", type=int, required=True)
    p.add_argument("--pool-nodes", type=int, required=True, help="nodes the pool holds when complete")
    p.add_argument("--timeout", type=float, required=True, help="seconds")
    p.add_argument("--interval", type=float, default=10.0)
    p.add_argument("--advice", default="", help="what to do when the nodes do not fit (the cloud's way)")
    p.add_argument("--api", default=None, help="API server URL; default: the in-cluster service")
    p.add_argument("--token-file", default=f"{ACCOUNT}/token")
    p.add_argument("--ca-file", default=f"{ACCOUNT}/ca.crt")
    p.add_argument("--termination-log", default="/dev/termination-log")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """0 when the replicas fit, 1 when they do not (the reason on stderr and in the termination message)."""
    a = _parser().parse_args(argv)
    api = a.api or (f"https://{os.environ['KUBERNETES_SERVICE_HOST']}:{os.environ.get('KUBERNETES_SERVICE_PORT', '443')}")

    def log(text: str) -> None:
        print(text, file=sys.stderr, flush=True)

    verdict = run(lambda: list_nodes(api, a.selector, a.label, a.token_file, a.ca_file),
                  label=a.label, nodes_per_replica=a.nodes_per_replica, replicas=a.replicas, pool_nodes=a.pool_nodes,
                  advice=a.advice, timeout=a.timeout, interval=a.interval, log=log)
    if verdict.state == "ok":
        log(f"placement: {verdict.message}")
        return 0
    log(f"FAILED placement: {verdict.message}")
    try:
        with open(a.termination_log, "w") as f:
            f.write(verdict.message[:4000])  # the kubelet keeps at most 4096 bytes
    except OSError:
        pass
    return 1


if __name__ == "__main__":
    sys.exit(main())
