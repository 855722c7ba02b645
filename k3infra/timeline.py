"""The cold start as a picture: each phase a bar on one time axis, the critical path marked.

A column of seconds hides what overlaps and what waits; bars on one axis show it. Rendered as Rich markup for
``k3infra plan``: critical phases in bold red with ``*``, the others dim.
"""

from rich.markup import escape

from .formatting import duration
from .sizing import COLD_START_TARGET_SECONDS, RESTART_TARGET_SECONDS, ColdStart

WIDTH = 60
"""Characters of the time axis."""
NAME_WIDTH = 22
"""Characters of the phase names' column (a role's own phase: "* fabric check prefill")."""


def _cells(seconds: int, total: int) -> int:
    return round(seconds * WIDTH / total) if total else 0


def render(cs: ColdStart) -> str:
    """The timeline of ``cs``: an axis in minutes, a bar per phase, the total against the targets."""
    total = max(cs.total_seconds, 1)
    lines = ["[bold]cold start timeline[/bold] (* on the critical path)"]
    for p in cs.phases:
        start, cells = _cells(p.start_seconds, total), max(1, _cells(p.seconds, total))
        bar = " " * start + ("█" if p.critical else "░") * cells
        label = f"{'*' if p.critical else ' '} {p.name:<{NAME_WIDTH - 2}}"
        style = "bold red" if p.critical else "dim"
        lines.append(f"{escape(label)}|[{style}]{bar:<{WIDTH}}[/{style}]| {duration(p.seconds)}")
    marks = [0, total // 2, total]
    axis = "".join(f"{duration(m) if m else '0':<{WIDTH // 2}}" for m in marks[:2])
    lines.append(f"{'':<{NAME_WIDTH}} {axis}{duration(marks[2])}")
    verdict = (f"within {COLD_START_TARGET_SECONDS // 60} min" if cs.above_target is None
               else f"above {COLD_START_TARGET_SECONDS // 60} min: {cs.above_target}")
    lines.append(f"cold start {duration(cs.total_seconds)} ({verdict}); restart {duration(cs.restart_seconds)} "
                 + (f"(within {RESTART_TARGET_SECONDS // 60} min)" if cs.restart_seconds <= RESTART_TARGET_SECONDS
                    else f"(above {RESTART_TARGET_SECONDS // 60} min: {cs.restart_above_target})"))
    return "\n".join(lines)


__all__ = ["render"]
