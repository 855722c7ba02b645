"""Every stack's offline plan time against the developers' guide's limit: `k3infra plan STACK` under 1.5 s.

Each stack is planned the way a user or CI runs it, ``python -m k3infra plan STACK`` in a fresh process, in both
formats (the table, the default, and ``--format json``): once untimed, then three times; the median counts. The
timed runs are warm: scripts/test compiles the bytecode of the provider modules the stacks import, and the untimed
run writes k3infra's own (PYTHONDONTWRITEBYTECODE is unset for the runs; without bytecode every run compiles
k3infra's 1.4 MB of source, up to 0.2 s). CPU seconds (the child's user + system time) are printed beside the wall
seconds: on a loaded machine the wall time grows and the CPU time much less. So is the load average, before and
after. Exits 1 when a median is over the limit.

Beside each plan, measured the same way in the same run: its floor, a fresh process that only imports the modules
other than k3infra's that the plan executes (the interpreter, the standard library, the command-line libraries,
the Pulumi SDK and the provider SDKs; read from the plan's ``-X importtime`` log), and the run, the table plan's
median less that floor: k3infra's modules and the program under the recording engine. Most of a plan, floor and
run alike, is the Pulumi SDK's own work (cProfile of a whole gcp-a4xmax plan: ``typing`` 2.0 s of 5.1 profiled seconds, evaluating the SDK
classes' annotations and the type hints of each output type; the ``pulumi`` package 0.7 s, Outputs and the event
loop; the functions in k3infra's own files under 0.05 s). The floor process loads the SDKs' service packages as
the command does (it imports k3infra.sdk_imports, one small module, for that: only the resource modules used, but
each package's ``_inputs`` and ``outputs`` whole, whose classes' annotations Python 3.11 evaluates at import, about
half their cost), so it is what the ``k3infra`` command pays for those SDK modules on this machine before it does
anything; a program under ``pulumi up`` imports the packages whole, every star import included. Last, the eager
column: the same table plan with the SDK packages imported whole (the command without k3infra.sdk_imports), its
output checked equal to the command's.

    python benchmarks/plan_time.py [STACK...]
"""

import json
import os
import re
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from k3infra import planning  # noqa: E402

LIMIT_SECONDS = 1.5
RUNS = 3
FORMATS = ("table", "json")


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


# The command as it runs, but with the provider SDKs' packages imported whole (k3infra.sdk_imports not installed).
_EAGER = ("import sys\nfrom k3infra import sdk_imports\nsdk_imports.install = lambda: None\n"
          "from k3infra.cli import main\nmain()")


def run_plan(stack: str, fmt: str, eager: bool = False) -> tuple[float, float, bytes]:
    """One ``k3infra plan`` in a fresh process (``eager``: its SDK packages imported whole): (wall seconds, CPU
    seconds, stdout)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    command = ["-c", _EAGER] if eager else ["-m", "k3infra"]
    cpu, start = _children_cpu(), time.perf_counter()
    out = subprocess.run([sys.executable, *command, "plan", stack, "--format", fmt], cwd=ROOT, env=env,
                         capture_output=True, check=True).stdout
    return time.perf_counter() - start, _children_cpu() - cpu, out


_FLOOR = ("import gc, importlib, os, sys\ngc.disable()\nfrom k3infra import sdk_imports\nsdk_imports.install()\n"
          "for name in sys.argv[1:]:\n"
          "    try:\n        importlib.import_module(name).__dict__\n    except Exception:\n        pass\nos._exit(0)")
_STARTUP = re.compile(r"^(k3infra|__main__|site|sitecustomize|_distutils_hack|__editable__.*)$")


def plan_modules(stack: str) -> list[str]:
    """The modules other than k3infra's that one plan of STACK executes, in the order their imports finished."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    err = subprocess.run([sys.executable, "-X", "importtime", "-m", "k3infra", "plan", stack], cwd=ROOT, env=env,
                         capture_output=True, check=True).stderr.decode()
    names = re.findall(r"^import time:\s+\d+ \|\s+\d+ \|\s*(\S+)$", err, re.M)
    return [n for n in names if not _STARTUP.match(n.split(".")[0])]


def floor(modules: list[str]) -> float:
    """Median wall seconds of RUNS fresh processes that import MODULES and nothing else (after one untimed)."""
    def once() -> float:
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", _FLOOR, *modules], cwd="/", check=True)
        return time.perf_counter() - start
    once()
    return statistics.median(once() for _ in range(RUNS))


def measure(stack: str, fmt: str, eager: bool = False) -> tuple[float, float, bytes]:
    """Median wall and CPU seconds of RUNS warm plans, and the last plan's output."""
    run_plan(stack, fmt, eager)
    runs = [run_plan(stack, fmt, eager) for _ in range(RUNS)]
    return statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs), runs[-1][2]


def main() -> int:
    stacks = sys.argv[1:] or planning.stack_names(ROOT)
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs; median of {RUNS} warm runs, "
          f"limit {LIMIT_SECONDS:g} s")
    print(f"{'stack':<24} {'resources':>9}" + "".join(f" {f + ' s':>9} {'(cpu)':>6}" for f in FORMATS)
          + f" {'floor s':>8} {'run s':>9} {'eager s':>8}")
    over = []
    for stack in stacks:
        cells, resources, walls, out_of = "", 0, {}, {}
        for fmt in FORMATS:
            wall, cpu, out = measure(stack, fmt)
            walls[fmt], out_of[fmt] = wall, out
            if fmt == "json":
                resources = len(json.loads(out)["resources"])
            if wall >= LIMIT_SECONDS:
                over.append(f"{stack} ({fmt}) {wall:.2f} s")
            cells += f" {wall:>9.2f} {cpu:>6.2f}"
        base = floor(plan_modules(stack))
        eager, _, eager_out = measure(stack, "table", eager=True)
        if eager_out != out_of["table"]:
            raise SystemExit(f"{stack}: the plan with the SDK packages imported whole differs")
        print(f"{stack:<24} {resources:>9}{cells} {base:>8.2f} {walls['table'] - base:>9.2f} {eager:>8.2f}",
              flush=True)
    print(f"load average {os.getloadavg()[0]:.1f}")
    print(f"over {LIMIT_SECONDS:g} s: {', '.join(over)}" if over else f"every plan under {LIMIT_SECONDS:g} s")
    return 1 if over else 0


if __name__ == "__main__":
    raise SystemExit(main())
