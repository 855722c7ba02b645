"""Prove a serving group's GPU fabric before its weights load: collectives across exactly the group's ranks, the
transport NCCL chose on each path (read from NCCL's own log) and the bus bandwidth it reached, against the figure
the plan expects.

It runs inside the cluster (the fabric check Job, k3infra.serving.fabric_check), in the engine image's python3 and
torch, one process per GPU, started on every node of the group by ``torch.distributed.run`` with the group's leader
address and the node's rank from the environment, as the server's ranks are. It imports nothing of k3infra (the
in-cluster contract, ``pyproject.toml``): the plan reaches it as one JSON argument (``--plan``).

For each path of the plan (an all-reduce across the tensor-parallel group, an all-to-all across the expert-parallel
group, an all-reduce across the whole group when pipeline stages cross nodes) it:

- sets ``NCCL_DEBUG=INFO`` into a log file of its own and reads what NCCL wrote while the path's communicator was
  built: one ``Channel ... via ...`` line per connection (``TRANSPORTS`` cites the formats);
- times ``--iters`` collectives of ``--bytes`` after ``--warmup`` ones, takes the slowest rank's time and turns it
  into nccl-tests' bus bandwidth (``busbw``);
- fails the path when a connection between nodes uses a slower transport than the plan expects (a socket where it
  expects RDMA or NVLink, the network where it expects multi-node NVLink), when GPUs of one node talk through host
  memory, or when the bus bandwidth is under ``threshold`` x the expected figure, saying the likely cause and what
  fixes it.

Rank 0 prints the report as one JSON line after ``REPORT_PREFIX``, writes the verdict to the termination log and,
where the Job names itself (``K3_NAMESPACE``, ``K3_JOB_NAME``), merge-patches the report into the annotation
``ANNOTATION`` of its own Job with the pod's service account (its Role may patch the check's Jobs and nothing else):
pulumi-kubernetes reads the Job back once it has completed, and the program turns the annotation into the stack
output ``fabricCheck`` (k3infra.serving.fabric_report). A report that cannot be published is said on stderr and does
not change the verdict. Every rank exits 1 when a path failed. Under the gloo backend (no GPU: the tests) there is
no NCCL log, and only the bandwidth is judged.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import re
import ssl
import sys
import time
import urllib.error
import urllib.request
from typing import Any, Iterable, Sequence

REPORT_PREFIX = "FABRIC-CHECK-REPORT "
ANNOTATION = "k3infra.dev/fabric-check"
"""Annotation of the check's Job that carries the leader's report (JSON, ``report_document``)."""
SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"

NVLINK, RDMA, SOCKET, SHM = "nvlink", "rdma", "socket", "shm"
"""What carries a connection: NVLink (NCCL's P2P transport, or multi-node NVLink), an RDMA network (InfiniBand,
RoCE, EFA through libfabric, Google's gIB), TCP sockets, or host shared memory."""
RANK = {SOCKET: 0, SHM: 0, RDMA: 1, NVLINK: 2}
"""How fast each transport class is, for "slower than expected"."""

TRANSPORTS = {
    "P2P/": NVLINK,
    "SHM/": SHM,
    "NET/Socket": SOCKET,
}
"""Prefixes of the ``via`` part of NCCL's channel lines (NVIDIA/nccl @5067397c, v2.30.x):

- ``src/transport/p2p.cc``: ``"Channel %02d/%01d : %d[%d] -> %d[%d] via P2P/%s%s%s"`` with ``MNNVL`` (multi-node
  NVLink) or ``CUMEM``, or ``P2P/IPC``, ``P2P/direct pointer``, ``P2P/indirect/...``;
- ``src/transport/shm.cc``: ``"Channel %02d : %d[%d] -> %d[%d] via SHM/direct"``;
- ``src/transport/net.cc``: ``"Channel %02d/%d : %d[%d] -> %d[%d] [send] via NET/%s/%d%s%s%s"``, the network's
  name, the NIC index and ``/GDRDMA`` when GPUDirect RDMA is on; the name is ``ncclNet_t.name``: ``IB``
  (``src/transport/net_ib/common.cc``, InfiniBand and RoCE), ``Socket`` (``src/transport/net_socket.cc``), a plugin's:
  ``Libfabric`` (aws/aws-ofi-nccl @2daf7d30 ``src/nccl_ofi_interface_nvidia.cpp``, EFA), ``gIB`` (Google's gIB
  plugin: ``via NET/gIB/3/GDRDMA`` in GKE's A4 logs). Any ``NET/`` name but ``Socket`` is an RDMA plugin.
"""

CHANNEL = re.compile(r"NCCL INFO Channel \d+(?:/\d+)? : (\d+)\[\d+\] -> (\d+)\[\d+\](?: \[(?:send|receive)\])? "
                     r"via (.+?)\s*$")
NETWORK = re.compile(r"NCCL INFO Using network (.+?)\s*$")
"""``src/init.cc``: ``INFO(NCCL_INIT, "Using network %s", comm->ncclNet->name)``."""
NVLS = re.compile(r"NCCL INFO (?:NVLS multicast support is available|Connected NVLS)")
"""``src/transport/nvls.cc``: ``"NVLS multicast support is %savailable on dev %d"``, ``"Connected NVLS tree"``."""
OFI_PROVIDER = re.compile(r"NET/OFI Selected provider is (\S+?),")
"""aws-ofi-nccl ``src/nccl_ofi_net.cpp``: ``"Selected provider is %s, fabric is %s (found %d nics)"`` behind its
``NET/OFI`` prefix (``include/nccl_ofi_log.h``)."""
NO_IB = "NET/IB : No device found."
"""``src/transport/net_ib/init.cc``: no InfiniBand/RoCE device in the container."""

CAUSES = {
    (RDMA, SOCKET): "NCCL fell back to TCP sockets between nodes: no RDMA device reached the pod (the RDMA NIC claim "
                    "or the EFA/InfiniBand device request is missing, or the device plugin/DRA driver did not "
                    "allocate it), NCCL did not load its network plugin (NCCL_NET_PLUGIN, the plugin's directory on "
                    "LD_LIBRARY_PATH), or the environment forces it (NCCL_IB_DISABLE=1, NCCL_NET=Socket)",
    (NVLINK, SOCKET): "NCCL used TCP sockets between nodes where the plan expects multi-node NVLink: the pod has no "
                      "IMEX channel (its ComputeDomain claim was not allocated, or the NVIDIA DRA driver's IMEX "
                      "daemon is not running on the node), or NCCL_MNNVL_ENABLE=0 / NCCL_CUMEM_ENABLE=0, and no RDMA "
                      "network was there to fall back to either",
    (NVLINK, RDMA): "NCCL used the RDMA network between nodes where the plan expects multi-node NVLink: the pod has "
                    "no IMEX channel (its ComputeDomain claim was not allocated, or the NVIDIA DRA driver's IMEX "
                    "daemon is not running on the node), the nodes are not in one NVLink domain, or "
                    "NCCL_MNNVL_ENABLE=0 / NCCL_CUMEM_ENABLE=0",
    (NVLINK, SHM): "GPUs of one node talk through host memory, not NVLink: NCCL_P2P_DISABLE=1 in the environment, or "
                   "the container sees only some of the node's GPUs",
}
"""The likely cause of each (expected, found) transport mismatch."""

LOW_BANDWIDTH = ("fewer NICs carry the traffic than the node has (NCCL_IB_HCA, the RDMA claim's count), GPUDirect RDMA "
                 "is off (no /GDRDMA in the channel lines: NCCL_NET_GDR_LEVEL, the nvidia-peermem or dma-buf support "
                 "of the node), another job shares the links, or a link runs degraded")
"""The likely causes of a bus bandwidth under the threshold on the expected transport."""


@dataclasses.dataclass(frozen=True)
class Connection:
    """One connection NCCL set up: from rank ``src`` to rank ``dst`` of the communicator, over ``via``."""

    src: int
    dst: int
    via: str

    @property
    def carrier(self) -> str:
        """The transport class of ``via`` (TRANSPORTS)."""
        for prefix, kind in TRANSPORTS.items():
            if self.via.startswith(prefix):
                return kind
        return RDMA if self.via.startswith("NET/") else SOCKET


@dataclasses.dataclass
class LogFacts:
    """What one rank's NCCL log says about one communicator."""

    connections: list[Connection] = dataclasses.field(default_factory=list)
    networks: set[str] = dataclasses.field(default_factory=set)
    nvls: bool = False
    providers: set[str] = dataclasses.field(default_factory=set)
    no_ib_device: bool = False


def parse_log(lines: Iterable[str]) -> LogFacts:
    """The connections, networks, NVLS and libfabric provider an NCCL_DEBUG=INFO log names."""
    facts = LogFacts()
    for line in lines:
        if m := CHANNEL.search(line):
            facts.connections.append(Connection(int(m.group(1)), int(m.group(2)), m.group(3)))
        elif m := NETWORK.search(line):
            facts.networks.add(m.group(1))
        elif NVLS.search(line):
            facts.nvls = True
        elif m := OFI_PROVIDER.search(line):
            facts.providers.add(m.group(1))
        elif NO_IB in line:
            facts.no_ib_device = True
    return facts


def bus_bandwidth(collective: str, nbytes: int, seconds: float, nranks: int) -> float:
    """nccl-tests' bus bandwidth in GB/s (1e9 B/s) of one operation on ``nbytes`` per rank taking ``seconds``:
    algbw = S/t, times 2(n-1)/n for an all-reduce and (n-1)/n for an all-to-all (NVIDIA/nccl-tests @a0b82b22
    ``doc/PERFORMANCE.md`` "Bus bandwidth"; ``src/all_reduce.cu`` and ``src/alltoall.cu`` ``GetBw``)."""
    factor = {"all_reduce": 2 * (nranks - 1) / nranks, "all_to_all": (nranks - 1) / nranks}[collective]
    return nbytes / seconds / 1e9 * factor


@dataclasses.dataclass(frozen=True)
class PathPlan:
    """One path the plan checks (k3infra.sizing.fabric ``FabricPath``, as JSON)."""

    name: str
    collective: str
    ranks: tuple[int, ...]
    """Global ranks of the group taking part (one per GPU, node-major)."""
    expect: str
    """The transport class expected between nodes (NVLINK, RDMA or SOCKET); within a node NVLink always."""
    expected_busbw_gbs: float
    basis: str
    advice: str = ""
    """The setting that fixes a fallback on this pool (from the plan)."""

    @classmethod
    def of(cls, d: dict[str, Any]) -> PathPlan:
        """From the plan's JSON."""
        return cls(d["name"], d["collective"], tuple(int(r) for r in d["ranks"]), d["expect"],
                   float(d["expectedBusbwGBs"]), d.get("basis", ""), d.get("advice", ""))


def judge(path: PathPlan, facts: Sequence[LogFacts] | None, busbw: float, *, gpus_per_node: int,
          threshold: float) -> dict[str, Any]:
    """The verdict on one path: the transports NCCL chose (``facts``, one per rank of the path, in its order; None
    under gloo), the bus bandwidth against ``threshold`` x the expected figure, and why it failed."""
    problems: list[str] = []
    inter: dict[str, set[str]] = {}
    intra: dict[str, set[str]] = {}
    for rank_facts in facts or ():
        for c in rank_facts.connections:
            if max(c.src, c.dst) >= len(path.ranks):
                continue
            a, b = path.ranks[c.src] // gpus_per_node, path.ranks[c.dst] // gpus_per_node
            (intra if a == b else inter).setdefault(c.carrier, set()).add(c.via)
    if facts is not None:
        for kind in sorted(inter, key=lambda k: RANK[k]):
            if RANK[kind] < RANK[path.expect]:
                problems.append(f"between nodes {', '.join(sorted(inter[kind]))}: "
                                + CAUSES.get((path.expect, kind), f"NCCL chose {kind} where the plan expects "
                                             f"{path.expect}"))
                break
        if SHM in intra or SOCKET in intra:
            problems.append(f"inside a node {', '.join(sorted(intra.get(SHM, set()) | intra.get(SOCKET, set())))}: "
                            + CAUSES[(NVLINK, SHM)])
    fraction = busbw / path.expected_busbw_gbs if path.expected_busbw_gbs > 0 else 1.0
    if fraction < threshold and not problems:
        problems.append(f"bus bandwidth {busbw:.1f} GB/s is {fraction:.0%} of the expected "
                        f"{path.expected_busbw_gbs:.1f} GB/s ({path.basis}), under the threshold of {threshold:.0%}: "
                        + LOW_BANDWIDTH)
    if problems and path.advice:
        problems.append(path.advice)
    networks = sorted(set().union(*(f.networks for f in facts or ())))
    providers = sorted(set().union(*(f.providers for f in facts or ())))
    return {
        "path": path.name, "collective": path.collective, "ranks": len(path.ranks),
        "transport": {"betweenNodes": sorted(set().union(*inter.values())) if inter else [],
                      "insideNodes": sorted(set().union(*intra.values())) if intra else [],
                      "networks": networks, "libfabricProviders": providers,
                      "nvls": any(f.nvls for f in facts or ())} if facts is not None else "gloo (no NCCL log)",
        "expectedTransport": path.expect, "busbwGBs": round(busbw, 2),
        "expectedBusbwGBs": path.expected_busbw_gbs, "fraction": round(fraction, 3), "basis": path.basis,
        "ok": not problems, "problems": problems,
    }


def _log_file() -> str | None:
    """This process's NCCL log file, where NCCL_DEBUG_FILE names one."""
    name = os.environ.get("NCCL_DEBUG_FILE")
    return name.replace("%p", str(os.getpid())) if name else None


def _read_from(path: str | None, offset: int) -> tuple[list[str], int]:
    """The lines of ``path`` after ``offset``, and the new end."""
    if not path or not os.path.exists(path):
        return [], offset
    with open(path, errors="replace") as f:
        f.seek(offset)
        text = f.read()
        return text.splitlines(), f.tell()


def _measure(dist: Any, torch: Any, path: PathPlan, group: Any, device: Any, nbytes: int, warmup: int,
             iters: int) -> float:
    """Seconds per collective on ``group`` (the slowest rank's)."""
    n = len(path.ranks)
    count = max(n, nbytes // 4 // n * n)
    send = torch.ones(count, dtype=torch.float32, device=device)
    recv = torch.empty_like(send)

    def once() -> None:
        if path.collective == "all_reduce":
            dist.all_reduce(send, group=group)
        else:
            dist.all_to_all_single(recv, send, group=group)

    for _ in range(warmup):
        once()
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    dist.barrier(group=group)
    started = time.perf_counter()
    for _ in range(iters):
        once()
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    elapsed = torch.tensor([(time.perf_counter() - started) / iters], dtype=torch.float64, device=device)
    dist.all_reduce(elapsed, op=dist.ReduceOp.MAX, group=group)
    return float(elapsed.item())


def run(plan: dict[str, Any], *, backend: str, nbytes: int, warmup: int, iters: int) -> tuple[bool, dict[str, Any]]:
    """Every path of ``plan`` on this process's rank (RANK, WORLD_SIZE, LOCAL_RANK from torch.distributed.run);
    (all passed, the report) on every rank."""
    import torch  # pyright: ignore[reportMissingImports]  (the engine image's, not the project's)
    import torch.distributed as dist  # pyright: ignore[reportMissingImports]

    use_nccl = backend == "nccl" or (backend == "auto" and torch.cuda.is_available())
    local = int(os.environ.get("LOCAL_RANK", "0"))
    device = torch.device("cuda", local) if use_nccl else torch.device("cpu")
    if use_nccl:
        torch.cuda.set_device(device)
    dist.init_process_group("nccl" if use_nccl else "gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    control = dist.new_group(backend="gloo") if use_nccl else None
    log, offset = _log_file(), 0
    _, offset = _read_from(log, 0)
    results = []
    for p in (PathPlan.of(d) for d in plan["paths"]):
        groups = _groups(dist, p, world)
        mine = next((g for ranks, g in groups if rank in ranks), None)
        seconds = _measure(dist, torch, p, mine, device, nbytes, warmup, iters) if mine is not None else 0.0
        lines, offset = _read_from(log, offset)
        facts = parse_log(lines) if use_nccl else None
        gathered: list[Any] = [None] * world
        dist.all_gather_object(gathered, (rank, seconds, facts), group=control)
        if rank == 0:
            ranks = set(p.ranks)
            slowest = max(s for r, s, _ in gathered if r in ranks)
            per_rank = None if not use_nccl else [f for r, _, f in sorted(gathered, key=lambda g: g[0]) if r in ranks]
            busbw = bus_bandwidth(p.collective, count_bytes(nbytes, len(p.ranks)), slowest, len(p.ranks))
            results.append(judge(p, per_rank, busbw, gpus_per_node=int(plan["gpusPerNode"]),
                                 threshold=float(plan["threshold"])))
    verdict: list[Any] = [results]
    dist.broadcast_object_list(verdict, src=0, group=control)
    dist.destroy_process_group()
    report = {"backend": "nccl" if use_nccl else "gloo", "worldSize": world, "bytes": nbytes, "iters": iters,
              "threshold": plan["threshold"], "paths": verdict[0]}
    return all(r["ok"] for r in verdict[0]), report


def count_bytes(nbytes: int, nranks: int) -> int:
    """The bytes each rank moves: ``nbytes`` rounded down to a multiple of 4 x ``nranks`` (float32, split evenly)."""
    return max(nranks, nbytes // 4 // nranks * nranks) * 4


def _groups(dist: Any, path: PathPlan, world: int) -> list[tuple[tuple[int, ...], Any]]:
    """The process groups of ``path``: the path's ranks, and every disjoint shift of them across the world (each
    pipeline stage's tensor-parallel group runs at once, as the server's do). Every rank creates every group."""
    size = len(path.ranks)
    if size == world:
        return [(tuple(range(world)), dist.group.WORLD)]
    out = []
    for start in range(0, world, size):
        ranks = tuple(range(start, start + size))
        out.append((ranks, dist.new_group(list(ranks))))
    return out


def summary(report: dict[str, Any]) -> str:
    """One line per path: what NCCL chose, the bus bandwidth against the expected one, and any problem."""
    lines = []
    for r in report["paths"]:
        t = r["transport"]
        via = t if isinstance(t, str) else ", ".join(t["betweenNodes"] or t["insideNodes"]) or "no channels logged"
        lines.append(f"{'ok' if r['ok'] else 'FAILED'} {r['path']} ({r['collective']}, {r['ranks']} ranks): "
                     f"{r['busbwGBs']:.1f} GB/s of {r['expectedBusbwGBs']:.1f} expected ({r['fraction']:.0%}); via {via}"
                     + "".join(f"\n  - {p}" for p in r["problems"]))
    return "\n".join(lines)


def report_document(ok: bool, report: dict[str, Any]) -> dict[str, Any]:
    """What the annotation carries: ``passed`` or ``failed``, then the report (every path's verdict)."""
    return {"status": "passed" if ok else "failed", **report}


def publish(doc: dict[str, Any], env: Any = os.environ) -> str | None:
    """Merge-patch ``doc`` into annotation ``ANNOTATION`` of the Job ``K3_JOB_NAME`` in ``K3_NAMESPACE``, with the
    pod's service account token (RBAC: ``patch`` on the check's Jobs only); None once done, else why not. Nothing is
    sent where the Job does not name itself (the tests' local runs)."""
    namespace, job = env.get("K3_NAMESPACE"), env.get("K3_JOB_NAME")
    if not (namespace and job):
        return None
    sa = env.get("K3_SERVICE_ACCOUNT_DIR", SERVICE_ACCOUNT_DIR)
    try:
        base = env.get("K3_KUBE_API") or \
            f"https://{env['KUBERNETES_SERVICE_HOST']}:{env.get('KUBERNETES_SERVICE_PORT', '443')}"
        with open(os.path.join(sa, "token")) as f:
            token = f.read().strip()
        ca = os.path.join(sa, "ca.crt")
        context = ssl.create_default_context(cafile=ca) if os.path.isfile(ca) else None
        body = json.dumps({"metadata": {"annotations": {ANNOTATION: json.dumps(doc, sort_keys=True)}}}).encode()
        req = urllib.request.Request(f"{base}/apis/batch/v1/namespaces/{namespace}/jobs/{job}", data=body,
                                     method="PATCH", headers={"Authorization": f"Bearer {token}",
                                                              "Content-Type": "application/merge-patch+json"})
        with urllib.request.urlopen(req, timeout=30, context=context) as r:
            r.read()
    except (urllib.error.URLError, OSError, KeyError, ValueError) as e:
        return f"cannot publish the report on Job {namespace}/{job} (annotation {ANNOTATION}): {e}"
    return None


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="fabric_probe", description=(__doc__ or "").split("\n\n")[0])
    p.add_argument("--plan", required=True, help="the paths as JSON (k3infra.sizing.fabric)")
    p.add_argument("--backend", default="auto", choices=("auto", "nccl", "gloo"))
    p.add_argument("--bytes", type=int, default=256 << 20, help="bytes per rank per collective")
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--iters", type=int, default=20)
    p.add_argument("--termination-log", default="/dev/termination-log")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """0 when every path passes; 1 otherwise (the reasons on stderr and, from rank 0, the termination message)."""
    a = _parser().parse_args(argv)
    plan = json.loads(a.plan)
    os.environ["NCCL_DEBUG"] = "INFO"
    os.environ["NCCL_DEBUG_SUBSYS"] = "INIT,NET,P2P"
    os.environ["NCCL_DEBUG_FILE"] = f"/tmp/fabric-nccl.{os.environ.get('RANK', '0')}.%p.log"  # NCCL puts the pid in %p
    ok, report = run(plan, backend=a.backend, nbytes=a.bytes, warmup=a.warmup, iters=a.iters)
    if int(os.environ.get("RANK", "0")) == 0:
        print(REPORT_PREFIX + json.dumps(report, sort_keys=True), flush=True)
        text = summary(report)
        print(text, file=sys.stderr, flush=True)
        try:
            with open(a.termination_log, "w") as f:
                f.write(text[:4000])  # the kubelet keeps at most 4096 bytes
        except OSError:
            pass
        refused = publish(report_document(ok, report))
        if refused:
            print(refused, file=sys.stderr, flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
