"""A report's lines and their states: what every reader of a cold start (the cluster's, HyperPod's operator, PAI-EAS,
the capacity window) produces and ``display`` prints.

States: ``ok`` (done), ``progress`` (under way, within budget), ``failed`` (the line says what and where to look);
and two that leave the verdict alone: ``warn`` (fine now, not for long: a capacity window about to end) and
``unknown`` (not readable from here, and why). The report's exit code is 0 serving, 1 failed, 3 in progress, and 2
when what says whether it serves could not be read at all.
"""

from dataclasses import dataclass, field
from typing import Any

OK, PROGRESS, FAILED = "ok", "progress", "failed"
WARN, UNKNOWN = "warn", "unknown"
"""States of a line that do not decide the report's: said, never failed on."""
EXIT_CODES = {OK: 0, FAILED: 1, UNKNOWN: 2, PROGRESS: 3}


@dataclass(frozen=True)
class Line:
    """One row: a section (nodes, weights, server, verify, endpoint), what it is about, its state and phase, the
    detail, how long the phase has lasted against its budget, and for a failure where to look."""

    section: str
    name: str
    state: str
    phase: str
    detail: str = ""
    phase_seconds: int | None = None
    budget_seconds: int | None = None
    look: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"section": self.section, "name": self.name, "state": self.state, "phase": self.phase,
                               "detail": self.detail}
        if self.phase_seconds is not None:
            out["phaseSeconds"] = self.phase_seconds
        if self.budget_seconds is not None:
            out["budgetSeconds"] = self.budget_seconds
        if self.look:
            out["look"] = self.look
        return out | self.extra


@dataclass(frozen=True)
class Report:
    """The stack's lines in cold-start order and the overall state."""

    stack: str
    namespace: str
    lines: tuple[Line, ...]

    @property
    def state(self) -> str:
        """failed, else progress, else unknown when a line past the capacity could not be read (nothing says the
        stack serves), else ok."""
        states = {line.state for line in self.lines}
        if FAILED in states or PROGRESS in states:
            return FAILED if FAILED in states else PROGRESS
        return UNKNOWN if any(ln.state == UNKNOWN and ln.section != "capacity" for ln in self.lines) else OK

    @property
    def exit_code(self) -> int:
        return EXIT_CODES[self.state]

    @property
    def summary(self) -> str:
        failed = [line for line in self.lines if line.state == FAILED]
        if failed:
            return "; ".join(f"{f.section} {f.name}: {f.phase} ({f.detail})" + (f"; look: {f.look}" if f.look else "")
                             for f in failed)
        warned = "".join(f"; warn: {w.section} {w.name}: {w.phase} ({w.detail})" for w in self.lines
                         if w.state == WARN)
        if self.state == OK:
            return "serving" + warned
        if self.state == UNKNOWN:
            return "not readable: " + "; ".join(f"{u.section} {u.name}: {u.detail}" for u in self.lines
                                                 if u.state == UNKNOWN and u.section != "capacity")
        waiting = next(line for line in self.lines if line.state == PROGRESS)
        return f"in progress: {waiting.section} {waiting.name} {waiting.phase}" + warned

    def to_json(self) -> dict[str, Any]:
        return {"stack": self.stack, "namespace": self.namespace, "state": self.state, "exitCode": self.exit_code,
                "summary": self.summary, "lines": [line.to_json() for line in self.lines]}
