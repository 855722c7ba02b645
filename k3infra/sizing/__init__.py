"""Pure sizing functions: does the model fit, on how many nodes, laid out how, loaded how fast, at what cost.

Everything here is arithmetic over the catalog; nothing touches Pulumi or a cloud. Units: decimal GB,
seconds, USD. One module per concern, each importing only those listed before it:

- ``parallel``: the TP/PP/EP layout of one replica and what carries it (:func:`layout`);
- ``memory``: whether a replica fits, and the default node count (:func:`fit`, :func:`default_nodes`);
- ``bucket``: what the bucket takes in and serves, stated or the catalog's;
- ``load``: the load estimate and how the nodes split the reads (:func:`load_estimate`);
- ``sync``: the Hub-to-bucket copy (:func:`sync_estimate`);
- ``budgets``: the start-up probe's budget, the await and rolling-update timeouts, a restart;
- ``cold_start``: the cold start's phases and targets, one more replica's start;
- ``restart``: a restart and a scale-out at the node's own speed, beside the restart's physical floor;
- ``costs``: the GPU nodes' cost;
- ``fabric``: the fabric check's paths and the bus bandwidth each must reach;
- ``topology``: a topology's roles, their fit, the KV transfer between them and the topology's cost;
- ``stack``: :class:`Sizing` and :func:`size`, composing the others, and the plan's summary (``as_dict``).

Callers import from ``k3infra.sizing``; the names below are its public interface.
"""

from .memory import (
    DEFAULT_NODE_SEARCH_LIMIT,
    Fit,
    NodeChoice,
    default_nodes,
    fit,
    min_nodes,
    node_limit,
    seed_fit_table,
)
from .parallel import Layout, LayoutError, ParallelMode, layout
from .bucket import EGRESS_KEY, INGRESS_KEY, load_egress, stated_bucket_warnings, sync_ingress
from .load import LoadEstimate, ReadNode, load_estimate, read_share, reads_the_bucket
from .sync import LARGEST_FILE_FRACTION, SYNC_TIMEOUT_FACTOR, SyncEstimate, sync_estimate, sync_seconds
from .budgets import (
    IMAGE_PULL_SECONDS,
    PROBE_PERIOD_SECONDS,
    SCHEDULING_SECONDS,
    await_timeout_seconds,
    probe_budget_seconds,
    restart_seconds,
    rolling_update_timeout_seconds,
)
from .cold_start import (
    API_GRANT_PHASE,
    COLD_START_TARGET_SECONDS,
    FIXED_PHASE_SOURCES,
    GRANT_WAIT_PHASE,
    RESTART_TARGET_SECONDS,
    ColdStart,
    Phase,
    ReplicaStart,
    RolePhases,
)
from .restart import RESTART_FLOOR_FACTOR, SCALE_OUT_TARGET_SECONDS, NodeKeeping, NodeStart, NodeTerms, Term, node_start
from .costs import Cost, cost
from .fabric import FabricPath, FabricPlan, expected, fabric_plan, role_layout
from .topology import (KvTransfer, RoleSizing, TopologySizing, concurrent_requests, group_carrier, kv_transfer,
                       role_fit, slowest_node_start, smallest_role_nodes, topology_cold_start, topology_sizing)
from .offload import disaggregated_offload
from .workload import WorkloadAdvice, workload_advice
from .stack import PlatformTerms, Sizing, replica_start, size

__all__ = [
    "API_GRANT_PHASE",
    "KvTransfer", "RoleSizing", "TopologySizing", "concurrent_requests", "group_carrier", "kv_transfer", "role_fit",
    "disaggregated_offload", "WorkloadAdvice", "workload_advice", "smallest_role_nodes", "topology_sizing", "topology_cold_start", "slowest_node_start", "RolePhases",
    "COLD_START_TARGET_SECONDS",
    "ColdStart",
    "Cost",
    "DEFAULT_NODE_SEARCH_LIMIT",
    "EGRESS_KEY",
    "FabricPath",
    "FabricPlan",
    "FIXED_PHASE_SOURCES",
    "Fit",
    "GRANT_WAIT_PHASE",
    "IMAGE_PULL_SECONDS",
    "INGRESS_KEY",
    "LARGEST_FILE_FRACTION",
    "Layout",
    "LayoutError",
    "LoadEstimate",
    "NodeKeeping",
    "NodeStart",
    "NodeTerms",
    "NodeChoice",
    "PROBE_PERIOD_SECONDS",
    "ParallelMode",
    "Phase",
    "RESTART_FLOOR_FACTOR",
    "RESTART_TARGET_SECONDS",
    "ReadNode",
    "ReplicaStart",
    "SCALE_OUT_TARGET_SECONDS",
    "SCHEDULING_SECONDS",
    "SYNC_TIMEOUT_FACTOR",
    "PlatformTerms",
    "Sizing",
    "Term",
    "SyncEstimate",
    "await_timeout_seconds",
    "cost",
    "default_nodes",
    "expected",
    "fabric_plan",
    "role_layout",
    "fit",
    "layout",
    "load_egress",
    "load_estimate",
    "min_nodes",
    "node_start",
    "node_limit",
    "probe_budget_seconds",
    "read_share",
    "reads_the_bucket",
    "replica_start",
    "restart_seconds",
    "rolling_update_timeout_seconds",
    "seed_fit_table",
    "size",
    "stated_bucket_warnings",
    "sync_estimate",
    "sync_ingress",
    "sync_seconds",
]
