"""tests/e2e/stuck_pods.py's watch against the scheduler's own verdict: a pod no node can take is named with the
scheduler's reason, once the grace has passed."""

import json
import time

from tests.e2e.cluster_objects import cpu_nodes
from tests.e2e.stuck_pods import StuckPods

from .fixtures import cluster  # noqa: F401 (the fixture)
from .local import LocalCluster

NAMESPACE = "stuck-pods-watch"


def test_an_unschedulable_pod_is_named_with_the_schedulers_reason(cluster: LocalCluster) -> None:
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "stuck", "namespace": NAMESPACE},
           "spec": {"nodeSelector": {"k3infra.dev/planted": "no-node-has-this"},
                    "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}]}}
    node = cpu_nodes(1)[0]
    node["metadata"]["name"] = "stuck-pods-watch-node"
    cluster.kubectl("create", "namespace", NAMESPACE)
    cluster.kubectl("apply", "--server-side", "-f", "-", input=json.dumps(node))
    try:
        # Until kwok reports the new node Ready, the node lifecycle controller taints it not-ready, and the scheduler's
        # verdict names that taint instead of the selector (seen in CI): the pod comes once the node is Ready, untainted.
        deadline = time.monotonic() + 60
        while True:
            live = json.loads(cluster.kubectl("get", "node", node["metadata"]["name"], "-o", "json").stdout)
            ready = any(c["type"] == "Ready" and c["status"] == "True" for c in live["status"].get("conditions", []))
            if ready and not live["spec"].get("taints"):
                break
            assert time.monotonic() < deadline, f"node not Ready and untainted after 60 s: {live['spec'].get('taints')}"
            time.sleep(0.5)
        cluster.kubectl("create", "-f", "-", input=json.dumps(pod))
        watch, found = StuckPods(cluster, NAMESPACE, grace=0.0), None
        deadline = time.monotonic() + 60
        while found is None and time.monotonic() < deadline:
            found = watch()
            time.sleep(1)
        assert found is not None and found.startswith(f"pod {NAMESPACE}/stuck cannot schedule: 0/"), found
        assert "didn't match Pod's node affinity/selector" in found
    finally:
        cluster.kubectl("delete", "namespace", NAMESPACE, "--wait=false", check=False)
        cluster.kubectl("delete", "node", node["metadata"]["name"], "--wait=false", check=False)
