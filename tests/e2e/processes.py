"""Ending a Pulumi CLI run and everything it started.

The CLI starts each plugin (the Kubernetes provider, the policy pack's and the components' shims) in a process
group of its own (pulumi sdk/go/common/util/cmdutil ``RegisterProcessGroup``: ``Setpgid: true``), so killing the
CLI's group leaves its providers running, reparented to init: what the 900 s timeout of issue 41 left behind. Here
the CLI's descendants are read from /proc first, then every one of their groups and the processes themselves are
killed, and the kill is checked.
"""

import os
import signal
import time
from pathlib import Path


def _parents() -> dict[int, int]:
    out = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:  # gone meanwhile
            continue
        # pid (comm) state ppid ...: comm may hold spaces and parentheses, so split after its last ')'
        fields = text[text.rindex(")") + 2:].split()
        out[int(stat.parent.name)] = int(fields[1])
    return out


def descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (children, theirs, ...), now."""
    parents = _parents()
    found, frontier = [], [pid]
    while frontier:
        children = [p for p, pp in parents.items() if pp in frontier and p not in found]
        found += children
        frontier = children
    return found


def alive(pids: list[int]) -> list[int]:
    """Those of ``pids`` still running (a zombie counts as ended)."""
    out = []
    for pid in pids:
        try:
            state = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            continue
        if state[state.rindex(")") + 2] != "Z":
            out.append(pid)
    return out


def kill_tree(pid: int, *, wait: float = 10.0) -> list[int]:
    """SIGKILL ``pid``, its process group, every descendant and each descendant's group; the descendants (read before
    the kill, so that none escapes by being reparented) are waited for until ``wait`` seconds. Returns the ones still
    running then (none, normally)."""
    tree = descendants(pid)
    groups = set()
    for p in [pid, *tree]:
        try:
            groups.add(os.getpgid(p))
        except ProcessLookupError:
            pass
    for g in groups - {os.getpgrp()}:
        try:
            os.killpg(g, signal.SIGKILL)
        except ProcessLookupError:
            pass
    for p in [pid, *tree]:
        try:
            os.kill(p, signal.SIGKILL)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + wait
    while alive(tree) and time.monotonic() < deadline:
        time.sleep(0.1)
    return alive(tree)


def with_env(name: str, value: str) -> list[int]:
    """The running processes (of this user) whose environment has ``name=value``: what a workspace's CLI started
    carries its PULUMI_HOME."""
    want = f"{name}={value}".encode()
    out = []
    for environ in Path("/proc").glob("[0-9]*/environ"):
        try:
            if want in environ.read_bytes().split(b"\0"):
                out.append(int(environ.parent.name))
        except OSError:
            continue
    return alive(out)


__all__ = ["alive", "descendants", "kill_tree", "with_env"]
