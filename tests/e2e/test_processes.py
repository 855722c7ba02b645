"""``processes.kill_tree`` ends what a CLI started in process groups of its own (as Pulumi starts its plugins), which
killing the CLI's own group leaves running; and ``stuck_pods`` reads a pod's state as the watch needs it."""

import os
import signal
import subprocess
import time

from . import processes
from .stuck_pods import stuck_reason

# A parent that starts a child in a process group of its own (setsid: like the CLI's plugins, Setpgid), then waits.
TREE = "setsid sleep 300 & sleep 300"


def _start() -> tuple[subprocess.Popen[bytes], list[int]]:
    proc = subprocess.Popen(["sh", "-c", TREE], start_new_session=True)
    deadline = time.monotonic() + 10
    while len(found := processes.descendants(proc.pid)) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(found) == 2, found
    return proc, found


def test_killing_the_group_alone_leaves_a_child_in_its_own_group() -> None:
    proc, tree = _start()
    try:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        time.sleep(0.5)
        assert len(processes.alive(tree)) == 1  # the planted escape: what issue 41 saw left behind
    finally:
        for pid in processes.alive(tree):
            os.kill(pid, signal.SIGKILL)


def test_kill_tree_ends_every_descendant() -> None:
    proc, tree = _start()
    assert processes.kill_tree(proc.pid) == []
    proc.wait()
    assert processes.alive(tree) == []


def test_a_pod_is_stuck_when_unschedulable_or_its_container_cannot_start() -> None:
    unschedulable = {"status": {"phase": "Pending", "conditions": [
        {"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
         "message": "0/3 nodes are available: 1 node(s) had untolerated taint {a: b}."}]}}
    assert stuck_reason(unschedulable) == "cannot schedule: 0/3 nodes are available: 1 node(s) had untolerated taint {a: b}."
    pulling = {"status": {"phase": "Pending", "containerStatuses": [
        {"name": "engine", "state": {"waiting": {"reason": "ImagePullBackOff", "message": "Back-off pulling image x"}}}]}}
    assert stuck_reason(pulling) == "container engine cannot start: ImagePullBackOff: Back-off pulling image x"
    creating = {"status": {"phase": "Pending", "containerStatuses": [
        {"name": "engine", "state": {"waiting": {"reason": "ContainerCreating"}}}]}}
    assert stuck_reason(creating) is None
    assert stuck_reason({"status": {"phase": "Running"}}) is None
