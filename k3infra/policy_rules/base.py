"""What a rule sees (a resource, its properties, values unknown until apply) and what it returns."""

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Callable, Iterable, Mapping, Sequence



class _Unknown:
    """A value known only after ``pulumi up`` (a preview of a resource not yet created)."""

    def __repr__(self) -> str:
        return "(known after apply)"

    def __bool__(self) -> bool:
        return True  # it will be set: a rule that only needs a value to be present is satisfied


UNKNOWN = _Unknown()
"""Stands for a value unknown during preview (``policies/__main__.py`` replaces pulumi-policy's sentinels)."""


@dataclass(frozen=True)
class Resource:
    """One resource as a rule sees it."""

    type: str
    name: str
    urn: str
    props: Mapping[str, Any]
    """Inputs (resource validation) or outputs (stack validation), camelCase."""
    dependencies: tuple[str, ...] = ()
    """URNs this resource depends on (explicitly or through its inputs)."""


@dataclass(frozen=True)
class Violation:
    """A rule broken by a resource (or by the stack, when ``urn`` is None)."""

    policy: str
    message: str
    urn: str | None


class Enforcement(StrEnum):
    """What a violation does to ``pulumi preview`` / ``up`` (pulumi-policy's enforcement levels)."""

    MANDATORY = "mandatory"
    ADVISORY = "advisory"


Check = Callable[[Sequence[Resource], Mapping[str, Any]], Iterable[tuple[str, str | None]]]


@dataclass(frozen=True)
class Rule:
    """One policy: a name, what it enforces, and the check (over the whole stack)."""

    name: str
    description: str
    enforcement: Enforcement
    check: Check
    config_schema: Mapping[str, Any] = field(default_factory=dict)
    """JSON-schema properties of the policy's configuration (pulumi-policy ``PolicyConfigSchema``)."""


def get(props: Any, path: str, default: Any = None) -> Any:
    """``get(props, "nodeConfig.reservationAffinity.values")``: None-safe nested lookup."""
    cur = props
    for part in path.split("."):
        if isinstance(cur, Mapping) and part in cur:
            cur = cur[part]
        else:
            return default
    return default if cur is None else cur


def as_list(v: Any) -> list[Any]:
    return list(v) if isinstance(v, (list, tuple)) else []


def as_int(v: Any, default: int) -> int:
    try:
        return int(v)
    except (TypeError, ValueError):
        return default
