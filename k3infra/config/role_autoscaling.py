"""``k3infra:autoscaling.roles``: a disaggregated topology's scalers, one per role on its own signal (issue 37 §6),
validated against the role's signals (catalog.autoscaling.ROLE_SIGNALS) and the shared GPU pool, every problem with
its key, the value given and what is allowed.

The pool holds every role's planned groups (``topology.<role>.groups``, ``Sizing.topology.total_nodes``), as an
aggregated stack's pool holds ``k3infra:replicas`` replicas: a role scales between ``minGroups`` and ``maxGroups``
groups, and its ``maxGroups`` must fit the pool with the other role's planned groups held, so both roles at their
maximum fit the pool together. An update surges a group only where the pool holds one beyond both maxima
(serving.rollout); otherwise it replaces one group at a time."""

from typing import Any

from ..catalog.autoscaling import DEFAULT_TARGETS, ROLE_SIGNALS, TARGET_RANGES, ScalingSignal
from ..catalog.topologies import Parallelism, RoleName
from ..sizing import RoleSizing, TopologySizing
from .model import RoleScaling
from .problems import Problems
from .schema import NAMESPACE, is_given

KEY = NAMESPACE + ":autoscaling."

AGGREGATED_KEYS = ("minReplicas", "maxReplicas", "signal", "target")
"""The aggregated scaler's keys, which a disaggregated topology's roles replace."""


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _roles(a: dict[str, Any]) -> dict[str, Any]:
    roles = a.get("roles")
    return roles if isinstance(roles, dict) else {}


def roles_given(a: dict[str, Any]) -> dict[str, dict[str, str]]:
    """What the block sets under ``autoscaling.roles``, by role (empty: nothing)."""
    roles = _roles(a)
    given = {name: {k: str(x) for k, x in r.items() if is_given(x)} for name, r in roles.items() if isinstance(r, dict)}
    return {name: r for name, r in given.items() if r}


def roles_placed(a: dict[str, Any], disaggregated: bool, p: Problems) -> set[str]:
    """``{"roles"}`` where the block sets ``autoscaling.roles`` (a problem unless the topology is disaggregated)."""
    given = roles_given(a)
    if given and not disaggregated:
        p.add(KEY + "roles", "applies to topology.mode disaggregated (a scaler per role)", given,
              "unset, or autoscaling.minReplicas, maxReplicas, signal and target")
    return {"roles"} if given else set()


def role_scalings(a: dict[str, Any], top: TopologySizing, p: Problems) -> tuple[RoleScaling, ...] | None:
    """Each role's scaler, prefill first; None after a problem."""
    before = len(p.items)
    for key in AGGREGATED_KEYS:
        if is_given(a.get(key)):
            p.add(KEY + key, "scales an aggregated stack's replicas; a disaggregated topology scales each role on its "
                  "own (autoscaling.roles.prefill, autoscaling.roles.decode)",
                  str(a[key]) if isinstance(a[key], ScalingSignal) else a[key], "unset")
    if a.get("scaleToZero") is True:
        p.add(KEY + "scaleToZero", "a disaggregated topology's role cannot go to zero: the other role's requests need "
              "it", True, "false")
    given = _roles(a)
    out = tuple(_role(r, given.get(r.name) or {}, top, p) for r in top.roles)
    return out if len(p.items) == before else None


def _role(role: RoleSizing, spec: dict[str, Any], top: TopologySizing, p: Problems) -> RoleScaling:
    """One role's scaler from ``autoscaling.roles.<role>``, its problems reported."""
    key = f"{KEY}roles.{role.name}."
    allowed = ROLE_SIGNALS[RoleName(role.name)]
    given_signal = spec.get("signal")
    signal: ScalingSignal = given_signal if isinstance(given_signal, ScalingSignal) else allowed[0]
    if signal not in allowed:
        p.add(key + "signal", f"is not a signal of the {role.name} role (catalog.autoscaling.ROLE_SIGNALS: what bounds "
              "it, read on its own pods)", str(signal), ", ".join(allowed))
    given_target = spec.get("target")
    target = float(given_target) if isinstance(given_target, (int, float)) and not isinstance(given_target, bool) \
        else float(DEFAULT_TARGETS[signal])
    lo, hi = TARGET_RANGES[signal]
    if not lo <= target <= hi:
        p.add(key + "target", f"is out of range for signal {signal}", target, f"{lo:g} to {hi:g}")
    low = _int(spec.get("minGroups")) or 1
    high = _int(spec.get("maxGroups")) or role.groups
    others = top.total_nodes - role.total_nodes
    if high > role.groups:
        p.add(key + "maxGroups", f"{high} group(s) of {role.nodes} node(s) need {high * role.nodes} nodes, and the "
              f"pool's {top.total_nodes} nodes hold {role.groups} beside the other role's {others} "
              f"(every role's topology.<role>.groups)", high,
              f"at most {role.groups}, or more topology.{role.name}.groups (the pool grows with them)")
    if low > high:
        p.add(key + "minGroups", f"is more than maxGroups ({high})", low, f"1 to {high}")
    return RoleScaling(role=role.name, min_groups=low, max_groups=high, nodes=role.nodes, signal=signal,
                       target=target, data_parallel=role.parallelism == Parallelism.DEP)
