"""A deployment's clean leaves the shared cluster as it found it, whatever the controllers do meanwhile, and the next
deployment starts whatever an earlier one left.

Both once failed CI on a loaded 2-core machine: a pod whose Job-tracking finalizer the Job controller had not yet
removed held ``kubectl delete pods --force`` (which waits for the pods to be gone) past its 90 s timeout, the clean
stopped before the nodes, and the next class's ``kubectl create`` of ``sync-0`` failed on ``already exists``.
"""

import json
import time

from .deploy import CLEAN_SECONDS, Deployment
from .fixtures import cluster  # noqa: F401 (the fixture)
from .local import LocalCluster

STACK = "aws-eks"
HOLD = "k3infra.io/test-hold"


def left_behind(cluster: LocalCluster, dep: Deployment) -> list[str]:  # noqa: F811 (the fixture's name)
    """The deployment's namespaces and profile objects still on the cluster."""
    live = dep.live_many([*dep.profile.objects,
                          *({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": n}}
                            for n in dep.created_namespaces())])
    return sorted(live)


def test_a_pod_only_a_controller_would_release_does_not_hold_the_clean(cluster: LocalCluster) -> None:  # noqa: F811
    dep = Deployment(cluster, STACK).deploy(settle=False)
    namespace = dep.find("Deployment", "k3-server")["metadata"]["namespace"]
    held = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "held", "namespace": namespace,
                                                            "finalizers": [HOLD]},
            "spec": {"containers": [{"name": "c", "image": "busybox"}]}}
    cluster.kubectl("create", "-f", "-", input=json.dumps(held))
    start = time.monotonic()
    dep.clean()
    assert time.monotonic() - start < CLEAN_SECONDS
    assert left_behind(cluster, dep) == []


def test_a_deployment_starts_over_what_an_earlier_one_left(cluster: LocalCluster) -> None:  # noqa: F811
    earlier = Deployment(cluster, STACK).deploy(settle=False)
    later = Deployment(cluster, STACK)
    try:
        later.deploy(settle=False)
        assert later.apply_errors == {}
    finally:
        later.clean()
    assert left_behind(cluster, earlier) == []
