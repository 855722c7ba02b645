"""Workload rules checked in the configuration (before any resource), and the components' multi-language schema."""

import json

import pytest

from k3infra import planning
from k3infra.config import ConfigError
from tests.support import ROOT, STACKS, plan


@pytest.mark.parametrize("stack,sets,message", [
    ("aws-eks", ("workload=statefulset",), "a replica fits on one node"),
    ("aws-eks", ("workload=leaderworkerset",), "a replica fits on one node"),
    ("gcp-a4-sglang", ("workload=statefulset", "replicas=2"), "runs one replica"),
    ("azure-gb300", ("workload=deployment",), "a replica spans 2 nodes"),
])
def test_impossible_workloads_are_configuration_errors(stack: str, sets: tuple[str, ...], message: str) -> None:
    with pytest.raises(ConfigError) as e:
        planning.validate(planning.load(stack, sets, root=ROOT))
    assert any(p.key == "k3infra:workload" and message in p.reason for p in e.value.problems), e.value.render()


def test_a_statefulset_replica_is_said_to_restart_without_its_peers() -> None:
    """Issue 23 item 7: only the LeaderWorkerSet recreates a group when one of its ranks restarts."""
    from k3infra.config.layout import STATEFUL_SET_RESTART_WARNING

    stateful = plan("gcp-a4-sglang", "workload=statefulset")
    assert STATEFUL_SET_RESTART_WARNING in stateful.warnings
    assert not any("RecreateGroupOnPodRestart" in w for s in STACKS for w in plan(s).warnings)


def test_components_have_a_multi_language_schema() -> None:
    """The schema analyzer accepts the Args (no Literal, Callable, bare containers or provider Args classes)."""
    from pulumi.provider.experimental.component import ComponentProvider

    from k3infra import InferenceGateway, ModelServer, WeightSync
    schema = ComponentProvider([ModelServer, WeightSync, InferenceGateway], "k3infra", version="0.0.0").schema
    s = json.loads(schema) if isinstance(schema, str) else schema
    assert set(s["resources"]) == {"k3infra:index:ModelServer", "k3infra:index:WeightSync",
                                   "k3infra:index:InferenceGateway"}
    inputs = s["resources"]["k3infra:index:ModelServer"]["inputProperties"]
    assert {"pool", "store", "probeBudgetSeconds", "awaitTimeoutSeconds", "workload", "engine"} <= set(inputs)
    assert all(v.get("description") for v in inputs.values()), "every field documents its default"
    assert {"GpuPool", "WeightStore", "LoadBalancerSettings"} <= {t.split(":")[-1] for t in s["types"]}
