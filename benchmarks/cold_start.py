"""Print every stack's cold start: its phases on one time axis, the critical path, the bottleneck and the total,
beside the anchors; then its restart beside the restart's physical floor (the ratio), and a new replica's start after
a scale-out beside its 5-minute goal (sizing.restart), each with the term that holds it above.

Anchors: ai-on-eks's Kimi K3 copy Job (catalog.transfer.AI_ON_EKS_COPY: 1.42 TB in 906 s), the sync's target for
the whole checkpoint; and the physical limit of the sync, the weights over the sync nodes' NICs at their stated
optimistic bandwidth (nothing copies faster through those nodes). Every figure is the plan's own (``k3infra plan``,
the pessimistic end of the stated figures); nothing here is measured.

    python benchmarks/cold_start.py [STACK...]
"""

import math
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from k3infra import planning  # noqa: E402
from k3infra.catalog.transfer import AI_ON_EKS_COPY  # noqa: E402
from k3infra.formatting import duration  # noqa: E402
from k3infra.sizing import (  # noqa: E402
    COLD_START_TARGET_SECONDS,
    RESTART_FLOOR_FACTOR,
    RESTART_TARGET_SECONDS,
    SCALE_OUT_TARGET_SECONDS,
    Sizing,
)


def nic_limit_seconds(s: Sizing) -> int | None:
    """The sync's bytes over its nodes' NICs at their optimistic end: no copy through them is faster."""
    if s.sync is None:
        return None
    return math.ceil(s.sync.total_bytes * 8 / (min(s.sync.workers, s.sync.nodes) * s.sync.node.nic.high * 1e9))


def report(stack: str) -> list[str]:
    """The lines of one stack."""
    s = planning.validate(planning.load(stack, root=ROOT)).sizing
    cs = s.cold_start
    lines = [f"{stack}: cold start {duration(cs.total_seconds)} ({cs.total_seconds} s), bottleneck {cs.bottleneck}, "
             f"restart {duration(cs.restart_seconds)} ({cs.restart_seconds} s)"]
    for p in cs.phases:
        lines.append(f"  {'*' if p.critical else ' '} {p.name:<15} {p.start_seconds:>6} s -> {p.end_seconds:>6} s "
                     f"({p.seconds} s)")
    lines.append("    critical path: " + " > ".join(p.name for p in cs.phases if p.critical))
    if s.sync is not None:
        limit = nic_limit_seconds(s)
        lines.append(f"    sync {s.sync.seconds} s ({s.sync.total_bytes / 1e12:.2f} TB, limited by {s.sync.limit}; "
                     f"ai-on-eks {AI_ON_EKS_COPY.seconds} s for {AI_ON_EKS_COPY.nbytes / 1e12:.2f} TB; over the "
                     f"nodes' NICs at best {limit} s): "
                     + ("within" if s.sync.seconds <= AI_ON_EKS_COPY.seconds else "above") + " the anchor")
    else:
        lines.append("    sync: not run by this stack (the bucket holds the weights already)")
    lines.append("    " + (f"within {COLD_START_TARGET_SECONDS // 60} min" if cs.above_target is None
                           else f"above {COLD_START_TARGET_SECONDS // 60} min: {cs.above_target}")
                 + f"; restart {'within' if cs.restart_seconds <= RESTART_TARGET_SECONDS else 'above'} "
                   f"{RESTART_TARGET_SECONDS // 60} min" + (f": {cs.restart_above_target}" if cs.restart_above_target
                                                           else ""))
    return lines + node_lines(s)


def node_lines(s: Sizing) -> list[str]:
    """The restart beside its floor and the scale-out beside its goal, and what holds each above."""
    ns = s.node_start
    if ns is None:
        return []
    where = f"weights on the node ({ns.node_dir})" if ns.local else f"weights from the bucket: {ns.why_not_local}"
    lines = [f"    restart {duration(ns.restart_seconds)} ({ns.restart_seconds} s) = "
             + " + ".join(f"{t.name} {t.seconds} s" for t in ns.restart),
             f"    floor {duration(ns.floor_seconds)} ({ns.floor_seconds} s) = "
             + " + ".join(f"{t.name} {t.seconds} s" for t in ns.floor)
             + f"; ratio {ns.ratio:g} ({'within' if ns.restart_holds is None else 'above'} {RESTART_FLOOR_FACTOR}x)",
             f"    scale-out {duration(ns.scale_out_seconds)} ({ns.scale_out_seconds} s) after the nodes are ready = "
             + " + ".join(f"{t.name} {t.seconds} s" for t in ns.scale_out)
             + f" ({'within' if ns.scale_out_holds is None else 'above'} {SCALE_OUT_TARGET_SECONDS // 60} min)",
             f"    {where}"]
    if ns.restart_holds:
        lines.append(f"    restart held by: {ns.restart_holds}")
    if ns.scale_out_holds:
        lines.append(f"    scale-out held by: {ns.scale_out_holds}")
    return lines


def summary(stacks: list[str]) -> list[str]:
    """One line per stack: restart, floor, ratio, scale-out, cold start."""
    out = [f"{'stack':<24} {'restart':>8} {'floor':>6} {'ratio':>6} {'scale-out':>9} {'cold start':>10}  weights"]
    for stack in stacks:
        s = planning.validate(planning.load(stack, root=ROOT)).sizing
        ns, cs = s.node_start, s.cold_start
        if ns is None:
            continue
        out.append(f"{stack:<24} {ns.restart_seconds:>7}s {ns.floor_seconds:>5}s {ns.ratio:>6g} "
                   f"{ns.scale_out_seconds:>8}s {cs.total_seconds:>9}s  {'node' if ns.local else 'bucket'}")
    return out


def main(argv: list[str]) -> None:
    stacks = argv or planning.stack_names(ROOT)
    for stack in stacks:
        print("\n".join(report(stack)))
    print("\n".join(summary(stacks)))


if __name__ == "__main__":
    main(sys.argv[1:])
