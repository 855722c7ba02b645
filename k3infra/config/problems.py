"""Configuration problems, reported all at once."""

from dataclasses import dataclass
from typing import Any, Iterable

import pulumi


def show(value: Any) -> str:
    """A value as the user wrote it in YAML, for messages."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return repr(value) if value else "''"
    if value is None:
        return "nothing"
    return repr(value)


@dataclass(frozen=True, order=True)
class Problem:
    """One thing wrong with a stack's configuration."""

    key: str
    """Full key with a property path, e.g. ``k3infra:capacity.subBlock``."""
    reason: str
    given: str
    """The value given, as the user wrote it (``nothing`` when missing)."""
    allowed: str
    """What would be accepted."""

    def __str__(self) -> str:
        return f"{self.key}: {self.reason} (given: {self.given}; allowed: {self.allowed})"


class ConfigError(pulumi.RunError):
    """The configuration is wrong. Lists every problem; raised before any resource is registered.

    Subclasses ``pulumi.RunError`` so that ``pulumi up`` prints the message without a traceback.
    """

    def __init__(self, problems: Iterable[Problem], source: str = "the stack configuration") -> None:
        self.problems: tuple[Problem, ...] = tuple(sorted(set(problems)))
        self.source = source
        super().__init__(self.render())

    def render(self) -> str:
        """The message: a heading and one line per problem."""
        n = len(self.problems)
        head = f"{source_heading(self.source)} has {n} configuration problem{'s' if n != 1 else ''}:"
        return "\n".join([head, *(f"  - {p}" for p in self.problems)])


def source_heading(source: str) -> str:
    """Capitalise a source description for the start of a sentence."""
    return source[:1].upper() + source[1:]


class Problems:
    """Collects problems while a configuration is read."""

    def __init__(self) -> None:
        self.items: list[Problem] = []
        self.before_up: list[Problem] = []
        """Values a real run needs that a stack file need not carry (secrets, the deployer's own address): problems
        for ``pulumi up`` and preview, before any resource is registered; warnings in the offline plan."""

    def add(self, key: str, reason: str, given: Any, allowed: str) -> None:
        """Record a problem; ``given`` is the raw value (shown as the user wrote it)."""
        self.items.append(Problem(key=key, reason=reason, given=show(given), allowed=allowed))

    def add_before_up(self, key: str, reason: str, given: Any, allowed: str) -> None:
        """Record a value that must be set before a real run (see ``before_up``)."""
        self.before_up.append(Problem(key=key, reason=reason, given=show(given), allowed=allowed))

    def __bool__(self) -> bool:
        return bool(self.items)

    def keys(self) -> set[str]:
        """Keys that already have a problem (later checks skip them to avoid repeating one cause)."""
        return {p.key for p in self.items}


def before_up_warning(problem: Problem) -> str:
    """How the offline plan states a value a real run will need."""
    return f"{problem.key} {problem.reason}: `pulumi up` stops until it is set ({problem.allowed})"
