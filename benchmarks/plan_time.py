"""Print the offline plan time of every stack.

Cold: `python -m k3infra plan STACK --format json` in a fresh process (imports, validation, the program under
the recording engine, JSON), the way a user or CI runs it. Warm: the same plan again in one process, best of
three. The target is under 3 s cold per stack on a 2-core machine.

    python benchmarks/plan_time.py [STACK...]
"""

import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from k3infra import planning  # noqa: E402

TARGET_SECONDS = 3.0


def cold(stack: str, runs: int = 3) -> tuple[float, int]:
    times = []
    size = 0
    for _ in range(runs):
        start = time.perf_counter()
        out = subprocess.run([sys.executable, "-m", "k3infra", "plan", stack, "--format", "json"], cwd=ROOT,
                             capture_output=True, check=True).stdout
        times.append(time.perf_counter() - start)
        size = len(out)
    return statistics.median(times), size


def warm(stack: str, runs: int = 3) -> tuple[float, int]:
    planning.plan(stack, root=ROOT)  # imports the cloud's SDK once
    best = float("inf")
    resources = 0
    for _ in range(runs):
        start = time.perf_counter()
        p = planning.plan(stack, root=ROOT)
        best = min(best, time.perf_counter() - start)
        resources = len(p.recording.resources)
    return best, resources


def main() -> int:
    stacks = sys.argv[1:] or planning.stack_names(ROOT)
    print(f"{'stack':<16} {'resources':>9} {'cold (median of 3)':>19} {'warm (best of 3)':>17} {'JSON bytes':>11}")
    worst = 0.0
    for stack in stacks:
        c, size = cold(stack)
        w, n = warm(stack)
        worst = max(worst, c)
        print(f"{stack:<16} {n:>9} {c:>18.2f}s {w:>16.2f}s {size:>11,}")
    print(f"\nslowest cold plan: {worst:.2f} s (target < {TARGET_SECONDS:.0f} s): {'OK' if worst < TARGET_SECONDS else 'OVER'}")
    return 0 if worst < TARGET_SECONDS else 1


if __name__ == "__main__":
    raise SystemExit(main())
