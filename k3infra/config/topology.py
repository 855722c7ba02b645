"""``k3infra:topology``: aggregated, wide expert parallelism, or prefill/decode roles; refused before any resource
where the hardware, the fabric, the platform or the engine cannot run it (catalog/topologies.py), every problem at once.

The roles' groups are sized like an aggregated replica of their node count (``layout._size``: load, probe budget,
restart), with their own fit (``sizing.role_fit``: DEP replicates the weights outside the experts). The stack's own
sizing is the prefill role's (disaggregated) or the groups' (wide-ep), with the topology attached: its node count and
cost are every role's.
"""

import dataclasses
from dataclasses import dataclass
from typing import Any, Callable

from .. import sizing as sz
from ..catalog import Accelerator, Engine, EngineName, Model, Platform
from ..catalog.topologies import (
    DEEPEP_BACKENDS,
    DEP_MIN_GPUS,
    DISAGGREGATION_ENGINES,
    FABRICS,
    NO_ROLES,
    NVLINK_BACKENDS,
    REPLICATED_WEIGHT_GB,
    SGLANG_EP_DIVIDES_EXPERTS,
    SGLANG_PD_STACKS,
    SGLANG_PD_TRANSPORTS,
    SGLANG_TRANSFER_BACKEND,
    All2AllBackend,
    KvTransport,
    Parallelism,
    RoleName,
    VLLM_ROLE_RECIPES,
    TopologyMode,
    default_all2all,
    fabric_facts,
)
from .keys import MAX_ROLE_NODES
from .problems import Problems
from .schema import K, is_given

T = K + "topology"

ROLE_DEFAULTS = {RoleName.PREFILL: Parallelism.TEP, RoleName.DECODE: Parallelism.DEP}
"""The recipe's pd_cluster: prefill TEP, decode DEP."""

ROLE_OWNED_KEYS = ("nodes", "replicas", "tensorParallel", "pipelineParallel", "expertParallel")
"""Top-level keys a disaggregated topology's roles own."""


@dataclass(frozen=True)
class TopologyConfig:
    """The stack's topology (``k3infra:topology``); its roles' sizing is ``Sizing.topology``."""

    mode: TopologyMode = TopologyMode.AGGREGATED
    transport: KvTransport | None = None
    """What NIXL moves the KV cache over (disaggregated), else None."""
    all2all: dict[str, All2AllBackend] = dataclasses.field(default_factory=dict)
    """Each DEP role's all-to-all backend, by role name."""

    @property
    def disaggregated(self) -> bool:
        """Prefill and decode roles of their own."""
        return self.mode == TopologyMode.DISAGGREGATED


def _section(v: dict[str, Any]) -> dict[str, Any]:
    return v["topology"] if isinstance(v["topology"], dict) else {}


def mode_of(v: dict[str, Any]) -> TopologyMode | None:
    """The topology's mode (None where the value was refused)."""
    mode = _section(v).get("mode")
    return mode if isinstance(mode, TopologyMode) else None


def base_values(v: dict[str, Any], platform: Platform | None, p: Problems) -> dict[str, Any]:
    """The values the stack's own sizing reads: a disaggregated stack's are its prefill role's (a role's group is one
    LeaderWorkerSet group), and the roles own the top-level layout keys. On a platform without roles (``NO_ROLES``)
    the stack's own: only the mode is refused there."""
    if mode_of(v) != TopologyMode.DISAGGREGATED or (platform is not None and platform in NO_ROLES):
        return v
    prefill = _section(v).get("prefill") or {}
    for key in ROLE_OWNED_KEYS:
        if key in ("replicas", "expertParallel") and v[key] in (1, False):
            continue  # their defaults
        if is_given(v[key]):
            p.add(K + key, "is the roles' in a disaggregated topology (topology.prefill / topology.decode)", v[key],
                  "unset")
    nodes = prefill.get("nodes") if isinstance(prefill.get("nodes"), int) else None
    return {**v, "nodes": nodes, "replicas": prefill.get("groups") or 1, "tensorParallel": None,
            "pipelineParallel": None, "expertParallel": False}


@dataclass(frozen=True)
class TopologyContext:
    """What the topology is checked and sized against."""

    accelerator: Accelerator
    model: Model
    engine: Engine
    engine_version: str
    platform: Platform | None
    memory_fraction: float
    size_group: Callable[[dict[str, Any], Problems, int], sz.Sizing | None]
    """Sizes an aggregated replica of the given values (``layout._size``), reporting into the given problems, the
    given number of GPU nodes reading the bucket at once."""


def read_topology(v: dict[str, Any], ctx: TopologyContext, sizing: sz.Sizing | None, p: Problems,
                  warnings: list[str]) -> tuple[TopologyConfig, sz.Sizing | None]:
    """The topology and the stack's sizing with it attached; problems for what cannot run."""
    section, mode = _section(v), mode_of(v)
    stated = _stated_workload(section, mode, p)
    if mode is None or mode == TopologyMode.AGGREGATED:
        for key in ("prefill", "decode"):
            if is_given((section.get(key) or {}).get("nodes")):
                p.add(f"{T}.{key}", "applies to mode disaggregated", section[key], "unset, or mode: disaggregated")
        for key in ("all2allBackend", "kvTransport"):
            if is_given(section.get(key)):
                p.add(f"{T}.{key}", "applies to modes wide-ep and disaggregated", str(section[key]), "unset")
        return TopologyConfig(), sizing
    if ctx.platform is not None and ctx.platform in NO_ROLES:
        # The mode is refused whole: the roles' keys and the gateway have no meaning on such a platform.
        p.add(f"{T}.mode", f"cannot run on {ctx.platform}: {NO_ROLES[ctx.platform]}", str(mode), "aggregated")
        return TopologyConfig(mode), None
    _platform_and_engine(v, ctx, mode, p, warnings)
    roles_in = _roles(v, ctx, mode, sizing, p)
    transport = _transport(section, ctx, p) if mode == TopologyMode.DISAGGREGATED else None
    if transport is not None and ctx.engine.name == EngineName.SGLANG and transport not in SGLANG_PD_TRANSPORTS:
        p.add(f"{T}.mode", f"SGLang's disaggregation runs over Mooncake on RDMA (catalog/topologies.py "
              f"SGLANG_PD_TRANSPORTS); {ctx.accelerator.sku}'s pods move the KV cache over {transport}, where SGLang "
              f"would need its {SGLANG_TRANSFER_BACKEND[transport]} backend, which no SGLang P/D guide runs: use "
              f"stack {SGLANG_PD_STACKS}", str(mode), "aggregated")
    readers = sum(spec.nodes * spec.groups for _, spec in roles_in)  # every role loads at once on a first `up`
    roles = tuple(r for r in (_role_sizing(name, spec, ctx, p, readers) for name, spec in roles_in) if r is not None)
    if sizing is None or len(roles) != len(roles_in) or p:
        return TopologyConfig(mode, transport), None
    _fits_one_pool(ctx.accelerator, roles, p)
    if mode == TopologyMode.DISAGGREGATED and transport == KvTransport.TCP:
        warnings.append(f"topology: the KV cache crosses the pod network over TCP "
                        f"({fabric_facts(ctx.accelerator.fabric).source}); see the plan's kvTransfer seconds")
    top = sz.topology_sizing(mode, roles, ctx.accelerator, transport, int(section.get("inputTokens") or 8192),
                             sizing.fit, sizing.nodes,
                             (sizing.layout.tensor_parallel, sizing.layout.pipeline_parallel))
    advice = _advice(ctx, roles, top.transfer, stated, warnings) \
        if stated is not None and top.transfer is not None else None
    all2all = {r.name: r.all2all for r in roles if r.all2all is not None}
    offload = sizing.offload
    if mode == TopologyMode.DISAGGREGATED and offload is not None:
        offload = sz.disaggregated_offload(offload, ctx.engine)
    return TopologyConfig(mode, transport, all2all), dataclasses.replace(
        sizing, topology=top, cost=top.cost, cold_start=sz.topology_cold_start(roles),
        node_start=sz.slowest_node_start(roles), offload=offload, workload=advice)


WORKLOAD_KEYS = ("outputTokens", "requestsPerSecond")
"""The stated workload whose advisory prefill:decode ratio the plan gives (with ``inputTokens``)."""


def _stated_workload(section: dict[str, Any], mode: TopologyMode | None, p: Problems) -> tuple[int, float] | None:
    """``(outputTokens, requestsPerSecond)`` where both are given on a disaggregated topology; problems where one is
    given alone or the mode has no roles to weigh."""
    given = {k: section[k] for k in WORKLOAD_KEYS if is_given(section.get(k))}
    if not given:
        return None
    if mode != TopologyMode.DISAGGREGATED:
        for key, value in given.items():
            p.add(f"{T}.{key}", "applies to mode disaggregated (the advisory prefill:decode ratio)", value,
                  "unset, or mode: disaggregated")
        return None
    if len(given) == 1:
        (key,) = set(WORKLOAD_KEYS) - set(given)
        p.add(f"{T}.{key}", f"is needed with {T}.{next(iter(given))}: a workload is its request rate and its output "
              "length", None, "a positive number")
        return None
    return int(given["outputTokens"]), float(given["requestsPerSecond"])


def _advice(ctx: TopologyContext, roles: tuple[sz.RoleSizing, ...], transfer: sz.KvTransfer,
            stated: tuple[int, float], warnings: list[str]) -> sz.WorkloadAdvice:
    """The advisory ratio of the stated workload (at the transfer's input length), and a warning where it needs more
    groups of a role than planned."""
    output_tokens, rps = stated
    input_tokens = transfer.input_tokens
    by = {r.name: r for r in roles}
    seqs = next(int(f[1]) for f in VLLM_ROLE_RECIPES[RoleName.DECODE].flags if f[0] == "--max-num-seqs")
    context = sz.kv_transfer(ctx.accelerator, transfer.transport, input_tokens + output_tokens)
    advice = sz.workload_advice(ctx.model, ctx.accelerator, by[RoleName.PREFILL], by[RoleName.DECODE], context,
                                output_tokens, rps, seqs)
    short = [r for r in (advice.prefill, advice.decode) if r.groups_needed > r.groups_planned]
    if short:
        warnings.append(f"topology: the stated workload ({rps:g} requests/s, {input_tokens:,} tokens in, "
                        f"{output_tokens:,} out) needs prefill:decode groups {advice.ratio}; the stack plans "
                        f"{advice.prefill.groups_planned}:{advice.decode.groups_planned} (advisory, ESTIMATE "
                        "efficiencies: the plan's topology.workload)")
    return advice


def _platform_and_engine(v: dict[str, Any], ctx: TopologyContext, mode: TopologyMode, p: Problems,
                         warnings: list[str]) -> None:
    """The engine can run the mode; the mode's neighbours (autoscaling, workload) are compatible."""
    if mode == TopologyMode.DISAGGREGATED and ctx.engine.name not in DISAGGREGATION_ENGINES:
        p.add(K + "engine", f"k3infra builds disaggregated serving with {', '.join(DISAGGREGATION_ENGINES)} only",
              str(ctx.engine.name), ", ".join(DISAGGREGATION_ENGINES))
    if _older(ctx.engine_version, ctx.engine.release):
        p.add(K + "engineVersion", f"topology {mode} is validated against {ctx.engine.name} {ctx.engine.release} "
              "(tests/engines run its parser on every role's line); older releases lack flags it passes",
              ctx.engine_version, f"{ctx.engine.release} or later")
    scaling = v["autoscaling"] if isinstance(v["autoscaling"], dict) else {}
    if scaling.get("enabled") and mode == TopologyMode.WIDE_EP:
        p.add(K + "autoscaling.enabled", f"scales aggregated replicas; topology {mode}'s DEP groups are not scaled "
              "by k3infra yet (per-role scalers are disaggregated's: autoscaling.roles)", True, "false")
    if str(v["workload"]) == "statefulset" or (str(v["workload"]) == "deployment" and mode != TopologyMode.WIDE_EP):
        p.add(K + "workload", f"topology {mode} runs one LeaderWorkerSet per role", str(v["workload"]),
              "leaderworkerset (or unset)")
    if mode == TopologyMode.DISAGGREGATED and v["speculativeDecoding"] == "dspark":
        p.add(K + "speculativeDecoding", "is not validated with disaggregated roles", "dspark", "none")
    endpoint = v["endpoint"] if isinstance(v["endpoint"], dict) else {}
    if mode != TopologyMode.DISAGGREGATED or endpoint.get("gateway"):
        return
    p.add(K + "endpoint.gateway", "routes each request to a prefill and a decode endpoint (llm-d's endpoint picker, "
          "its P/D profile handler and the decode pods' routing sidecar): a disaggregated topology needs it (every "
          "Kubernetes platform has one: GKE's, an existing cluster's declared class, or agentgateway, which k3infra "
          "installs elsewhere)",
          endpoint.get("gateway"), "true")


def _older(version: str, than: str) -> bool:
    def parts(s: str) -> tuple[int, ...]:
        return tuple(int(x) for x in s.split(".")[:3] if x.isdigit())
    return bool(version) and parts(version) < parts(than)


@dataclass(frozen=True)
class _Role:
    """A role as configured: groups, nodes per group, parallelism, all-to-all backend (None: the default)."""

    groups: int
    nodes: int
    parallelism: Parallelism
    all2all: All2AllBackend | None


def _roles(v: dict[str, Any], ctx: TopologyContext, mode: TopologyMode, sizing: sz.Sizing | None,
           p: Problems) -> list[tuple[str, _Role]]:
    """The roles as configured (wide-ep: one, from the stack's nodes and replicas)."""
    section = _section(v)
    if mode == TopologyMode.WIDE_EP:
        if sizing is None:
            return []
        return [("wide-ep", _Role(sizing.replicas, sizing.nodes, Parallelism.DEP, section.get("all2allBackend")))]
    out = []
    for name in RoleName:
        raw = section.get(str(name)) or {}
        given = raw.get("parallelism")
        par: Parallelism = given if isinstance(given, Parallelism) else ROLE_DEFAULTS[name]
        if not isinstance(raw.get("nodes"), int):
            fewest = _fewest_nodes(par, ctx)
            p.add(f"{T}.{name}.nodes", "is required in a disaggregated topology", raw.get("nodes"),
                  f"nodes per {name} group, 1 to {MAX_ROLE_NODES}" + (f"; the fewest {ctx.accelerator.sku} nodes a {par} group of "
                                                         f"{ctx.engine.name} holds the model on: {fewest}" if fewest else ""))
            continue
        out.append((str(name), _Role(int(raw.get("groups") or 1), raw["nodes"], par, raw.get("all2allBackend"))))
    return out


def _fewest_nodes(par: Parallelism, ctx: TopologyContext) -> int | None:
    """The fewest nodes of a group of ``par`` that pass the checks ``_role_sizing`` makes (its fit, DEP's 16 GPUs,
    SGLang's even expert sharding, a valid aggregated layout), as the hint of a role given no nodes or too few; None:
    none does."""
    a = ctx.accelerator
    first = sz.smallest_role_nodes(ctx.model, a, par, ctx.memory_fraction, MAX_ROLE_NODES)  # the fit alone
    for nodes in range(first or MAX_ROLE_NODES + 1, MAX_ROLE_NODES + 1):
        gpus = nodes * a.gpus_per_node
        if (par == Parallelism.DEP and gpus < DEP_MIN_GPUS) or (ctx.engine.name == EngineName.SGLANG
                                                                and ctx.model.experts % gpus):
            continue
        if not sz.role_fit(ctx.model, a, par, gpus, ctx.memory_fraction).fits:
            continue
        scratch = Problems()
        if ctx.size_group({"nodes": nodes, "replicas": 1}, scratch, nodes) is not None and not scratch:
            return nodes
    return None


def _key(role: str, field: str) -> str:
    """The key of a role's field: ``topology.<role>.<field>``; a wide-EP group's are the stack's own (``nodes``,
    ``replicas``) and ``topology.all2allBackend``."""
    if role != "wide-ep":
        return f"{T}.{role}.{field}"
    return f"{T}.{field}" if field == "all2allBackend" else K + {"groups": "replicas"}.get(field, field)


def _role_sizing(name: str, role: _Role, ctx: TopologyContext, p: Problems, readers: int) -> sz.RoleSizing | None:
    """One role's sizing, or None after its problems; ``readers``: the GPU nodes of every role, which share the
    bucket's egress while they load."""
    a = ctx.accelerator
    gpus = role.nodes * a.gpus_per_node
    fit = sz.role_fit(ctx.model, a, role.parallelism, gpus, ctx.memory_fraction)
    bad = len(p.items)
    if role.parallelism == Parallelism.DEP and gpus < DEP_MIN_GPUS:
        p.add(_key(name, "nodes"), f"a DEP group needs {DEP_MIN_GPUS} GPUs or more (vllm-project/recipes Kimi-K3.yaml "
              f"strategy_min_gpus.multi_node_dep); {role.nodes} x {a.gpus_per_node} = {gpus}", role.nodes,
              f"at least {-(-DEP_MIN_GPUS // a.gpus_per_node)}")
    elif not fit.fits:
        _does_not_fit(name, role, fit, ctx, p)
    if role.parallelism == Parallelism.TEP and gpus > a.nvlink_domain_gpus and a.fabric.pods_lack_it:
        p.add(_key(name, "nodes"), f"tensor parallelism over {gpus} GPUs leaves the {a.nvlink_domain_gpus}-GPU NVLink "
              f"domain, and the pods reach other nodes over {a.fabric.carrier}: every layer's all-reduce would cross "
              "it (the aggregated layout splits such nodes by pipeline stages instead)", role.nodes,
              f"at most {max(1, a.nvlink_domain_gpus // a.gpus_per_node)} node(s) per TEP group")
    if ctx.engine.name == EngineName.SGLANG and ctx.model.experts % gpus:
        fits = [n for n in range(role.nodes + 1, MAX_ROLE_NODES + 1)
                if ctx.model.experts % (n * a.gpus_per_node) == 0][:1]
        p.add(_key(name, "nodes"), f"SGLang shards the {ctx.model.experts} routed experts evenly over the group's "
              f"{gpus} GPUs ({role.nodes} x {a.gpus_per_node}) and refuses a remainder ({SGLANG_EP_DIVIDES_EXPERTS})",
              role.nodes, f"a node count whose GPUs divide {ctx.model.experts}"
              + (f", e.g. {fits[0]}" if fits else ""))
    all2all = _all2all(name, role, gpus, a, p) if role.parallelism == Parallelism.DEP else None
    if len(p.items) > bad:
        return None
    scratch = Problems()
    group = ctx.size_group({"nodes": role.nodes, "replicas": role.groups}, scratch, readers)
    for problem in scratch.items:
        p.add(_key(name, "groups" if problem.key.endswith("replicas") else "nodes"), problem.reason, problem.given,
              problem.allowed)
    if group is None or scratch:
        return None
    dep = role.parallelism == Parallelism.DEP
    return sz.RoleSizing(name=name, parallelism=role.parallelism, groups=role.groups, nodes=role.nodes,
                         gpus_per_group=gpus, tensor_parallel=1 if dep else gpus, data_parallel=gpus if dep else 1,
                         expert_parallel=gpus, fit=fit, all2all=all2all, carrier=sz.group_carrier(a, gpus),
                         load_seconds=group.load.seconds, load_bytes_per_node=group.load.bytes_per_node,
                         probe_budget_seconds=group.probe_budget_seconds,
                         restart_seconds=group.cold_start.restart_seconds, cold_start=group.cold_start,
                         node_start=group.node_start)


def _does_not_fit(name: str, role: _Role, fit: sz.Fit, ctx: TopologyContext, p: Problems) -> None:
    """A group too small for the model: the arithmetic, and the fewest nodes that fit, or why none does."""
    a, dep = ctx.accelerator, role.parallelism == Parallelism.DEP
    fewest = _fewest_nodes(role.parallelism, ctx)
    if fewest is not None:
        allowed = f"at least {fewest} nodes per {role.parallelism} group"
    elif dep:
        allowed = (f"none of {a.gpu_model}: every GPU of a DEP group holds the {REPLICATED_WEIGHT_GB:g} GB outside the "
                   f"experts (ESTIMATE) and {ctx.model.runtime_overhead_gb_per_gpu:g} GB runtime, more than its "
                   f"{a.gpu_memory_gb * ctx.memory_fraction:,.1f} GB usable, whatever the group's size: "
                   + ("topology.mode aggregated" if name == "wide-ep" else f"topology.{name}.parallelism tep")
                   + ", or GPUs with more memory")
    else:
        allowed = f"none up to {MAX_ROLE_NODES} nodes"
    p.add(_key(name, "nodes"), f"a {role.parallelism} group of {fit.gpus} x {a.gpu_model} holds {fit.usable_gb:,.0f} GB "
          f"usable; its weights take {fit.weights_gb:,.0f} GB"
          + (" (DEP replicates the weights outside the experts on every GPU)" if dep else "")
          + f" + {fit.overhead_gb:,.0f} GB runtime, leaving {fit.kv_headroom_gb:,.0f} GB for the KV cache, under "
          f"{fit.min_kv_cache_gb:g} GB", role.nodes, allowed)


def _all2all(name: str, role: _Role, gpus: int, a: Accelerator, p: Problems) -> All2AllBackend | None:
    """A DEP group's all-to-all backend: the one given, if the interconnect carries it, else the recipe's choice."""
    chosen = role.all2all or default_all2all(a, gpus)
    facts = fabric_facts(a.fabric)
    if chosen in DEEPEP_BACKENDS and gpus > a.nvlink_domain_gpus and not facts.all_to_all_rdma:
        p.add(_key(name, "all2allBackend"), f"DeepEP needs all-to-all RDMA between every NIC of every node (llm-d "
              f"guides/wide-ep-lws: rail-only connectivity fails); {a.sku}'s pods reach other nodes over "
              f"{a.fabric.carrier}: {facts.source}", str(chosen),
              ", ".join(sorted(str(b) for b in All2AllBackend if b not in DEEPEP_BACKENDS and
                               (b not in NVLINK_BACKENDS or gpus <= a.nvlink_domain_gpus))))
    if chosen in NVLINK_BACKENDS and gpus > a.nvlink_domain_gpus:
        p.add(_key(name, "all2allBackend"), f"{chosen} needs the whole group in one NVLink domain; a group of {gpus} GPUs "
              f"spans {-(-gpus // a.nvlink_domain_gpus)} domains of {a.nvlink_domain_gpus} ({a.sku})", str(chosen),
              f"a group of at most {a.nvlink_domain_gpus // a.gpus_per_node} node(s), or another backend")
    return chosen


def _transport(section: dict[str, Any], ctx: TopologyContext, p: Problems) -> KvTransport | None:
    """The KV transport: the one given if the platform's fabric has it, else the fabric's own."""
    facts = fabric_facts(ctx.accelerator.fabric)
    given = section.get("kvTransport")
    if not isinstance(given, KvTransport) or given == facts.kv_transport:
        return facts.kv_transport
    if given != KvTransport.TCP:
        fabrics = sorted(n for n, f in FABRICS.items() if f.kv_transport == given)
        p.add(f"{T}.kvTransport", f"{ctx.accelerator.sku}'s pods reach other nodes over {ctx.accelerator.fabric.carrier}, "
              f"which carries NIXL over {facts.kv_transport} ({facts.source}); {given} runs on {', '.join(fabrics)}",
              str(given), f"{facts.kv_transport} or tcp")
        return None
    return given


def _fits_one_pool(a: Accelerator, roles: tuple[sz.RoleSizing, ...], p: Problems) -> None:
    """Every role's groups fit one pool of the SKU (an NVL72 rack's NVLink domain where the SKU has one)."""
    total = sum(r.total_nodes for r in roles)
    if a.max_nodes_per_pool is not None and total > a.max_nodes_per_pool:
        p.add(f"{T}.decode.groups", f"the roles need {total} nodes, more than one {a.sku} pool holds (one NVL72 "
              "rack, 002 §2.3 and §5.2)", total, f"at most {a.max_nodes_per_pool} nodes in all")
