"""A restart and a scale-out at the node's own speed: the weights read back from the node's local NVMe where the node
keeps them, the engine's caches kept on the node or restored from the bucket, and the physical floor beside each.

The floor of a restart is what no software removes: the node's share of the weights at the faster of its local NVMe
and its front-end NIC, then the engine's CUDA graph capture (catalog.node_local). The goals (issue 40): a restart
within RESTART_FLOOR_FACTOR x its floor, a new replica serving within SCALE_OUT_TARGET_SECONDS of its nodes being
ready; where a figure is above, ``holds`` names the term that keeps it there, with its source.
"""

from dataclasses import dataclass

from ..catalog.node_local import LocalRead
from ..formatting import duration
from .bucket import seconds_for

RESTART_FLOOR_FACTOR = 2
"""Issue 40: a restart within twice its physical floor."""
SCALE_OUT_TARGET_SECONDS = 5 * 60
"""Issue 40: a new replica serving within 5 minutes of its nodes being ready."""
NODE_FILL_FILES = 64
"""Files the node agent copies at once (k3infra/weightcopy/copier/node.py FILES_IN_FLIGHT): one GET each."""


@dataclass(frozen=True)
class NodeKeeping:
    """What the GPU nodes keep across pods (config.engine.read_node_weights decides it from the platform)."""

    read: LocalRead | None = None
    """The node's local NVMe read rate where it keeps the weights there; None where it keeps none."""
    directory: str = ""
    """The host directory on the local NVMe ("" where none)."""
    why_none: str = ""
    """Where ``read`` is None: the fact that keeps the weights off the node."""
    warm_caches: bool = False
    """The node agent saves the engine's caches to the bucket and restores them on every node."""
    would_read: LocalRead | None = None
    """Where ``read`` is None on a machine with local NVMe: its read rate, what a node copy would read back at."""
    filled_by_the_pod: bool = False
    """The server pod fills its node's copy itself before its engine starts (catalog.node_local
    FILLED_BY_THE_SERVER_POD): a new replica on a node without the copy waits for the fill."""


@dataclass(frozen=True)
class Term:
    """One term of a start: what it is, how long it takes at the pessimistic end, and where its figure comes from."""

    name: str
    seconds: int
    source: str


@dataclass(frozen=True)
class NodeTerms:
    """What a restart and a scale-out are made of for one stack (sizing.stack fills it from the catalog)."""

    share_bytes: int
    """The node's share of the checkpoint (what its ranks read)."""
    bucket_load: Term
    """The load from the bucket (the cold start's)."""
    nic_gbps: float
    local_gbps: float | None
    """The node's local NVMe read rate where the node keeps the weights on it; None where it keeps none."""
    local_source: str
    why_not_local: str
    """Where ``local_gbps`` is None: the fact that keeps the weights off the node."""
    node_dir: str
    """The host directory on the node's local NVMe the weights and caches are kept in; "" where none."""
    scheduling: Term
    full_warmup: Term
    cached_warmup: Term
    graph_capture: Term
    engine_cache: bool
    """The engine's caches stay on the node (a restart on it warms up from them)."""
    warm_caches: bool
    """The engine's caches are restored from the bucket before a new pod starts (a new node warms like a restart)."""
    cache_restore: Term
    image_pull: Term
    """The image's pull on a new replica's nodes: zero where the pre-pull DaemonSet covers every node of the pool."""
    fill: Term
    """The node agent's copy of the whole checkpoint onto a node, after the sync: until it ends a pod on the node
    reads the bucket (a new replica's figure assumes its nodes were filled)."""
    would_local_gbps: float | None = None
    """Where the node keeps no copy on a machine with local NVMe: the rate a node copy would read back at."""
    filled_by_the_pod: bool = False
    """The server pod makes the copy itself, before its engine starts (``NodeKeeping.filled_by_the_pod``): a new
    replica's figure then holds the fill, its node holding no copy at the pessimistic end."""


@dataclass(frozen=True)
class NodeStart:
    """A restart (a server pod back on a node that served) and a scale-out (a new replica on ready pool nodes)."""

    restart: tuple[Term, ...]
    floor: tuple[Term, ...]
    scale_out: tuple[Term, ...]
    local: bool
    """The weights are read back from the node's local NVMe."""
    why_not_local: str
    node_dir: str = ""
    """The host directory on the node's local NVMe the node keeps the weights in ("" where it keeps none)."""
    warm_caches: bool = False
    """The engine's caches are saved to and restored from the bucket (a new node warms like a restarted one)."""
    fill: Term | None = None
    """The node agent's copy onto a node (where the node keeps the weights)."""
    with_node_copy: int | None = None
    """Where the node keeps no copy on a machine with local NVMe: the restart were the weights read back from it
    instead of the bucket, the rest unchanged (the most a node copy gains); None elsewhere."""
    filled_by_the_pod: bool = False
    """The server pod makes ``fill`` itself before its engine starts (a scale-out's figure holds it)."""

    @property
    def restart_seconds(self) -> int:
        """Scheduling, the load and the warm-up of a restart."""
        return sum(t.seconds for t in self.restart)

    @property
    def floor_seconds(self) -> int:
        """The restart's physical floor."""
        return max(1, sum(t.seconds for t in self.floor))

    @property
    def ratio(self) -> float:
        """The restart over its floor."""
        return round(self.restart_seconds / self.floor_seconds, 2)

    @property
    def scale_out_seconds(self) -> int:
        """Nodes ready to a new replica serving."""
        return sum(t.seconds for t in self.scale_out)

    @property
    def restart_holds(self) -> str | None:
        """Why the restart is above RESTART_FLOOR_FACTOR x its floor: its terms beyond the floor; None within."""
        if self.restart_seconds <= RESTART_FLOOR_FACTOR * self.floor_seconds:
            return None
        holds = _holds(self.restart, {t.name for t in self.floor}, self.why_not_local)
        if self.with_node_copy is None:
            return holds
        return holds + (f"; a node copy on the local NVMe would make the restart {duration(self.with_node_copy)} "
                        f"({self.with_node_copy} s, from {self.restart_seconds} s)")

    @property
    def scale_out_holds(self) -> str | None:
        """Why a new replica serves later than SCALE_OUT_TARGET_SECONDS after its nodes are ready; None within."""
        if self.scale_out_seconds <= SCALE_OUT_TARGET_SECONDS:
            return None
        return _holds(self.scale_out, set(), self.why_not_local)

    def as_dict(self) -> dict[str, object]:
        """The plan's ``nodeStart``: each figure beside its floor or target, every term with its source."""
        def terms(ts: tuple[Term, ...]) -> list[dict[str, object]]:
            return [{"term": t.name, "seconds": t.seconds, "source": t.source} for t in ts]
        return {
            "weightsOnNode": self.local, "nodeDirectory": self.node_dir or None,
            "nodeFill": None if self.fill is None else {"term": self.fill.name, "seconds": self.fill.seconds,
                                                        "source": self.fill.source,
                                                        "byTheServerPod": self.filled_by_the_pod},
            "whyNotOnNode": self.why_not_local or None, "warmCachesInBucket": self.warm_caches,
            "restartSeconds": self.restart_seconds, "restartTerms": terms(self.restart),
            "restartWithNodeCopySeconds": self.with_node_copy,
            "floorSeconds": self.floor_seconds, "floorTerms": terms(self.floor), "ratioToFloor": self.ratio,
            "restartGoal": f"within {RESTART_FLOOR_FACTOR}x the floor", "restartHolds": self.restart_holds,
            "scaleOutSeconds": self.scale_out_seconds, "scaleOutTerms": terms(self.scale_out),
            "scaleOutTargetSeconds": SCALE_OUT_TARGET_SECONDS, "scaleOutHolds": self.scale_out_holds,
        }


def _holds(terms: tuple[Term, ...], floor_names: set[str], why_not_local: str) -> str:
    """The terms that keep a figure up, largest first, each with its length and source; why the node keeps no copy."""
    above = sorted((t for t in terms if t.name not in floor_names and t.seconds), key=lambda t: -t.seconds)
    text = "; ".join(f"{t.name} {duration(t.seconds)} ({t.source})" for t in above)
    return text + (f"; the weights come from the bucket: {why_not_local}" if why_not_local else "")


def node_start(t: NodeTerms) -> NodeStart:
    """A restart, its floor and a scale-out at the pessimistic end of ``t``."""
    local = t.local_gbps is not None
    load = (Term(f"the node's share {t.share_bytes / 1e9:,.0f} GB from its local NVMe at {t.local_gbps:g} Gbps",
                 seconds_for(t.share_bytes, t.local_gbps), t.local_source)
            if t.local_gbps is not None else t.bucket_load)
    warm = t.cached_warmup if (t.engine_cache or t.warm_caches) else t.full_warmup
    fastest = max(t.local_gbps or 0.0, t.nic_gbps)
    via = "local NVMe" if (t.local_gbps or 0.0) >= t.nic_gbps else "front-end NIC"
    floor = (Term(f"the node's share {t.share_bytes / 1e9:,.0f} GB at its {via} {fastest:g} Gbps",
                  seconds_for(t.share_bytes, fastest),
                  "the faster of catalog.node_local LOCAL_READ and the machine's frontend_gbps"),
             t.graph_capture)
    new_warm = ((t.cache_restore, t.cached_warmup) if t.warm_caches else (t.full_warmup,))
    with_copy = (None if local or t.would_local_gbps is None else
                 t.scheduling.seconds + seconds_for(t.share_bytes, t.would_local_gbps) + warm.seconds)
    fill = (t.fill,) if local and t.filled_by_the_pod else ()
    return NodeStart(restart=(t.scheduling, load, warm), floor=floor,
                     scale_out=(t.scheduling, t.image_pull, *fill, load, *new_warm), local=local,
                     why_not_local="" if local else t.why_not_local, node_dir=t.node_dir if local else "",
                     warm_caches=t.warm_caches, fill=t.fill if local else None, with_node_copy=with_copy,
                     filled_by_the_pod=local and t.filled_by_the_pod)
