"""From nothing to a served request as phases on one time axis, a restart, and one more replica under a scaler."""

from dataclasses import dataclass
from typing import NamedTuple

from .bucket import EGRESS_KEY, INGRESS_KEY

GRANT_WAIT_PHASE = "grant propagation"
"""The cold start's phase of a wait the GPU pool is created after (ColdStart.pool_wait_seconds)."""
API_GRANT_PHASE = "API grant"
"""The cold start's phase of a wait every Kubernetes object is created after (ColdStart.kubernetes_wait_seconds)."""
FIXED_PHASE_SOURCES = {
    "cluster": "catalog.assumptions CLUSTER_CREATE_MINUTES",
    GRANT_WAIT_PHASE: "azure.rolePropagationMinutes, waited on the first `pulumi up` only",
    API_GRANT_PHASE: "catalog.control_planes AKS_RBAC_PROPAGATION_MINUTES, the deployer's cluster-admin grant, waited "
                     "on the first `pulumi up` only",
    "GPU pool": "catalog.assumptions GPU_POOL_CREATE_MINUTES",
    "warm-up": "the engine's warm-up",
}
"""Where each phase no setting shortens takes its length from (ColdStart.above_target)."""

COLD_START_TARGET_SECONDS = 45 * 60
"""Issue 26: a first ``pulumi up`` serves its first token within 45 minutes."""
RESTART_TARGET_SECONDS = 10 * 60
"""Issue 26: a server pod rescheduled onto a node that served before serves again within 10 minutes."""


@dataclass(frozen=True)
class Phase:
    """One bar of the cold start's timeline: a phase, when it starts and how long it takes."""

    name: str
    start_seconds: int
    seconds: int
    critical: bool
    """On the critical path: any second it loses, the cold start loses."""

    @property
    def end_seconds(self) -> int:
        """When the phase ends."""
        return self.start_seconds + self.seconds


class _Path(NamedTuple):
    """When the branches of a cold start begin and end, in seconds from the start."""

    objects: int
    """The Kubernetes objects can be created: the cluster, then any wait for the API (the sync starts here)."""
    pool_start: int
    """The GPU pool is created: the later of the cluster and the pool's own wait."""
    pool_ready: int
    pulled: int
    """The image is on the GPU nodes and the fabric checked: the pre-pull starts once the pool is ready and its
    DaemonSet exists, the fabric check after it."""
    synced: int
    sync_critical: bool
    """The sync ends after the pre-pull: the sync's branch is the critical path."""
    via_objects: bool
    """Not the sync, and the pre-pull waits for the Kubernetes objects rather than for the pool."""


@dataclass(frozen=True)
class RolePhases:
    """One role of a topology at the end of its cold start: its own fabric check (on its own group's nodes, before
    its own servers: serving.roles) and its own load; the warm-up is the engine's."""

    name: str
    """prefill, decode, or wide-ep."""
    fabric_check_seconds: int
    """The role's fabric check (0: its groups are one node each)."""
    load_seconds: int
    """The role's load (its group's ``LoadEstimate``: a DEP decode splits the reads over its group's WORLD)."""


@dataclass(frozen=True)
class ColdStart:
    """From nothing to a served request, as phases on one time axis: the cluster; then, side by side, the GPU
    pool followed by the image pre-pull on its nodes, and the weight sync (it needs only a node that runs a pod);
    then the load and the warm-up once both branches are done. The sync and the pre-pull are Kubernetes objects:
    where those wait after the cluster (AKS's API grant), so do they. The total is the critical path, not the sum."""

    cluster_seconds: int
    gpu_pool_seconds: int
    sync_seconds: int
    """The pessimistic sync estimate; zero when the stack does not sync (the bucket already holds the weights)."""
    image_pull_seconds: int
    load_seconds: int
    warmup_seconds: int
    sync_limit: str = ""
    """What limits the sync's rate (SyncEstimate.limit), to name when the sync is on the critical path."""
    image_pre_pulled: bool = True
    """The engine image is pulled onto the GPU nodes as they join (serving.prepull), beside the sync; False where
    the platform pulls it only when the server starts (HyperPod, PAI-EAS)."""
    restart_seconds: int = 0
    """A server pod rescheduled onto a node that served before: scheduling, then the load and the warm-up again
    (the image is on the node; with ``engine_cache`` the warm-up reads the caches the first start built)."""
    restart_from_node: bool = False
    """A restart reads the weights back from the node's local NVMe (sizing.restart), not from the bucket."""
    engine_cache: bool = False
    """The server pods keep the engine's compile and kernel caches in a node directory (serving's
    ``engine_cache``), so a restart on the node warms up from them."""
    restart_warmup_seconds: int = 0
    """The warm-up a restart pays: the engine's cached warm-up with ``engine_cache``, else the whole one."""
    load_limit: str = ""
    """What limits the load's rate (LoadEstimate.limit), to name when the restart is above its target."""
    sync_catalog_bucket: bool = False
    """The catalog's figure for what the bucket takes in limits the sync (SyncEstimate.catalog_bucket_limit)."""
    load_catalog_bucket: bool = False
    """The catalog's figure for what the bucket serves limits the load (LoadEstimate.catalog_bucket_limit)."""
    pool_wait_seconds: int = 0
    """A wait the GPU pool is created after, from the start, beside the cluster (AKS: the reservation group's grant
    propagating, a time:Sleep of azure.rolePropagationMinutes); 0 where the pool waits for the cluster alone."""
    kubernetes_wait_seconds: int = 0
    """A wait every Kubernetes object is created after, from the cluster's end (AKS with Entra ID: the Kubernetes
    provider waits for the deployer's cluster-admin grant, a time:Sleep of
    catalog.control_planes.AKS_RBAC_PROPAGATION_MINUTES): the sync Job, the image pre-pull and the servers start after
    it; 0 where the objects wait for the cluster alone."""
    nothing_to_create: str = ""
    """Why there is no cluster and no GPU pool to create (catalog.NOTHING_TO_CREATE); "" where there are."""
    fabric_check_seconds: int = 0
    """The fabric check (serving.fabric_check) on the GPU pool branch, after the image pre-pull and beside the sync:
    on the critical path only where the sync is shorter than the pool branch; 0 where no check runs."""
    roles: tuple[RolePhases, ...] = ()
    """A topology's roles, each drawn with its own fabric check, load and warm-up after the shared phases; the
    fields above (``fabric_check_seconds``, ``load_seconds``) are then the critical role's (``topology_cold_start``).
    Empty: one kind of group."""

    def _bucket_hints(self, sync: bool, load: bool) -> str:
        """Where the catalog's bucket figure is the limit named, the setting that states the bucket's own."""
        hints = [f"{what} is the catalog's pessimistic figure ({table}): where the provider raised the account's "
                 f"limit or the store carries more, {key} states it"
                 for on, what, table, key in (
                     (sync and self.sync_catalog_bucket, "what the bucket takes in", "catalog.transfer.BUCKET_INGRESS",
                      INGRESS_KEY),
                     (load and self.load_catalog_bucket, "what the bucket serves", "catalog.loaders.STORAGE_EGRESS",
                      EGRESS_KEY)) if on]
        return "".join(f"; {h}" for h in hints)

    def _path(self) -> _Path:
        """The times the phases are laid out by (see _Path)."""
        c, wait = self.cluster_seconds, self.pool_wait_seconds
        pull = self.image_pull_seconds if self.image_pre_pulled else 0
        objects = c + self.kubernetes_wait_seconds
        pool_start = max(c, wait)
        pool_ready = pool_start + self.gpu_pool_seconds
        pulled = max(pool_ready, objects) + pull + self.fabric_check_seconds
        synced = objects + self.sync_seconds
        sync_critical = synced > pulled
        return _Path(objects=objects, pool_start=pool_start, pool_ready=pool_ready, pulled=pulled, synced=synced,
                     sync_critical=sync_critical, via_objects=not sync_critical and objects > pool_ready)

    @property
    def phases(self) -> tuple[Phase, ...]:
        """Every phase with its start, the critical ones marked."""
        c, wait, path = self.cluster_seconds, self.pool_wait_seconds, self._path()
        pull = self.image_pull_seconds if self.image_pre_pulled else 0
        sync_critical, via_objects = path.sync_critical, path.via_objects
        pool_critical = not sync_critical and not via_objects
        out = [Phase("cluster", 0, c, not pool_critical or c >= wait)] if c else []
        if wait:
            out.append(Phase(GRANT_WAIT_PHASE, 0, wait, pool_critical and wait > c))
        if self.kubernetes_wait_seconds:
            out.append(Phase(API_GRANT_PHASE, c, self.kubernetes_wait_seconds, not pool_critical))
        if self.gpu_pool_seconds:
            out.append(Phase("GPU pool", path.pool_start, self.gpu_pool_seconds, pool_critical))
        if pull:
            out.append(Phase("image pre-pull", path.pulled - self.fabric_check_seconds - pull, pull, not sync_critical))
        if self.sync_seconds:
            out.append(Phase("weight sync", path.objects, self.sync_seconds, sync_critical))
        roles = self.roles or (RolePhases("", self.fabric_check_seconds, self.load_seconds),)
        ends = [self._role_ready(path, r) + r.load_seconds + self.warmup_seconds for r in roles]
        for role, end in zip(roles, ends):
            out.extend(self._role_phases(path, role, critical=end == max(ends)))
        return tuple(out)

    def _role_ready(self, path: _Path, role: RolePhases) -> int:
        """When ``role``'s load starts: its fabric check done (after the shared pre-pull) and the weights synced,
        then the image pulled where the platform pulls it only now."""
        pulled = path.pulled - self.fabric_check_seconds + role.fabric_check_seconds
        return max(pulled, path.synced) + (0 if self.image_pre_pulled else self.image_pull_seconds)

    def _role_phases(self, path: _Path, role: RolePhases, critical: bool) -> list[Phase]:
        """The fabric check, the image pull (where not pre-pulled), the load and the warm-up of one role (named after
        it on a topology), ``critical`` where the role ends last."""
        of = f" {role.name}" if role.name else ""
        out, pre_pulled = [], path.pulled - self.fabric_check_seconds
        ready = self._role_ready(path, role)
        if role.fabric_check_seconds:
            out.append(Phase(f"fabric check{of}", pre_pulled, role.fabric_check_seconds,
                             critical and pre_pulled + role.fabric_check_seconds >= path.synced))
        if not self.image_pre_pulled:
            out.append(Phase(f"image pull{of}", ready - self.image_pull_seconds, self.image_pull_seconds, critical))
        out.append(Phase(f"load{of}", ready, role.load_seconds, critical))
        out.append(Phase(f"warm-up{of}", ready + role.load_seconds, self.warmup_seconds, critical))
        return out

    @property
    def total_seconds(self) -> int:
        """The end of the critical path: the cluster, the later of (GPU pool, pre-pull) and the sync, load, warm-up."""
        return max(p.end_seconds for p in self.phases)

    @property
    def bottleneck(self) -> str:
        """Which of the parallel branches is on the critical path."""
        path = self._path()
        if path.sync_critical:
            return "weight sync"
        if path.via_objects:
            return API_GRANT_PHASE
        if self.gpu_pool_seconds:
            return "GPU pool"
        return "image pre-pull" if self.image_pre_pulled else "image pull"

    @property
    def restart_above_target(self) -> str | None:
        """Why the restart exceeds RESTART_TARGET_SECONDS, naming the load's limit; None when it does not."""
        if self.restart_seconds <= RESTART_TARGET_SECONDS:
            return None
        limit = f" at {self.load_limit}" if self.load_limit else ""
        cached = ("from the engine's caches on the node" if self.engine_cache
                  else "in full: no engine cache on the node (k3infra:engineCache, on the Kubernetes platforms; its "
                       "hostPath makes the serving namespace privileged)")
        if self.restart_from_node:
            return (f"the weights are read back from the node's local NVMe, then the warm-up {cached} "
                    f"({self.restart_warmup_seconds // 60} min; sizing.restart names each term)")
        return (f"the weights are read again{limit} ({self.load_seconds // 60} min {self.load_seconds % 60} s; no "
                f"loader keeps them on the node across pods), then the warm-up {cached} "
                f"({self.restart_warmup_seconds // 60} min)" + self._bucket_hints(sync=False, load=True))

    @property
    def above_target(self) -> str | None:
        """Why the cold start exceeds COLD_START_TARGET_SECONDS, naming the fixed phases; None when it does not."""
        if self.total_seconds <= COLD_START_TARGET_SECONDS:
            return None
        # One critical chain: where two roles end together, their warm-ups run side by side, counted once.
        fixed = list({_kind(p.name): p for p in reversed(self.phases)
                      if p.critical and _kind(p.name) in FIXED_PHASE_SOURCES}.values())[::-1]
        floor = sum(p.seconds for p in fixed)
        names = " + ".join(f"{_kind(p.name)} {p.seconds // 60} min" for p in fixed)
        if floor >= COLD_START_TARGET_SECONDS:
            sources = "; ".join(FIXED_PHASE_SOURCES[_kind(p.name)] for p in fixed)
            named = {_kind(p.name) for p in fixed}
            after = ("the pool needs the grant" if GRANT_WAIT_PHASE in named
                     else "the Kubernetes objects need the API grant" if API_GRANT_PHASE in named
                     else "the pool needs the cluster")
            return (f"{names} = {floor // 60} min on the critical path alone, one after the other ({sources}; all at "
                    f"their pessimistic end): {after} and the warm-up the loaded weights, so no setting "
                    "overlaps them")
        sync = self.bottleneck == "weight sync"
        why = f" (limited by {self.sync_limit})" if sync and self.sync_limit else ""
        load = f" (limited by {self.load_limit})" if self.load_limit else ""
        return (f"the {self.bottleneck}{why} and the load{load} on the critical path, with {names}"
                + self._bucket_hints(sync=sync, load=True))


def _kind(phase: str) -> str:
    """A phase's kind without the role it belongs to ("warm-up decode" is a "warm-up")."""
    return next((k for k in FIXED_PHASE_SOURCES if phase.startswith(k)), phase)


@dataclass(frozen=True)
class ReplicaStart:
    """What one more replica costs from the scaler's decision to serving, on nodes the reserved pool already holds
    (k3infra's GPU pools are fixed at the reservation's size: no node is provisioned on scale-out)."""

    node_seconds: int
    """Node provisioning: zero where the pool's nodes stay up (every k3infra platform today)."""
    scheduling_seconds: int
    image_pull_seconds: int
    load_seconds: int
    warmup_seconds: int
    reaction_seconds: int
    """How long the scaler takes to see the load (its polling interval)."""

    @property
    def total_seconds(self) -> int:
        """Scale-out to serving: node, scheduling, image pull, weight load, warm-up."""
        return (self.node_seconds + self.scheduling_seconds + self.image_pull_seconds + self.load_seconds
                + self.warmup_seconds)

    @property
    def first_request_seconds(self) -> int:
        """What the first request after idle waits with scale-to-zero: the scaler's reaction, then a whole start."""
        return self.reaction_seconds + self.total_seconds
