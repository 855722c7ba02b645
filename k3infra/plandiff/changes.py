"""What a diff is made of: the kind of each resource's change, its property changes, the whole diff."""

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any


class Kind(StrEnum):
    """What happens to a resource."""

    ADD = "add"
    REMOVE = "remove"
    REPLACE = "replace"
    CHANGE = "change"

class PlanFormatError(ValueError):
    """The input is not a ``k3infra plan --format json`` document."""


@dataclass(frozen=True)
class Change:
    """One property that differs."""

    path: str
    old: Any
    new: Any
    masked: bool = False
    """Both values are hidden (a secret changed)."""
    forces_replacement: bool = False


MISSING: Any = type("Missing", (), {"__repr__": lambda _self: "(absent)"})()
"""Marks a side where the property does not exist."""


@dataclass(frozen=True)
class ResourceDiff:
    """One resource that is added, removed, replaced or changed."""

    kind: Kind
    urn: str
    type: str
    name: str
    changes: tuple[Change, ...] = ()
    reason: str = ""
    """Why a replacement is a replacement."""
    base_urn: str | None = None
    """For a replacement detected by a changed URN: the URN it replaces."""


@dataclass
class PlanDiff:
    """Everything that differs between two plans."""

    base_stack: str
    head_stack: str
    resources: list[ResourceDiff] = field(default_factory=list)
    unchanged: int = 0
    outputs: list[Change] = field(default_factory=list)
    warnings_added: list[str] = field(default_factory=list)
    warnings_removed: list[str] = field(default_factory=list)
    deployment: list[Change] = field(default_factory=list)
    """The layout, parallel mode, nodes per replica, replicas or engine that change (``shape``): shown first."""

    @property
    def empty(self) -> bool:
        """True when nothing differs."""
        return not (self.resources or self.outputs or self.warnings_added or self.warnings_removed
                    or self.deployment)

    def count(self, kind: Kind) -> int:
        """How many resources are of ``kind``."""
        return sum(1 for r in self.resources if r.kind == kind)

    def summary(self) -> str:
        """``1 to add, 0 to remove, 0 to replace, 2 to change, 40 unchanged``."""
        return (f"{self.count(Kind.ADD)} to add, {self.count(Kind.REMOVE)} to remove, {self.count(Kind.REPLACE)} to "
                f"replace, {self.count(Kind.CHANGE)} to change, {self.unchanged} unchanged")

    def to_json(self) -> dict[str, Any]:
        """A machine-readable form (used by tests and scripts)."""
        def ch(c: Change) -> dict[str, Any]:
            return {"path": c.path, "old": _jsonable(c.old), "new": _jsonable(c.new), "masked": c.masked,
                    "forcesReplacement": c.forces_replacement}
        return {
            "baseStack": self.base_stack, "headStack": self.head_stack, "empty": self.empty,
            "deployment": [ch(c) for c in self.deployment],
            "resources": [{"kind": str(r.kind), "urn": r.urn, "type": r.type, "name": r.name, "reason": r.reason,
                           "baseUrn": r.base_urn, "changes": [ch(c) for c in r.changes]} for r in self.resources],
            "unchanged": self.unchanged, "outputs": [ch(c) for c in self.outputs],
            "warningsAdded": self.warnings_added, "warningsRemoved": self.warnings_removed,
        }


def _jsonable(v: Any) -> Any:
    return None if v is MISSING else v
